"""The judge's hidden states at the last prompt token, from the same weights that judge.

The embedded judge runs in llama.cpp, whose server gives at most the final layer (its
``/v1/embeddings`` with last-token pooling, and only on a server started for embeddings, not
the one that answers chat requests). Middle layers carry more of what a model knows about a
case, so the reader loads the *same GGUF file* through transformers (dequantised to float32,
about 6 GB for the 1.5B model) and reads every layer of one forward pass over the judging
prompt exactly as the judge sees it: the chat template of the GGUF with the assistant turn
opened, i.e. the position where the judge starts its answer.

Measured on this 2-core machine (``bench/activations.py``): a 2,500-token prompt takes about
46 s, the same rate as llama.cpp's prompt processing (~52 tok/s); loading takes about a
minute once per process. Needs torch and transformers (the lab extra).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError

# Hidden-state indices kept by default: every second layer of the 1.5B model's 28 and the
# embeddings' output left out (it knows nothing about the case yet). A few MB per 100 cases.
DEFAULT_STRIDE = 2


class ActivationReaderError(WorkbenchError, RuntimeError):
    """The activation reader could not load its model (named, with what to install)."""


@dataclass
class Captured:
    array: np.ndarray  # [layers, hidden] float32
    layers: tuple[int, ...]
    prompt_tokens: int
    seconds: float


class ActivationReader:
    """Loads ``model`` (``embedded``, ``embedded:small``, a .gguf or a folder) once and reads
    last-prompt-token hidden states of judging messages."""

    def __init__(self, model: str = "embedded", layers: Sequence[int] | None = None,
                 threads: int | None = None) -> None:
        try:
            import torch

            from workbench.llm.transformers_load import ModelLoadError, load_model, render_prompt
        except ImportError as exc:  # the lab extra is not installed
            raise ActivationReaderError(
                f"reading the judge's activations needs torch and transformers ({exc}); "
                "install them with `pip install '.[activations]'`"
            ) from None
        if threads:
            torch.set_num_threads(threads)
        self._torch = torch
        self._render = render_prompt
        self.source = model
        try:
            self.model, self.tokenizer = load_model(model, trainable=False)
        except ModelLoadError as exc:
            raise ActivationReaderError(str(exc)) from None
        n = int(self.model.config.num_hidden_layers)
        self.layers = tuple(layers) if layers else tuple(range(DEFAULT_STRIDE, n + 1,
                                                               DEFAULT_STRIDE))
        bad = [i for i in self.layers if not 0 <= i <= n]
        if bad:
            raise ActivationReaderError(f"layers {bad} are outside 0..{n} of {model}")

    @property
    def feature_ids(self) -> tuple[int, ...]:
        """What a reading holds: each layer at the last prompt token only."""
        return self.layers

    def prompt_ids(self, messages: Sequence[dict[str, str]]) -> Any:
        text = self._render(self.tokenizer, list(messages))
        return self.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]

    def capture(self, messages: Sequence[dict[str, str]]) -> Captured:
        """The hidden states of the last prompt token at :attr:`layers`."""
        ids = self.prompt_ids(messages)
        start = time.perf_counter()
        with self._torch.inference_mode():
            out = self.model.model(input_ids=ids, output_hidden_states=True, use_cache=False)
        states = np.stack([out.hidden_states[i][0, -1, :].float().numpy() for i in self.layers])
        return Captured(states, self.layers, int(ids.shape[1]), time.perf_counter() - start)
