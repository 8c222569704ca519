"""Each WGSL kernel of the LLM, run alone in the page (window.dlLLM.runKernel) on small random inputs,
against numpy.  Shapes are chosen to hit edges: partial workgroups, odd Q8_0 block counts (unaligned
rows), a tie in argmax, NaN logits, partial RoPE, GQA with 2 query heads per KV head.

Error bound for dot products: |gpu − exact| ≤ 1e-5 · Σ|terms| (f32 accumulation of n ≤ 1536 terms in
any order is within n·2⁻²⁴·Σ|terms| ≈ 1e-4 worst case, typically √n·2⁻²⁴; 1e-5 passes real kernels
and fails any indexing or dequantization mistake, which moves results by O(Σ|terms|/n) or more).
Quantized blocks are dequantized exactly (f16 scales, small integers), so no extra term is needed.
"""
from __future__ import annotations

import base64

import numpy as np
import pytest

from app.llm import reference
from app.llm.gguf import GGML_Q4_1, GGML_Q8_0, _dequantize
from app.llm.session import rope_table
from conftest import run_kernel_raw

RNG = np.random.default_rng(7)



def b64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def run_kernel(page, file, constants, buffers, workgroups, read, entry="main", step=None):
    spec = {"file": file, "entry": entry, "constants": constants, "buffers": [b64(b) for b in buffers],
            "workgroups": list(workgroups), "read": list(read)}
    if step:
        spec["step"] = step
    return run_kernel_raw(page, spec)


def f32(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, np.float32)


def q4_1_blocks(rows, cols):
    n = rows * cols // 32
    blocks = np.zeros((n, 20), np.uint8)
    blocks[:, 0:2] = np.frombuffer(RNG.uniform(0.001, 0.05, n).astype("<f2").tobytes(), np.uint8).reshape(n, 2)
    blocks[:, 2:4] = np.frombuffer(RNG.uniform(-0.3, 0.3, n).astype("<f2").tobytes(), np.uint8).reshape(n, 2)
    blocks[:, 4:] = RNG.integers(0, 256, (n, 16))
    raw = blocks.tobytes()
    return raw, _dequantize(memoryview(raw), GGML_Q4_1, 0, len(raw)).reshape(rows, cols)


def q8_0_blocks(rows, cols):
    n = rows * cols // 32
    blocks = np.zeros((n, 34), np.uint8)
    blocks[:, 0:2] = np.frombuffer(RNG.uniform(0.001, 0.02, n).astype("<f2").tobytes(), np.uint8).reshape(n, 2)
    blocks[:, 2:] = RNG.integers(0, 256, (n, 32))
    raw = blocks.tobytes() + b"\0" * (-len(blocks.tobytes()) % 4)
    return raw, _dequantize(memoryview(raw), GGML_Q8_0, 0, n * 34).reshape(rows, cols)


def assert_dot_close(got, w, x):
    exact = w.astype(np.float64) @ x.astype(np.float64)
    bound = 1e-5 * (np.abs(w.astype(np.float64)) @ np.abs(x.astype(np.float64))) + 1e-30
    assert np.all(np.abs(got - exact) <= bound), float(np.max(np.abs(got - exact) / bound))


# (tpr, wg): threads per row and workgroup size of the reduction kernels; tpr None = the *_x8 variant
MATVEC_SHAPES = [(1, 64), (4, 64), (16, 128), (None, 16), (None, 4)]


def matvec(page, q, raw, x, rows, cols, tpr, wg):
    if tpr is None:
        file, consts, groups = f"matvec_{q}_x8.wgsl", {"ROWS": rows, "COLS": cols, "WG": wg}, -(-rows // (8 * wg))
    else:
        file, consts = f"matvec_{q}.wgsl", {"ROWS": rows, "COLS": cols, "TPR": tpr, "WG": wg}
        groups = -(-rows // (wg // tpr))
    out = run_kernel(page, file, consts, [np.frombuffer(raw, np.uint8), x, np.full(rows, np.nan, np.float32)],
                     (groups, 1, 1), [2])
    return f32(out[2])


@pytest.mark.parametrize("tpr,wg", MATVEC_SHAPES)
def test_matvec_q4_1(lab_page, tpr, wg):
    rows, cols = 45, 96  # 45: a partial workgroup and a partial group of 8 rows
    raw, w = q4_1_blocks(rows, cols)
    x = RNG.standard_normal(cols).astype(np.float32)
    assert_dot_close(matvec(lab_page, "q4_1", raw, x, rows, cols, tpr, wg), w, x)


@pytest.mark.parametrize("tpr,wg", MATVEC_SHAPES)
def test_matvec_q8_0(lab_page, tpr, wg):
    rows, cols = 37, 192
    raw, w = q8_0_blocks(rows, cols)
    x = RNG.standard_normal(cols).astype(np.float32)
    assert_dot_close(matvec(lab_page, "q8_0", raw, x, rows, cols, tpr, wg), w, x)


@pytest.mark.parametrize("cols", [96, 128])  # 3 blocks per row: rows start mid-word
def test_embed_q8_0_reads_token_of_slot(lab_page, cols):
    raw, e = q8_0_blocks(11, cols)
    tokens = np.array([0, 7, 3, 0], np.uint32)
    out = run_kernel(lab_page, "embed_q8_0.wgsl", {"COLS": cols, "WG": 64},
                     [tokens, np.frombuffer(raw, np.uint8), np.zeros(cols, np.float32)],
                     (-(-cols // 64), 1, 1), [3], step={"pos": 0, "slot": 1})
    np.testing.assert_array_equal(f32(out[3]), e[7])  # exact: d·q in f32 either way


@pytest.mark.parametrize("wg", [4, 64])
def test_rmsnorm(lab_page, wg):
    n = 100
    x = RNG.standard_normal(n).astype(np.float32)
    w = RNG.standard_normal(n).astype(np.float32)
    out = run_kernel(lab_page, "rmsnorm.wgsl", {"N": n, "EPS": 1e-5, "WG": wg},
                     [x, w, np.zeros(n, np.float32)], (1, 1, 1), [2])
    np.testing.assert_allclose(f32(out[2]), reference.rmsnorm(x, w, 1e-5), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("rope_dim,stride", [(8, 0), (4, 24)])
def test_rope(lab_page, rope_dim, stride):
    heads, hd, ctx, pos = 3, 8, 9, 6
    src = RNG.standard_normal(heads * hd).astype(np.float32)
    table = rope_table(ctx, 10000.0, rope_dim)
    dst = np.full(max(stride, 1) * ctx if stride else heads * hd, 7.0, np.float32)
    out = run_kernel(lab_page, "rope.wgsl", {"HEADS": heads, "HEAD_DIM": hd, "ROPE_DIM": rope_dim,
                                             "DST_STRIDE": stride, "WG": 64},
                     [table, src, dst], (1, 1, 1), [3], step={"pos": pos, "slot": 2})
    got = f32(out[3])
    want = reference.rope(src.reshape(heads, hd), pos, 10000.0, rope_dim).reshape(-1)
    row = got[pos * stride: pos * stride + heads * hd]
    np.testing.assert_allclose(row, want, rtol=1e-6, atol=1e-6)
    if stride:  # nothing else in the cache was touched
        assert np.all(np.delete(got, np.arange(pos * stride, pos * stride + heads * hd)) == 7.0)


def test_kv_write(lab_page):
    n, ctx, pos = 24, 5, 3
    src = RNG.standard_normal(n).astype(np.float32)
    out = run_kernel(lab_page, "kv_write.wgsl", {"N": n, "WG": 64}, [src, np.zeros(n * ctx, np.float32)],
                     (1, 1, 1), [2], step={"pos": pos, "slot": 0})
    want = np.zeros((ctx, n), np.float32)
    want[pos] = src
    np.testing.assert_array_equal(f32(out[2]).reshape(ctx, n), want)


@pytest.mark.parametrize("pos,wg", [(0, 64), (6, 64), (70, 64), (70, 4)])  # pos ≥ WG: several per invocation
def test_attention_gqa(lab_page, pos, wg):
    heads, kvh, hd, ctx = 4, 2, 16, 80
    q = RNG.standard_normal(heads * hd).astype(np.float32)
    k = RNG.standard_normal((ctx, kvh, hd)).astype(np.float32)
    v = RNG.standard_normal((ctx, kvh, hd)).astype(np.float32)
    out = run_kernel(lab_page, "attention.wgsl", {"HEADS": heads, "KV_HEADS": kvh, "HEAD_DIM": hd, "WG": wg},
                     [q, k, v, np.zeros(heads * ctx, np.float32), np.zeros(heads * hd, np.float32)],
                     (heads, 1, 1), [5], step={"pos": pos, "slot": 0})
    want = reference.attention(q.reshape(heads, hd), k[:pos + 1], v[:pos + 1]).reshape(-1)
    np.testing.assert_allclose(f32(out[5]), want, rtol=1e-5, atol=1e-5)


def test_silu_mul_and_add(lab_page):
    n = 100
    g, u = RNG.standard_normal(n).astype(np.float32) * 4, RNG.standard_normal(n).astype(np.float32)
    out = run_kernel(lab_page, "silu_mul.wgsl", {"N": n, "WG": 64}, [g, u, np.zeros(n, np.float32)], (2, 1, 1), [2])
    np.testing.assert_allclose(f32(out[2]), reference.silu(g) * u, rtol=1e-6, atol=1e-7)
    out = run_kernel(lab_page, "add.wgsl", {"N": n, "WG": 64}, [g, u], (2, 1, 1), [0])
    np.testing.assert_array_equal(f32(out[0]), g + u)


@pytest.mark.parametrize("entry_tie,wg", [(True, 64), (False, 64), (True, 4)])
def test_argmax_two_stage(lab_page, entry_tie, wg):
    n, parts, slot = 1000, 8, 2
    logits = RNG.standard_normal(n).astype(np.float32)
    logits[[5, 17]] = np.nan
    if entry_tie:
        logits[[300, 812]] = 9.0  # equal maxima in different chunks: the lower index wins, like numpy
    want = int(np.nanargmax(logits))
    tokens = np.zeros(8, np.uint32)
    consts = {"N": n, "PARTS": parts, "WG": wg}
    bufs = [logits, np.zeros(2 * parts, np.float32), tokens]
    # stage1 then stage2 on the same buffers: run stage1, feed its parts to stage2
    out1 = run_kernel(lab_page, "argmax.wgsl", consts, bufs, (parts, 1, 1), [2, 3], entry="stage1",
                      step={"pos": 0, "slot": slot})
    out2 = run_kernel(lab_page, "argmax.wgsl", consts, [logits, np.frombuffer(out1[2], np.uint8), tokens],
                      (1, 1, 1), [3], entry="stage2", step={"pos": 0, "slot": slot})
    got = np.frombuffer(out2[3], np.uint32)
    assert got[slot + 1] == want
    assert got[slot] == 0 and got[slot + 2] == 0
