"""Tiny Qwen2-architecture models for the training tests, built here (no download): a BPE
tokenizer trained on the given corpus, random weights, saved as a checkpoint folder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from tests.audit_data import merchant_cases, merchant_index
from workbench.train.data import materialise

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_model(path: Path, corpus: list[str], seed: int) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=4000, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=4096, eos_token_id=fast.eos_token_id,
                         pad_token_id=fast.pad_token_id, tie_word_embeddings=True)
    Qwen2ForCausalLM(config).save_pretrained(str(path))
    fast.save_pretrained(str(path))
    return path




@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one intra-op thread for the block: on a shared 2-core machine, the threads of
    a tiny model only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def merchant_student_teacher(root: Path):
    """The merchant fixture (index, cases, materialised records) and two tiny models under
    ``root`` built on its prompts: ``student`` (seed 1) and ``teacher`` (seed 2), the same
    tokenizer with different weights, so the teacher disagrees with the student."""
    index, cases = merchant_index(), merchant_cases()
    records = materialise(cases, index)
    corpus = [m["content"] for r in records for m in r.keyword_prompt + (r.prompt or [])]
    corpus += ['{"keywords": ["delay compensation", "refund"]}', '{"violation": true}']
    student = tiny_model(root / "student", corpus, seed=1)
    teacher = tiny_model(root / "teacher", corpus, seed=2)
    return index, cases, records, student, teacher
