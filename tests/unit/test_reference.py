"""Tests for app.llm.reference: math helpers on known answers, then the real model."""
import os
from pathlib import Path

import numpy as np
import pytest

from app.llm.gguf import GGUFFile, load_config
from app.llm.reference import (Reference, attention, greedy, logits_trace, rmsnorm, rope,
                               rope_tables, silu, softmax)

REPO = Path(__file__).resolve().parents[2]
MODEL = Path(os.environ.get("DISPATCHLAB_MODEL",
                            REPO / ".cache/model/SmolLM2-135M-Instruct.Q4_1.gguf"))

# Token ids pinned once with a byte-level BPE tokenizer built from the GGUF vocab/merges
# (see the `tok` fixture); the greedy continuations were computed by this reference.
PROMPT = "The capital of France is"
PROMPT_IDS = [504, 3575, 282, 4649, 314]
PROMPT_GREEDY_8 = [7042, 30, 198, 198, 504, 2988, 314, 42]  # " Paris.\n\nThe answer is:"
CHAT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CHAT_IDS = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198]
CHAT_GREEDY = [504, 3575, 282, 4649, 314, 7042, 30, 2]  # "The capital of France is Paris.<|im_end|>"


# ------------------------------------------------------------- math helpers
def test_rmsnorm_known_answer():
    x = np.array([3.0, 4.0], np.float32)
    out = rmsnorm(x, np.array([1.0, 2.0], np.float32), 0.0)
    np.testing.assert_allclose(out, [3 / np.sqrt(12.5), 8 / np.sqrt(12.5)], rtol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(rmsnorm(np.zeros(4, np.float32), np.ones(4, np.float32), 1e-5), 0)


def test_rope_pos0_is_identity():
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    np.testing.assert_array_equal(rope(x, 0, 100000.0), x)


def test_rope_rotates_adjacent_pairs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 8)).astype(np.float32)
    out = rope(x, 5, 10000.0)
    for i in range(4):  # pair (2i, 2i+1) rotated by 5 * 10000^(-2i/8), as a complex product
        z = (x[:, 2 * i] + 1j * x[:, 2 * i + 1]) * np.exp(1j * 5 * 10000.0 ** (-2 * i / 8))
        np.testing.assert_allclose(out[:, 2 * i], z.real, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out[:, 2 * i + 1], z.imag, rtol=1e-5, atol=1e-6)
    pairs_in = np.hypot(x[:, 0::2], x[:, 1::2])
    np.testing.assert_allclose(np.hypot(out[:, 0::2], out[:, 1::2]), pairs_in, rtol=1e-5)


def test_rope_relative_position_and_partial_dims():
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((2, 1, 64)).astype(np.float32)
    dot = lambda m, n: float(np.sum(rope(q, m, 1e5) * rope(k, n, 1e5)))  # noqa: E731
    assert dot(7, 3) == pytest.approx(dot(104, 100), rel=1e-4)
    out = rope(q, 9, 1e5, rope_dim=32)
    np.testing.assert_array_equal(out[:, 32:], q[:, 32:])
    np.testing.assert_array_equal(out[:, :32], rope(q[:, :32], 9, 1e5))
    cos, sin = rope_tables(3, 1e5, 64)
    assert cos.shape == sin.shape == (32,) and cos[0] == pytest.approx(np.cos(3))


def test_softmax_and_silu():
    p = softmax(np.array([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1000.0]], np.float32))
    np.testing.assert_allclose(p.sum(-1), 1, rtol=1e-6)
    np.testing.assert_allclose(p[1], 1 / 3, rtol=1e-6)
    np.testing.assert_allclose(silu(np.array([0.0, 1.0], np.float32)), [0.0, 1 / (1 + np.exp(-1))],
                               rtol=1e-6)


def test_attention_single_position_returns_v_with_gqa_mapping():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((6, 8)).astype(np.float32)           # 6 query heads
    k = rng.standard_normal((1, 2, 8)).astype(np.float32)        # 1 position, 2 kv heads
    v = rng.standard_normal((1, 2, 8)).astype(np.float32)
    out = attention(q, k, v)
    for h in range(6):  # query head h reads kv head h // 3
        np.testing.assert_allclose(out[h], v[0, h // 3], rtol=1e-6)


def test_attention_weights():
    q = np.array([[1.0, 0.0]], np.float32)
    k = np.array([[[1.0, 0.0]], [[0.0, 0.0]]], np.float32)       # scores 1/sqrt(2), 0
    v = np.array([[[1.0, 0.0]], [[0.0, 1.0]]], np.float32)
    w = np.exp(1 / np.sqrt(2))
    np.testing.assert_allclose(attention(q, k, v)[0], [w / (w + 1), 1 / (w + 1)], rtol=1e-6)


# -------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def model():
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL} (set DISPATCHLAB_MODEL)")
    g = GGUFFile(MODEL.read_bytes())
    cfg = load_config(g)
    return g, cfg, Reference(g, cfg, max_ctx=64)


@pytest.fixture(scope="module")
def tok(model):
    """Byte-level BPE from the GGUF vocab/merges (test-only oracle, not app code)."""
    tk = pytest.importorskip("tokenizers")
    metadata = model[0].metadata
    tokens = metadata["tokenizer.ggml.tokens"]
    bpe = tk.models.BPE(vocab={t: i for i, t in enumerate(tokens)},
                        merges=[tuple(m.split(" ")) for m in metadata["tokenizer.ggml.merges"]])
    tok = tk.Tokenizer(bpe)
    tok.pre_tokenizer = tk.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk.decoders.ByteLevel()
    control = [t for t, ty in zip(tokens, metadata["tokenizer.ggml.token_type"]) if ty == 3]
    tok.add_special_tokens([tk.AddedToken(t, special=True) for t in control])
    return tok


def test_pinned_ids_match_tokenizer(tok):
    assert tok.encode(PROMPT).ids == PROMPT_IDS
    assert tok.encode(CHAT).ids == CHAT_IDS


def test_greedy_raw_prompt_says_paris(model, tok):
    _, cfg, ref = model
    out = greedy(ref, PROMPT_IDS, 8, cfg.eos_id)
    assert out == PROMPT_GREEDY_8
    assert "Paris" in tok.decode(out)


def test_greedy_chat_stops_at_eos(model, tok):
    _, cfg, ref = model
    out = greedy(ref, CHAT_IDS, 30, cfg.eos_id)
    assert out == CHAT_GREEDY and out[-1] == cfg.eos_id
    text = tok.decode(out, skip_special_tokens=False)
    assert text == "The capital of France is Paris.<|im_end|>"


def test_language_model_loss_is_sane(model, tok):
    """Mean next-token NLL on plain English is low (NORM rope: 2.66; NEOX-style rope would give 4.08)."""
    _, _, ref = model
    ids = tok.encode("The quick brown fox jumps over the lazy dog. Paris is the capital and most "
                     "populous city of France, with an estimated population of over two million "
                     "residents.").ids
    logits = logits_trace(ref, ids).astype(np.float64)
    logz = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    nll = np.mean([logz[i] - logits[i, ids[i + 1]] for i in range(len(ids) - 1)])
    assert nll < 3.3


def test_logits_trace_and_rewind(model):
    _, cfg, ref = model
    trace = logits_trace(ref, PROMPT_IDS)
    assert trace.shape == (len(PROMPT_IDS), cfg.vocab) and trace.dtype == np.float32
    assert ref.length == len(PROMPT_IDS)
    again = ref.forward(PROMPT_IDS[2], 2)  # rewind: overwrite position 2
    np.testing.assert_allclose(again, trace[2], rtol=1e-5, atol=1e-5)
    assert ref.length == 3


def test_uncached_weights_match(model):
    g, cfg, ref = model
    lazy = Reference(g, cfg, max_ctx=4, cache_weights=False)
    ref.reset()
    np.testing.assert_allclose(lazy.forward(PROMPT_IDS[0], 0), ref.forward(PROMPT_IDS[0], 0),
                               rtol=1e-5, atol=1e-5)


def test_forward_rejects_bad_input(model):
    g, cfg, ref = model
    ref.reset()
    with pytest.raises(ValueError, match="position 1 invalid"):
        ref.forward(5, 1)
    with pytest.raises(ValueError, match="token id 49152 out of range"):
        ref.forward(cfg.vocab, 0)
    with pytest.raises(ValueError, match="max_ctx"):
        Reference(g, cfg, max_ctx=cfg.ctx + 1)
    with pytest.raises(ValueError, match="exceeds max_ctx"):
        greedy(ref, [1] * 60, 10)
