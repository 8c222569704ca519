"""Each fused WGSL kernel of the `fused`/`gpu_loop` plans, run alone in the page (window.dlLLM.runKernel)
on small random inputs, against numpy (the reference module's own rmsnorm/rope/attention/silu).

Shapes hit edges: partial workgroups (rows not a multiple of WG/TPR), GQA with 2 query heads per KV head,
partial RoPE, an argmax tie that must go to the lowest index, and several workgroup sizes (the subgroup
size is the adapter's, 4 on SwiftShader).  Error bound for dot products, as in test_llm_kernels:
|gpu − exact| ≤ 1e-5 · Σ|terms| — any indexing or dequantization mistake moves results by far more.
"""
from __future__ import annotations

import base64

import numpy as np
import pytest

from app.bench.isolation import dequant_q4_1, make_q4_1
from app.llm import reference
from app.llm.session import rope_table
from conftest import run_kernel_raw

RNG = np.random.default_rng(11)
EPS = 1e-5



def run_kernel(page, file, constants, buffers, workgroups, read, step=None, entry="main"):
    spec = {"file": file, "entry": entry, "constants": constants, "workgroups": list(workgroups),
            "buffers": [base64.b64encode(np.ascontiguousarray(b).tobytes()).decode() for b in buffers],
            "read": list(read), "step": step or {"pos": 0, "slot": 0}}
    return {k: np.frombuffer(v, np.float32) for k, v in run_kernel_raw(page, spec).items()}


def q4_1(rows, cols, seed):
    blocks = make_q4_1(rows, cols, seed)
    return blocks.reshape(-1).view(np.uint8), dequant_q4_1(blocks)


def q8_0(rows, cols):
    n = rows * cols // 32
    blocks = np.zeros((n, 34), np.uint8)
    blocks[:, 0:2] = RNG.uniform(0.001, 0.02, n).astype("<f2").view(np.uint8).reshape(n, 2)
    blocks[:, 2:] = RNG.integers(0, 256, (n, 32))
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
    w = (d * blocks[:, 2:].view(np.int8).astype(np.float32)).reshape(rows, cols)
    return blocks.reshape(-1), w


def assert_dot_close(got, w, x):
    exact = w.astype(np.float64) @ x.astype(np.float64)
    bound = 1e-5 * (np.abs(w.astype(np.float64)) @ np.abs(x.astype(np.float64))) + 1e-30
    assert np.all(np.abs(got - exact) <= bound), float(np.max(np.abs(got - exact) / bound))


@pytest.mark.parametrize("tpr,qpi,rpt,wg", [(1, 4, 4, 64), (2, 2, 3, 32), (4, 1, 1, 256)])
def test_matvec_q4_1_add(lab_page, tpr, qpi, rpt, wg):
    rows, cols = 45, 96
    raw, w = q4_1(rows, cols, seed=tpr)
    v = RNG.standard_normal(cols).astype(np.float32)
    y0 = RNG.standard_normal(rows).astype(np.float32)
    out = run_kernel(lab_page, "matvec_q4_1_add.wgsl", {"ROWS": rows, "COLS": cols, "TPR": tpr, "QPI": qpi,
                                                             "RPT": rpt, "WG": wg},
                     [raw, v, y0], (-(-rows // (wg // tpr * rpt)), 1, 1), [2])
    assert_dot_close(out[2] - y0, w, v)


@pytest.mark.parametrize("tpr,qpi,rpt,wg", [(1, 4, 4, 64), (4, 1, 1, 128), (2, 2, 3, 32)])
def test_ffn_gate_up_silu(lab_page, tpr, qpi, rpt, wg):
    d, ffn = 128, 40
    raw, w = q4_1(2 * ffn, d, seed=3)
    x = RNG.standard_normal(d).astype(np.float32)
    nw = RNG.uniform(0.5, 1.5, d).astype(np.float32)
    out = run_kernel(lab_page, "ffn_gate_up_silu.wgsl", {"D": d, "FFN": ffn, "EPS": EPS, "TPR": tpr, "QPI": qpi,
                                                            "RPT": rpt, "WG": wg},
                     [x, nw, raw, np.zeros(ffn, np.float32)], (-(-ffn // (wg // tpr * rpt)), 1, 1), [3])
    xn = reference.rmsnorm(x, nw, EPS)
    gu = w.astype(np.float64) @ xn
    want = reference.silu(gu[:ffn]) * gu[ffn:]
    np.testing.assert_allclose(out[3], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("tpr,qpi,rpt,wg,spw", [(1, 8, 4, 64, 16), (4, 1, 1, 32, 8), (2, 2, 3, 128, 64)])
def test_head_q8_0_argmax_stage1(lab_page, tpr, qpi, rpt, wg, spw):
    """spw=64 > the real subgroups per workgroup on any adapter: the extra parts must never win."""
    d, rows = 128, 77
    x = RNG.standard_normal(d).astype(np.float32)
    nw = RNG.uniform(0.5, 1.5, d).astype(np.float32)
    xn = reference.rmsnorm(x, nw, EPS)
    raw, _ = q8_0(rows, d)
    blocks = raw.reshape(rows, d // 32, 34)
    blocks[20, :, 2:] = np.where(xn > 0, 127, -127).astype(np.int8).reshape(-1, 32).view(np.uint8)
    blocks[50] = blocks[20]                           # a tie for the maximum: row 20 must win
    dq = blocks[..., 0:2].copy().view("<f2").astype(np.float32)
    e = (dq * blocks[..., 2:].view(np.int8).astype(np.float32)).reshape(rows, d)
    nwg = -(-rows // (wg // tpr * rpt))
    stale = np.tile(np.array([1e30, 3], np.float32), nwg * spw)  # parts left over from an earlier token
    stale.view(np.uint32)[1::2] = 3
    out = run_kernel(lab_page, "head_q8_0_argmax.wgsl",
                     {"D": d, "ROWS": rows, "EPS": EPS, "TPR": tpr, "QPI": qpi, "RPT": rpt, "WG": wg, "SPW": spw},
                     [x, nw, blocks.reshape(-1), np.zeros(rows, np.float32), stale], (nwg, 1, 1), [3, 4])
    assert_dot_close(out[3], e, xn)
    parts = out[4].view(np.uint32).reshape(-1, 2)
    vals = parts[:, 0].view(np.float32)
    assert vals.max() == out[3].max()                  # no stale part survives
    best = np.lexsort((parts[:, 1], -vals))[0]
    assert parts[best, 1] == 20 and out[3][20] == out[3][50]   # lowest index among equal maxima
    for g in range(nwg):                               # each workgroup's parts cover exactly its rows
        chunk = out[3][g * (wg // tpr * rpt):(g + 1) * (wg // tpr * rpt)]
        mine = vals[g * spw:(g + 1) * spw]
        assert mine.max() == chunk.max()


@pytest.mark.parametrize("tpr,qpi,wg,rope_dim,pos", [(1, 4, 64, 32, 5), (2, 2, 32, 16, 0), (4, 1, 128, 32, 9)])
def test_attn_block_fused(lab_page, tpr, qpi, wg, rope_dim, pos):
    d, heads, kvh, hd, ctx = 128, 4, 2, 32, 12
    q_dim, kv = heads * hd, kvh * hd
    raw, w = q4_1(q_dim + 2 * kv, d, seed=wg + pos)
    x = RNG.standard_normal(d).astype(np.float32)
    nw = RNG.uniform(0.5, 1.5, d).astype(np.float32)
    kc = RNG.standard_normal((ctx, kvh, hd)).astype(np.float32)
    vc = RNG.standard_normal((ctx, kvh, hd)).astype(np.float32)
    table = rope_table(ctx, 10000.0, rope_dim)
    consts = {"D": d, "HEADS": heads, "KV_HEADS": kvh, "HEAD_DIM": hd, "ROPE_DIM": rope_dim, "EPS": EPS,
              "TPR": tpr, "QPI": qpi, "WG": wg, "PACC": max(wg, hd)}
    out = run_kernel(lab_page, "attn_block_fused.wgsl", consts,
                     [x, nw, raw, table, kc, vc, np.zeros(heads * ctx, np.float32), np.zeros(q_dim, np.float32)],
                     (heads, 1, 1), [5, 6, 8], step={"pos": pos, "slot": 1})
    qkv = (w.astype(np.float64) @ reference.rmsnorm(x, nw, EPS)).astype(np.float32)
    q = reference.rope(qkv[:q_dim].reshape(heads, hd), pos, 10000.0, rope_dim)
    k = reference.rope(qkv[q_dim:q_dim + kv].reshape(kvh, hd), pos, 10000.0, rope_dim)
    v = qkv[q_dim + kv:].reshape(kvh, hd)
    got_k, got_v = out[5].reshape(ctx, kvh, hd), out[6].reshape(ctx, kvh, hd)
    np.testing.assert_allclose(got_k[pos], k, rtol=1e-4, atol=1e-4 * np.abs(k).max())
    np.testing.assert_allclose(got_v[pos], v, rtol=1e-4, atol=1e-4 * np.abs(v).max())
    others = [t for t in range(ctx) if t != pos]
    np.testing.assert_array_equal(got_k[others], kc[others])     # only position pos is written
    np.testing.assert_array_equal(got_v[others], vc[others])
    kc[pos], vc[pos] = k, v
    want = reference.attention(q, kc[:pos + 1], vc[:pos + 1]).reshape(-1)
    np.testing.assert_allclose(out[8], want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
