"""Entropy-gated OPD on the two embedded models' real tokenizers (tiny random weights).

Teacher and student are tiny Qwen2 models whose embedding matrices have the real vocabulary
size (151,936), each saved with the tokenizer of one embedded GGUF, rebuilt from that file's
own header (vocabulary, merges, special tokens, chat template): the teacher with the 1.5B's,
the student with the 0.5B's. The teacher scores the student's token ids directly, so the run
is only meaningful if id i is the same token in both; OPD accepts these two and refuses a
tokenizer in which a single pair of ids is exchanged. The weights are random: this proves the alignment
and the loop, not a learning effect (the real run is 1.5B -> 0.5B, see README).
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from workbench.audit import AuditIndex, load_cases  # noqa: E402
from workbench.graph import PolicyIndex  # noqa: E402
from workbench.llm.gguf_tokenizer import read_tokenizer_metadata, tokenizer_from_gguf  # noqa: E402
from workbench.llm.weights import installed_parts  # noqa: E402
from workbench.train.data import materialise  # noqa: E402
from workbench.train.runs import read_metrics  # noqa: E402
from workbench.train.trainers import TrainConfig, train_opd  # noqa: E402

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "audit"
VOCAB = 151_936
CONTROL, USER_DEFINED = 3, 4  # GGUF token types of special tokens


def _gguf_tokenizer(model: str, swap: tuple[int, int] | None = None):
    """The embedded model's tokenizer as transformers uses it, from its GGUF header alone."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    parts = installed_parts(model)
    meta = read_tokenizer_metadata(parts, ["tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                           "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id",
                                           "tokenizer.chat_template"])
    tokens = meta["tokenizer.ggml.tokens"]
    tok = tokenizer_from_gguf(parts)
    if swap is not None:  # a control: one pair of ids exchanged, everything else equal
        vocab = tok.get_vocab()
        a, b = tokens[swap[0]], tokens[swap[1]]
        vocab[a], vocab[b] = vocab[b], vocab[a]
        from tokenizers import models

        tok.model = models.BPE(vocab=vocab, merges=[], ignore_merges=False)
    specials = [AddedToken(t, special=True, normalized=False)
                for t, kind in zip(tokens, meta["tokenizer.ggml.token_type"], strict=True)
                if kind in (CONTROL, USER_DEFINED)]
    tok.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok,
                                   eos_token=tokens[meta["tokenizer.ggml.eos_token_id"]],
                                   pad_token=tokens[meta["tokenizer.ggml.padding_token_id"]])
    fast.chat_template = meta["tokenizer.chat_template"]
    return fast


def _tiny(path: Path, tokenizer, hidden: int, layers: int, seed: int) -> Path:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=4096, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    Qwen2ForCausalLM(config).save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared 2-core machine: intra-op threads only contend
    root = tmp_path_factory.mktemp("opd-real-tok")
    big, small = _gguf_tokenizer("default"), _gguf_tokenizer("small")
    # Teacher and student differ in size as the 1.5B and 0.5B do (width, depth), not in vocabulary.
    teacher = _tiny(root / "teacher", big, hidden=24, layers=3, seed=2)
    student = _tiny(root / "student", small, hidden=16, layers=2, seed=1)
    index = AuditIndex(PolicyIndex.load(FIX / "merchant_index.json"))
    records = [r for r in materialise(load_cases(FIX / "merchant_cases.jsonl"), index) if r.prompt]
    yield root, big, small, teacher, student, records
    torch.set_num_threads(threads)


def test_the_two_real_tokenizers_are_one_vocabulary(setup):
    _, big, small, _, _, records = setup
    assert len(big) == len(small) == VOCAB
    assert big.get_vocab() == small.get_vocab()  # what train_opd compares
    assert big.eos_token == small.eos_token == "<|im_end|>" and big.eos_token_id == 151_645
    assert big.pad_token_id == small.pad_token_id == 151_643
    # The judge prompt the student renders is the token sequence the teacher would render.
    messages = records[0].prompt
    ids = [t.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
           for t in (big, small)]
    assert ids[0] == ids[1] and len(ids[0]) > 200
    assert ids[0][:1] == [big.convert_tokens_to_ids("<|im_start|>")]  # one id, not split


def test_opd_aligns_teacher_and_student_tokens_and_steps(setup):
    root, big, small, teacher, student, records = setup
    prompts, labels = [r.prompt for r in records[:2]], [r.violation for r in records[:2]]
    cfg = TrainConfig(epochs=1, global_batch=2, micro_batch=2, learning_rate=1e-3, max_new_tokens=6,
                      temperature=0.7, top_p=0.9, max_steps=1, save_every=1)
    result = train_opd(student, teacher, prompts, root / "run", cfg, labels=labels)
    row = read_metrics(result.run_dir)[0]
    assert row["step"] == 1 and row["completion_tokens"] > 0
    assert row["kl"] != 0.0  # a different teacher disagrees with the student
    assert 0.0 < row["gated_share"] <= 1.0
    # Every sampled id means the same token to both tokenizers.
    sampled = range(VOCAB - 300, VOCAB)  # the specials and the tail, where mismatches would hide
    assert big.convert_ids_to_tokens(list(sampled)) == small.convert_ids_to_tokens(list(sampled))


def test_opd_refuses_a_tokenizer_with_one_pair_of_ids_exchanged(setup):
    root, _, _, teacher, _, records = setup
    swapped = _gguf_tokenizer("small", swap=(1000, 1001))
    other = _tiny(root / "other", swapped, hidden=16, layers=2, seed=1)
    cfg = TrainConfig(epochs=1, global_batch=1, micro_batch=1, max_new_tokens=2, max_steps=1)
    with pytest.raises(ValueError, match="use different tokenizers"):
        train_opd(other, teacher, [records[0].prompt], root / "refused", cfg)
