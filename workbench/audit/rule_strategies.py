"""SkillCDG's own contexts: the ``cdg`` strategy and its ablations, built from rules.

``cdg`` takes seed rules, their transitive ``require`` closure, rendered; ``no-closure`` the
seed rules only; ``no-keywords`` every rule of the routed SKILLs (no seeding).

Seeding (``ContextOptions.seeding``): ``scored`` (default) ranks every rule of the routed
SKILLs for the whole case (history, state, reply, keywords; see ``rule_ranking.py``) and takes
seeds while their closure fits the seed target (``ContextOptions.effective_seed_target``);
``keywords`` is the original conjunctive keyword match capped at ``max_seeds`` (kept for
comparisons and for recorded runs).
"""

from __future__ import annotations

from workbench.audit.judge import ContextUnit
from workbench.audit.policy import AuditIndex
from workbench.audit.policy_context import ContextUnavailable, PolicyContext, check_budget
from workbench.audit.rule_ranking import case_query, choose_seeds
from workbench.audit.seeds import SeedResult, find_seeds
from workbench.graph.closure import BudgetExceeded, EmptySeed, closure_paths, select_closure
from workbench.graph.render import render_rule, render_rules
from workbench.llm.tokens import count_tokens
from workbench.vocabulary import EmptySeedPolicy, ErrorKind, Render, Seeding, StrategyName, values

# "error": no seed in any routed SKILL is an EmptySeed outcome; "all-rules": then judge every
# rule of every routed SKILL; "per-skill" (the first paper's EmptySeed per SKILL): each routed
# SKILL without a seed contributes all of its rules, and is reported in ``fallback``.
EMPTY_SEED_POLICIES = values(EmptySeedPolicy)
SEEDING_METHODS = values(Seeding)


def rule_units(
    index: AuditIndex, rules: dict[str, list[str]], style: str = "full"
) -> list[ContextUnit]:
    """Each rule of ``rules`` (SKILL -> ids) as a citable unit, rendered in ``style``."""
    return [ContextUnit(rid, render_rule(index.skill(name), rid, style), name,
                        tuple((sp.start, sp.end) for sp in index.skill(name).graph.rules[rid].spans))
            for name, ids in rules.items() for rid in ids]



def render_rule_sets(index: AuditIndex, rules: dict[str, list[str]], style: str = "full") -> str:
    """``rules`` (SKILL -> ids) as one text, a ``render_rules`` block per SKILL."""
    return "\n\n".join(
        part for name, ids in rules.items()
        if (part := render_rules(index.skill(name), ids, style))
    )



def _scored_seeds(case, keywords, skills, index: AuditIndex, options, close: bool):
    query = case_query(case, keywords, options.weights)
    ranked = {s: index.ranked(s) for s in skills}
    chosen = choose_seeds(ranked, query, options.effective_seed_target(), close=close,
                          relevance_floor=options.relevance_floor,
                          style=options.render, weights=options.weights)
    matches = {}
    best_first = sorted(query.rule, key=lambda t: -query.rule[t])
    for name, ids in chosen.seeds.items():
        rw = index.rule_words[name]
        for rid in ids:
            # What the trace shows as "matched by": the case words the rule shares, best first.
            own = rw.stems_of[rid]
            matches[f"{name}/{rid}"] = [t for t in best_first if t in own][:6]
    return SeedResult(chosen.seeds, matches), chosen.rules


def _render_ranked(index: AuditIndex, rules: dict[str, list[str]], style: str):
    """Text and units of rule sets (every SKILL with rules) from the blocks the index rendered
    once (the text ``render_rules`` gives: a header per SKILL, blocks joined as the style joins them)."""
    parts, units = [], []
    sep = "\n" if style == Render.COMPACT else "\n\n"
    for name, ids in rules.items():
        ranked = index.ranked(name)
        blocks = ranked.blocks(style)
        parts.append(f"## SKILL: {name}\n\n" + sep.join(blocks[r] for r in ids))
        graph_rules = ranked.skill.graph.rules
        units += [ContextUnit(r, blocks[r], name,
                              tuple((sp.start, sp.end) for sp in graph_rules[r].spans))
                  for r in ids]
    text = "\n\n".join(parts)
    return text, units


class _SeededStrategy:
    uses_keywords = True
    close = True

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        if options.seeding not in SEEDING_METHODS:
            raise ValueError(f"unknown seeding {options.seeding!r}; choose one of "
                             f"{', '.join(SEEDING_METHODS)}")
        if options.empty_seed not in EMPTY_SEED_POLICIES:
            raise ValueError(f"unknown empty-seed policy {options.empty_seed!r}; choose one of "
                             f"{', '.join(EMPTY_SEED_POLICIES)}")
        style = options.render
        closed = None
        if options.seeding == Seeding.SCORED:
            found, closed = _scored_seeds(case, keywords, skills, index, options, self.close)
        else:
            found = find_seeds(index, skills, keywords, options.max_seeds)
        seeds = {s: ids for s, ids in found.seeds.items() if ids}
        fallback = None
        unseeded = [s for s in skills if s not in seeds]
        if seeds and unseeded and options.empty_seed == EmptySeedPolicy.PER_SKILL:
            # EmptySeed per SKILL: a routed SKILL nothing matched is judged whole, not dropped.
            for s in unseeded:
                seeds[s] = list(index.skill(s).graph.rules)
            seeds = {s: seeds[s] for s in skills}
            fallback = f"{EmptySeedPolicy.PER_SKILL}:" + ",".join(unseeded)
        if not seeds:
            if options.empty_seed == EmptySeedPolicy.ERROR:
                raise ContextUnavailable(
                    EmptySeed(list(skills)).kind,
                    f"no rule of {', '.join(skills)} matches "
                    + ("the case's words" if options.seeding == Seeding.SCORED
                       else f"the keywords {list(keywords)!r}")
                    + "; nothing to judge against (use --empty-seed all-rules to judge every rule, "
                    "or --keywords llm)",
                    PolicyContext("", 0, [], {s: [] for s in skills}),
                )
            seeds = {s: list(index.skill(s).graph.rules) for s in skills}
            fallback = EmptySeedPolicy.ALL_RULES
        if closed is not None and fallback is None:
            rules = {s: ids for s, ids in closed.items() if ids}
            text, units = _render_ranked(index, rules, style)
            ctx = PolicyContext(text, count_tokens(text), units, seeds, found.matches, rules,
                                closure_paths=_paths_of(index, seeds, rules))
            return check_budget(ctx, options)
        if self.close and fallback != EmptySeedPolicy.ALL_RULES:
            outcome = select_closure(index.index, seeds, options.budget, style)
            if isinstance(outcome, BudgetExceeded):
                raise ContextUnavailable(
                    ErrorKind.BUDGET_EXCEEDED,
                    outcome.message,
                    PolicyContext(
                        "", outcome.tokens, [], seeds, found.matches, outcome.rules,
                        closure_paths=outcome.paths,
                    ),
                )
            assert not isinstance(outcome, EmptySeed)
            rules, text, tokens = outcome.rules, outcome.text, outcome.tokens
            paths = outcome.paths
        else:
            rules = seeds
            text = render_rule_sets(index, rules, style)
            tokens = count_tokens(text)
            # No closure (the ablation, or every rule after an empty seed): each rule is in
            # context as a seed of its own.
            paths = {s: {rid: [rid] for rid in ids} for s, ids in rules.items()}
        ctx = PolicyContext(
            text, tokens, rule_units(index, rules, style), seeds, found.matches, rules,
            fallback=fallback, closure_paths=paths,
        )
        return check_budget(ctx, options)


def _paths_of(index: AuditIndex, seeds: dict[str, list[str]], rules: dict[str, list[str]]
              ) -> dict[str, dict[str, list[str]]]:
    """The require path of every rule of ``rules`` from ``seeds`` (scored seeding closes the
    seeds it chose while choosing them; the paths are walked here, in ``rules``' order). A
    rule no seed reaches keeps a path of its own (it cannot happen for a closure, but the
    trace must never claim a path that is not in the graph)."""
    walked = closure_paths(index.index, {s: seeds.get(s, []) for s in rules})
    return {s: {rid: walked.get(s, {}).get(rid, [rid]) for rid in ids} for s, ids in rules.items()}


class CdgStrategy(_SeededStrategy):
    name = StrategyName.CDG


class NoClosureStrategy(_SeededStrategy):
    name = StrategyName.NO_CLOSURE
    close = False


class NoKeywordsStrategy:
    name = StrategyName.NO_KEYWORDS
    uses_keywords = False

    def build(self, case, keywords, skills, index, options) -> PolicyContext:
        rules = {s: list(index.skill(s).graph.rules) for s in skills}
        text = render_rule_sets(index, rules, options.render)
        ctx = PolicyContext(text, count_tokens(text), rule_units(index, rules, options.render),
                            closure=rules)
        return check_budget(ctx, options)

