"""The judge's activations read in its own pass, on the real embedded model (issue 57 item 1):
one short judging prompt with the small model. The prompt is read in this process (llama.cpp's
C API on the same GGUF), its KV cache handed to the server's slot, and the judge answers from
it: the same answer as without the pass, the server reading one token instead of the prompt,
and the features (last token, the reply pooled) kept for the audit to take."""

from __future__ import annotations

import json
import urllib.request

import numpy as np
import pytest

from workbench.audit.cases import case_from_dict
from workbench.audit.judge import VERDICT_SCHEMA, judge_messages
from workbench.llm.onepass import OnePass, chatml

pytestmark = [pytest.mark.model, pytest.mark.slow]

CONTEXT = "[R1] refund-desk · MUST\nWhen: a refund is asked for\nThen: check the order first"


def _post(url: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def test_the_judge_answers_from_the_prompt_read_in_this_process(monkeypatch, tmp_path):
    from workbench.llm import Gateway
    from workbench.llm.config import load_config
    from workbench.llm.embedded import current_embedded_server, stop_embedded_server

    monkeypatch.chdir(tmp_path)
    for var in ("WORKBENCH_CONFIG", "WORKBENCH_LLM_MODE", "WORKBENCH_EMBEDDED_URL",
                "WORKBENCH_EMBEDDED_SMALL_URL"):
        monkeypatch.delenv(var, raising=False)
    env = {"WORKBENCH_JUDGE_MODEL": "embedded:small", "WORKBENCH_EMBEDDED_CTX_SIZE": "8192",
           "WORKBENCH_JUDGE_MAX_TOKENS": "120"}
    config = load_config(env=env)
    case = case_from_dict({"id": "a", "label": "negative",
                           "model_response": "Yes, I refunded it without checking the order.",
                           "conversation": [{"role": "user", "content": "Can I get a refund?"}]})
    messages = judge_messages(case, CONTEXT)
    gw = Gateway(config)
    tap = OnePass("embedded:small", slots=config.embedded.parallel)
    try:
        plain = gw.complete_json("judge", messages, VERDICT_SCHEMA, schema_name="verdict",
                                 step="plain", use_cache=False)
        server = current_embedded_server("small")
        # the prompt as this process renders and tokenises it is the server's, token for token
        prompt = _post(server.url, "/apply-template", {"messages": messages})["prompt"]
        served = _post(server.url, "/tokenize", {"content": prompt, "add_special": True,
                                                 "parse_special": True})["tokens"]
        assert prompt == chatml(messages)
        assert [t["id"] if isinstance(t, dict) else t for t in served] == tap.reader().tokens(messages)[1]
        for i in range(server.info.slots):  # empty the slots: the pass must bring the prompt
            _post(server.url, f"/slots/{i}?action=erase", {})
        gw.onepass = tap
        one = gw.complete_json("judge", messages, VERDICT_SCHEMA, schema_name="verdict",
                               step="judge:a:cdg", use_cache=False)
    finally:
        tap.close()
        stop_embedded_server()
    assert (tap.restored, tap.fallbacks) == (1, 0)
    assert one.data["violation"] == plain.data["violation"]
    reading = tap.take(messages)
    assert reading is not None and tap.take(messages) is None  # taken once
    assert reading.prompt_tokens == len(served) and reading.reply_tokens > 5
    assert np.isfinite(reading.array).all() and reading.array.shape[1] == 896
    # every second layer of 24 at the last token, the reply pooled three ways below the last
    layers = [f for f in reading.features if f < 100]
    assert layers == list(range(2, 25, 2))
    assert len(reading.features) == len(layers) + 3 * (len(layers) - 1)
