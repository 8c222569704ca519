"""The model kept for the page session: load once (fetch → sha256 → parse → upload → compile), then
only grow the KV cache when a run needs a longer context.

    model = await get_model(lab, ctx_len)            # cached per model URL; progress on the page
    model = await get_model(lab, ctx_len, url=..., budget_mb=...)   # another GGUF; a simulated GPU size

Memory: weights stay quantized (see loader.py); the KV cache holds exactly the requested context
(prompt + max new tokens) rather than the model's 8192, and is reallocated only to grow.
URL parameters: model=PATH overrides the model file; gpu_budget_mb=N makes buffer creation fail as
out-of-memory once the total would pass N MB (a simulated small GPU, to exercise that message);
tuning=cpu|gpu forces one kernel shape set (model.Tuning) instead of choosing by adapter.
"""
from __future__ import annotations

import numpy as np

from .gguf import GGUFFile, load_config
from .kernels import STEP_STRIDE, load_kernel
from .loader import DEFAULT_URL, fetch_model, upload_weights, weight_layout
from .model import ARGMAX_PARTS, MAX_SLOTS, Model, Tuning
from .tokenizer import Tokenizer

_CACHE: dict = {}                   # (url, tuning) → Model (one model at a time)


def _key(lab, url: str | None, tuning: str | None) -> tuple:
    return (url or lab.params.get("model") or DEFAULT_URL, tuning or lab.params.get("tuning") or "auto")


def is_loaded(lab, url: str | None = None, tuning: str | None = None) -> bool:
    """Whether get_model(lab, …, url, tuning=tuning) would reuse a model already loaded in this page."""
    return _key(lab, url, tuning) in _CACHE


async def get_model(lab, ctx_len: int, url: str | None = None, budget_mb=None, tuning: str | None = None) -> Model:
    url, tuning = _key(lab, url, tuning)
    budget = _budget(budget_mb if budget_mb is not None else lab.params.get("gpu_budget_mb"))
    if tuning not in TUNINGS:
        raise ValueError(f"unknown tuning {tuning!r}; choose one of {', '.join(TUNINGS)}")
    m = _CACHE.get((url, tuning))
    if m is None:
        m = await load_model(lab.dev, url, lab.progress, budget, tuning)
        for old in _CACHE.values():  # only once the new one loaded: a bad file keeps the old model
            _destroy(old)
        _CACHE.clear()
        _CACHE[(url, tuning)] = m
    if ctx_len > m.cfg.ctx:
        raise ValueError(f"the run needs {ctx_len} positions but the model's context length is {m.cfg.ctx}")
    if ctx_len > m.ctx:
        lab.progress(f"allocating the KV cache for {ctx_len} positions", None)
        await allocate_context(m, ctx_len, budget)
    return m


def _budget(v) -> float | None:
    try:
        return float(v) * 1e6 if v else None
    except ValueError:
        return None


TUNINGS = ("auto", "cpu", "gpu")   # auto: by adapter; cpu/gpu force one kernel shape set (tests, comparisons)


def pick_tuning(name: str, adapter_info: dict) -> Tuning:
    if name == "auto":
        return Tuning.for_adapter(adapter_info)
    return Tuning.for_adapter({"isFallbackAdapter": name == "cpu"})


async def load_model(dev, url: str, progress, budget=None, tuning: str = "auto") -> Model:
    import js  # type: ignore
    buf, info = await fetch_model(url, lambda f, msg: progress(msg, None if f is None else 0.75 * f))
    progress("parsing the GGUF file (header, vocabulary, tensor table)", 0.76)
    g = GGUFFile(js.Uint8Array.new(buf).to_bytes())
    cfg = load_config(g)
    _check_shapes(cfg)
    tokenizer = Tokenizer.from_metadata(g.metadata)
    refs, sizes = weight_layout(g.tensors, cfg.n_layers)
    _charge(budget, sum(sizes.values()), "creating the GPU buffers for the weights")
    m = Model(dev, cfg, tokenizer, refs, {}, info, pick_tuning(tuning, dev.adapter_info))
    try:
        await upload_weights(dev, buf, refs, sizes, lambda f, msg: progress(msg, 0.78 + 0.17 * f), m.weights)
        m.memory["weights"] = sum(sizes.values())
        progress("compiling the WGSL kernels", 0.96)
        await compile_kernels(m)
        await allocate_activations(m, budget)
    except BaseException:
        _destroy(m)  # a half-loaded model must not keep GPU memory
        raise
    progress("model ready", 1.0)
    return m


def _check_shapes(cfg) -> None:
    if cfg.d_model % 64 or cfg.ffn % 32 or (cfg.n_heads * cfg.head_dim) % 32:
        raise ValueError(f"unsupported shapes for these kernels: d={cfg.d_model} (needs a multiple of 64), "
                         f"ffn={cfg.ffn}, heads×head_dim={cfg.n_heads * cfg.head_dim} (multiples of 32)")
    if cfg.head_dim > 256 or cfg.rope_dim % 2 or cfg.rope_dim > cfg.head_dim:
        raise ValueError(f"unsupported head_dim {cfg.head_dim} / rope_dim {cfg.rope_dim}")


def _charge(budget, total: int, what: str) -> None:
    from app.gpu import GPUError
    if budget is not None and total > budget:
        raise GPUError(f"out of GPU memory while {what}: {total / 1e6:.1f} MB needed, "
                       f"{budget / 1e6:.0f} MB available (simulated by the gpu_budget_mb URL parameter)")


def kernel_specs(c, t: Tuning) -> dict:
    """Kernel name → (wgsl file, entry point, pipeline constants) for a config and tuning (pure)."""
    q_dim, kv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    x8 = t.matvec == "x8"

    def mv(rows, cols, q="q4_1", head=False):
        wg, tpr = (t.head_wg, t.head_tpr) if head else (t.mv_wg, t.mv_tpr)
        if x8:
            return (f"matvec_{q}_x8.wgsl", "main", {"ROWS": rows, "COLS": cols, "WG": wg})
        return (f"matvec_{q}.wgsl", "main", {"ROWS": rows, "COLS": cols, "TPR": tpr, "WG": wg})
    return {
        "embed": ("embed_q8_0.wgsl", "main", {"COLS": c.d_model, "WG": t.wg}),
        "rmsnorm": ("rmsnorm.wgsl", "main", {"N": c.d_model, "EPS": c.rms_eps, "WG": t.red_wg}),
        "mv_q": mv(q_dim, c.d_model), "mv_kv": mv(kv, c.d_model), "mv_o": mv(c.d_model, q_dim),
        "mv_up": mv(c.ffn, c.d_model), "mv_down": mv(c.d_model, c.ffn),
        "rope_q": ("rope.wgsl", "main", {"HEADS": c.n_heads, "HEAD_DIM": c.head_dim, "ROPE_DIM": c.rope_dim,
                                         "DST_STRIDE": 0, "WG": t.wg}),
        "rope_k": ("rope.wgsl", "main", {"HEADS": c.n_kv_heads, "HEAD_DIM": c.head_dim, "ROPE_DIM": c.rope_dim,
                                         "DST_STRIDE": kv, "WG": t.wg}),
        "kv_write": ("kv_write.wgsl", "main", {"N": kv, "WG": t.wg}),
        "attention": ("attention.wgsl", "main", {"HEADS": c.n_heads, "KV_HEADS": c.n_kv_heads,
                                                 "HEAD_DIM": c.head_dim, "WG": t.red_wg}),
        "add": ("add.wgsl", "main", {"N": c.d_model, "WG": t.wg}),
        "silu_mul": ("silu_mul.wgsl", "main", {"N": c.ffn, "WG": t.wg}),
        "head": mv(c.vocab, c.d_model, "q8_0", head=True),
        "argmax1": ("argmax.wgsl", "stage1", {"N": c.vocab, "PARTS": ARGMAX_PARTS, "WG": t.red_wg}),
        "argmax2": ("argmax.wgsl", "stage2", {"N": c.vocab, "PARTS": ARGMAX_PARTS, "WG": t.red_wg}),
    }


async def compile_kernels(m: Model) -> None:
    specs = kernel_specs(m.cfg, m.tuning)
    modules, same = {}, {}
    for name, (file, entry, consts) in specs.items():
        key = (file, entry, tuple(sorted(consts.items())))
        if key not in same:  # e.g. mv_q and mv_o are the same pipeline when heads·head_dim = d
            same[key] = await load_kernel(m.dev, file, entry, consts, name, modules)
        m.kernels[name] = same[key]


async def _buffer(m: Model, name: str, size: int, usage: int, budget=None):
    _charge(budget, sum(m.memory.values()) + size, f"creating the GPU buffer {name} ({size / 1e6:.1f} MB)")
    buf = await m.dev.checked(f"creating the GPU buffer {name} ({size / 1e6:.1f} MB)",
                              m.dev.create_buffer, size, usage, name)
    m.act[name] = buf
    return buf


async def allocate_activations(m: Model, budget=None) -> None:
    from app.gpu import COPY_DST, COPY_SRC, STORAGE, UNIFORM
    c = m.cfg
    q_dim, kv = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    sizes = {"x": c.d_model, "xb": max(c.d_model, q_dim), "xb2": c.d_model, "q": q_dim, "qr": q_dim,
             "k": kv, "v": kv, "hb": c.ffn, "hb2": c.ffn, "hb3": c.ffn, "logits": c.vocab, "parts": 2 * ARGMAX_PARTS}
    total = 0
    for name, n in sizes.items():
        await _buffer(m, name, 4 * n, STORAGE | COPY_SRC | COPY_DST, budget)
        total += 4 * n
    await _buffer(m, "tokens", 4 * (MAX_SLOTS + 1), STORAGE | COPY_SRC | COPY_DST, budget)
    await _buffer(m, "steps", STEP_STRIDE * MAX_SLOTS, UNIFORM | COPY_DST, budget)
    m.memory["activations"] = total + 4 * (MAX_SLOTS + 1) + STEP_STRIDE * MAX_SLOTS


def rope_table(ctx: int, base: float, rope_dim: int) -> np.ndarray:
    """(ctx, rope_dim/2, 2) float32 cos/sin, computed in float64 exactly like reference.rope_tables."""
    inv_freq = float(base) ** (-np.arange(0, rope_dim, 2, dtype=np.float64) / rope_dim)
    theta = np.arange(ctx, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.stack([np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)], axis=-1)


async def allocate_context(m: Model, ctx: int, budget=None) -> None:
    """(Re)allocate everything sized by the context: KV cache, attention scores, RoPE table."""
    from app.gpu import COPY_DST, COPY_SRC, STORAGE
    c = m.cfg
    for name in ("k_cache", "v_cache", "att", "rope"):
        if name in m.act:
            m.act.pop(name).destroy()
    m.memory.pop("kv_cache", None)
    m.memory.pop("context_scratch", None)
    m.forget_plans()  # bind groups point at the old buffers
    m.ctx = 0
    per_cache = c.n_layers * ctx * c.n_kv_heads * c.head_dim * 4
    limit = m.dev.limits.get("maxBufferSize")
    if limit and per_cache > limit:
        raise ValueError(f"a {ctx}-position KV cache needs {per_cache / 1e6:.0f} MB per buffer, more than this "
                         f"GPU's maxBufferSize ({limit / 1e6:.0f} MB); ask for fewer tokens")
    for name in ("k_cache", "v_cache"):
        await _buffer(m, name, per_cache, STORAGE | COPY_SRC | COPY_DST, budget)
    table = rope_table(ctx, c.rope_base, c.rope_dim)
    await _buffer(m, "att", 4 * c.n_heads * ctx, STORAGE, budget)
    await _buffer(m, "rope", table.nbytes, STORAGE | COPY_DST, budget)
    m.dev.write_buffer(m.act["rope"], 0, table)
    m.memory["kv_cache"] = 2 * per_cache
    m.memory["context_scratch"] = 4 * c.n_heads * ctx + table.nbytes
    m.ctx = ctx


def _destroy(m: Model) -> None:
    for buf in list(m.weights.values()) + list(m.act.values()):
        buf.destroy()
