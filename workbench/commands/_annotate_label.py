"""``workbench annotate label``: one annotation label from the command line, as the Annotate
page records it: under the labeller's own name, checked against their role by the store
(``store.annotation.add_label``/``add_adjudication`` with the acting identity), the SKILL
version's queue created if needed, and a reviewer's (or admin's) label recorded as the
adjudication, as the page does.

Rule correctness: ``--skill S [--version V] --rule R --value correct|incorrect
[--error-type T]``. CDG inspection: ``--case-key RUN/CASE --criterion C --value pass|fail``
(the case key the Annotate page shows). Both take ``--annotator NAME [--role ROLE]``.

Not a command itself: registered by ``workbench.commands.annotate``.
"""

from __future__ import annotations

import argparse

from workbench.commands._acting import add_person
from workbench.commands._common import CliError, action

# workbench.annotation.labels.ERROR_TYPES / CRITERIA, spelled out so that building the
# parser imports nothing heavy; tests keep them equal.
ERROR_TYPES = ("not_atomic", "wrong_condition", "wrong_action", "wrong_modality",
               "span_unsupported", "hallucinated", "duplicate")
CRITERIA = ("skill_governs", "rules_atomic_applicable", "edges_necessary", "verdict_follows")


def register_label(sub: argparse._SubParsersAction, db_help: str) -> None:
    label = action(
        sub, "label", run_label,
        help="record one label (rule correctness or CDG inspection), as the Annotate page does",
        description="Label one extracted rule (correct, or incorrect with an error type) or "
        "one CDG inspection criterion of an audit case (pass or fail). The label is recorded "
        "under the --as person (or --annotator without a roster) and checked against their role "
        "by the store; a reviewer's or admin's "
        "label is the adjudication, as on the page.",
    )
    add_person(label, "--annotator", "annotator")
    label.add_argument("--skill", help="rule correctness: the stored SKILL")
    label.add_argument("--version", type=int, help="its version (default: the latest)")
    label.add_argument("--rule", help="rule correctness: the rule id")
    label.add_argument("--case-key", help="CDG inspection: the audit case's key (run/case)")
    label.add_argument("--criterion", choices=CRITERIA, help="CDG inspection: the criterion")
    label.add_argument("--value", required=True,
                       choices=("correct", "incorrect", "pass", "fail"),
                       help="correct | incorrect (rule correctness), pass | fail (inspection)")
    label.add_argument("--error-type", choices=ERROR_TYPES, help="why a rule is incorrect")
    label.add_argument("--note", default="", help="an optional note")
    label.add_argument("--db", help=db_help)


def _rule_item(engine, args) -> tuple[str, str]:
    from store import repo
    from store.annotation import add_task_items
    from workbench.annotation.items import rule_items
    from workbench.annotation.labels import RULE_CORRECTNESS
    from workbench.errors import WorkbenchError

    if not args.skill or not args.rule:
        raise CliError("rule correctness needs --skill and --rule",
                       "or pass --case-key and --criterion for a CDG inspection label")
    if args.skill not in repo.skill_names(engine):
        raise CliError(f"no SKILL {args.skill!r} in the store",
                       f"stored SKILLs: {', '.join(repo.skill_names(engine)) or '(none)'}")
    try:
        version = repo.get_version(engine, args.skill, args.version).version
        skill = repo.load_skill(engine, args.skill, version)
    except WorkbenchError as exc:  # repo.NotFound: that version is not stored
        raise CliError(f"{exc}", "leave out --version for the latest") from None
    items = {rid: key for key, rid in rule_items(skill).items()}
    if args.rule not in items:
        raise CliError(f"rule {args.rule!r} is not in {args.skill} v{version}",
                       f"its rules: {', '.join(list(items)[:20])}")
    # The queue of this version, as the page creates it on first visit.
    add_task_items(engine, RULE_CORRECTNESS, skill.name, version, list(rule_items(skill)))
    return RULE_CORRECTNESS, items[args.rule]


def run_label(args: argparse.Namespace) -> int:
    from store.annotation import add_adjudication, add_annotator, add_label
    from store.db import make_engine
    from workbench.annotation.labels import CDG_INSPECTION, Adjudication, Label, inspection_item
    from workbench.commands._acting import acting
    from workbench.identity.roles import ROLES, may, require

    engine = make_engine(args.db)
    name, actor = acting(args, engine, args.annotator)
    # A roster's reviewer or admin adjudicates; the single user (no roster) labels.
    reviewer = actor.role in ROLES and may(actor.role, "adjudicate")
    # The role first: a refused author or analyst neither queues items nor is registered.
    require(actor, "adjudicate" if reviewer else "label")
    if args.case_key or args.criterion:
        if not (args.case_key and args.criterion):
            raise CliError("a CDG inspection label needs --case-key and --criterion")
        if args.value not in ("pass", "fail"):
            raise CliError(f"a CDG inspection label is pass or fail, not {args.value!r}")
        task, item = CDG_INSPECTION, inspection_item(args.case_key, args.criterion)
    else:
        if args.value not in ("correct", "incorrect"):
            raise CliError(f"a rule correctness label is correct or incorrect, not {args.value!r}")
        task, item = _rule_item(engine, args)
    # The annotation store's view of the person, as the page registers them.
    add_annotator(engine, name, "reviewer" if reviewer else "annotator")
    error_type = args.error_type if args.value == "incorrect" else None
    if reviewer:
        record = add_adjudication(engine, Adjudication(item, task, name, args.value, error_type,
                                                       args.note), actor=actor)
        kind = "adjudication"
    else:
        record = add_label(engine, Label(item, task, name, args.value, error_type, args.note),
                           actor=actor)
        kind = "label"
    print(f"recorded {kind} #{record}: {name} says {args.value}"
          + (f" ({error_type})" if error_type else "") + f" on {item}")
    return 0
