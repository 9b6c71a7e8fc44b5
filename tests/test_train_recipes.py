"""Named OPD recipes: the code equals docs/recipes.md, each paper's values where it states
them, flags override a recipe, and each recipe runs a real step on the tiny models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.train.recipes import (
    DEFAULT_RECIPE,
    RECIPES,
    SCALING_GUIDED,
    recipe,
    recipe_rows,
    with_overrides,
)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "recipes.md"
NOT_STATED = "not stated"


def doc_tables() -> dict[str, list[tuple[str, str, str]]]:
    """``{recipe name: [(setting, paper, recipe), ...]}`` from the tables under each
    ``### `NAME` — ...`` heading of docs/recipes.md."""
    tables: dict[str, list[tuple[str, str, str]]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"^### `([a-z-]+)`", line)
        if heading:
            current = heading.group(1)
            continue
        if line.startswith("## "):
            current = None
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if current and len(cells) == 4 and cells[0].startswith("`"):
            tables.setdefault(current, []).append((cells[0].strip("`"), cells[2], cells[3]))
    return tables


def test_every_recipe_has_a_docs_table_equal_to_the_code():
    tables = doc_tables()
    assert set(tables) == set(RECIPES)
    for name, r in RECIPES.items():
        assert [(s, v) for s, _, v in tables[name]] == recipe_rows(r), name


def test_a_papers_recipe_equals_the_paper_wherever_the_paper_states_the_value():
    tables = doc_tables()
    for name in ("scaling-guided", "entropy-gated"):
        for setting, paper, ours in tables[name]:
            assert paper in (ours, NOT_STATED), (name, setting, paper, ours)
    # Table 13 states every row; the second paper states its gate.
    assert all(paper != NOT_STATED for _, paper, _ in tables["scaling-guided"])
    stated = {s for s, paper, _ in tables["entropy-gated"] if paper != NOT_STATED}
    assert {"gate", "top_fraction", "keep_outcome_tokens"} <= stated
    # The default's paper column is the entropy-gated recipe; it differs in two rows only.
    cpu = {s: (paper, ours) for s, paper, ours in tables["cpu"]}
    assert [s for s, (paper, ours) in cpu.items() if paper != ours] == [
        "learning_rate", "keep_outcome_tokens"]
    assert dict(recipe_rows(RECIPES["entropy-gated"])) == {s: p for s, (p, _) in cpu.items()}


def test_table_13_line_by_line():
    r = SCALING_GUIDED
    assert (r.learning_rate, r.clip, r.gate, r.keep_outcome_tokens) == (1e-6, 10.0, "none", False)
    assert (r.lora_rank, r.lora_alpha, r.temperature, r.top_p) == (32, 64, 0.7, 0.9)
    assert (r.max_new_tokens, r.epochs, r.global_batch, r.rollouts_per_prompt, r.seed) == (
        128, 2, 24, 1, 17)
    assert DEFAULT_RECIPE == "cpu" and RECIPES["cpu"].learning_rate == 1e-4


def test_explicit_values_override_a_recipe():
    r = with_overrides(SCALING_GUIDED, {"learning_rate": 1e-4, "clip": None, "lora_rank": 8})
    assert (r.learning_rate, r.clip, r.lora_rank, r.lora_alpha) == (1e-4, 10.0, 8, 16)
    assert with_overrides(RECIPES["cpu"], {"gate": "none"}).top_fraction == 1.0
    with pytest.raises(ValueError, match="unknown OPD recipe 'nope'"):
        recipe("nope")


def _resolved(tmp_path, *flags):
    """The TrainConfig `train opd` builds from ``flags`` (no model loaded)."""
    from workbench.cli import build_parser
    from workbench.commands.train import _config

    args = build_parser().parse_args(["train", "opd", "--records", "r", "--teacher", "t",
                                      "--student", "s", "--run-dir", str(tmp_path), *flags])
    return _config(args)


def test_the_command_resolves_a_recipe_and_the_flags_over_it(tmp_path):
    cfg = _resolved(tmp_path, "--recipe", "scaling-guided")
    assert (cfg.learning_rate, cfg.clip, cfg.gate, cfg.recipe) == (1e-6, 10.0, "none", "scaling-guided")
    assert (cfg.lora.rank, cfg.lora.alpha, cfg.epochs, cfg.global_batch, cfg.seed) == (32, 64, 2, 24, 17)
    assert (cfg.temperature, cfg.top_p, cfg.max_new_tokens) == (0.7, 0.9, 128)
    cfg = _resolved(tmp_path, "--recipe", "entropy-gated", "--lr", "1e-4", "--keep-outcome-tokens")
    assert (cfg.learning_rate, cfg.gate, cfg.top_fraction, cfg.keep_outcome_tokens) == (
        1e-4, "entropy", 0.2, True)
    cfg = _resolved(tmp_path)
    assert (cfg.recipe, cfg.learning_rate, cfg.keep_outcome_tokens) == ("cpu", 1e-4, True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from tests.tiny_models import merchant_student_teacher, one_thread
    from workbench.train.data import write_jsonl

    root = tmp_path_factory.mktemp("recipes")
    with one_thread():
        _, _, records, student, teacher = merchant_student_teacher(root)
        path = write_jsonl([r for r in records if r.prompt is not None], root / "records.jsonl")
        yield root, path, student, teacher


@pytest.mark.parametrize("name", ["scaling-guided", "entropy-gated"])
def test_one_real_step_of_each_papers_recipe(tiny, name, capsys):
    """Every value of the recipe as it stands (global batch 24 over the 4 merchant prompts is
    one step of 8 completions, 2 epochs), stopped after one step."""
    from workbench.train.runs import read_metrics

    root, records, student, teacher = tiny
    run = root / name
    assert main(["train", "opd", "--recipe", name, "--records", str(records), "--teacher",
                 str(teacher), "--student", str(student), "--run-dir", str(run),
                 "--max-steps", "1"]) == 0
    err = capsys.readouterr().err
    assert f"recipe {name}: lr 1e-06, k1 clamp ±10" in err and "step 1/1" in err
    config = json.loads((run / "run.json").read_text())["config"]
    r = RECIPES[name]
    assert config["recipe"] == name
    assert (config["learning_rate"], config["clip"], config["gate"], config["top_fraction"]) == (
        r.learning_rate, r.clip, r.gate, r.top_fraction)
    assert config["keep_outcome_tokens"] is False
    assert (config["lora"]["rank"], config["lora"]["alpha"]) == (32, 64)
    assert (config["temperature"], config["top_p"], config["max_new_tokens"]) == (0.7, 0.9, 128)
    assert (config["epochs"], config["global_batch"], config["seed"]) == (2, 24, 17)
    row = read_metrics(run)[0]
    if name == "scaling-guided":
        assert row["gated_share"] == pytest.approx(1.0)  # no gate: every token
    else:
        # the 20 % of each completion's tokens by entropy, rounded up per completion, and no
        # verdict or termination token beyond them
        assert 0.2 <= row["gated_share"] < 0.35
    assert (run / "adapter" / "adapter_model.safetensors").is_file()
