"""The `fused` plan: one token in 4 dispatches per layer (+ embedding, head, argmax), same math.

    await prepare(model)                      # compile the fused kernels once (error scopes, messages)
    plan = record_fused(model, slot, logits)  # an app.plan.Plan, replayed in one pass per token

Per token (reads like record_forward in model.py, one line per dispatch):
  embed                     x = E[tokens[slot]]                                   (the per-op kernel)
  per layer:
    attn_block_fused        xb = attention(rope(Wqkv·rmsnorm(x))), K/V[pos] written   (8 per-op → 1)
    matvec_q4_1_add         x += Wo·xb                                            (2 → 1)
    ffn_gate_up_silu        hb3 = silu(Wgate·rmsnorm(x)) · (Wup·rmsnorm(x))       (4 → 1)
    matvec_q4_1_add         x += Wdown·hb3                                        (2 → 1)
  head_q8_0_argmax          logits = E·rmsnorm(x); parts = per-workgroup argmax   (3 → 1)
  argmax.wgsl stage2        tokens[slot + 1] = argmax(parts)                      (the per-op kernel)
That is 1 + 4·n_layers + 2 = 123 dispatches for SmolLM2's 30 layers (the per-op plan has 485).

The fused kernels reduce with subgroup operations (no barrier per row), so the plan needs the WebGPU
`subgroups` feature; `supported(dev)` says why not when it is missing.  Buffers are the model's own
(x, xb, hb3, logits, att, KV cache, tokens, steps), plus one small `fused_parts` buffer.
Pure parts (CPython): dispatch_count, FusedTuning, check_contiguous.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.adapter import is_cpu

from .kernels import STEP_STRIDE

PARTS_KEY = "fused_parts"
OVERRIDES: dict = {}           # FusedTuning fields to override (URL parameter fused_tuning, for tuning runs)


def dispatch_count(n_layers: int, logits: bool = True) -> int:
    """Declared dispatches per token: embed + 4 per layer (+ head and argmax when logits are needed)."""
    return 1 + 4 * n_layers + (2 if logits else 0)


def declared(cfg, logits: bool = True) -> int:
    return dispatch_count(cfg.n_layers, logits)


@dataclass(frozen=True)
class FusedTuning:
    """Workgroup shapes (see each kernel's header).  tpr = invocations sharing a row group (they meet in a
    subgroup butterfly), rpt = rows per group (x is read once for all of them), qpi = quant words per
    work item.  CPU adapters (SwiftShader, subgroups of 4): one invocation walks 4 whole rows, no
    barriers outside the attention block — barriers and repeated loads are what cost there.  GPUs:
    a subgroup (up to 32) shares a row for coalesced reads; the head uses 8 per row × 2 rows so its
    argmax parts stay few; the attention block is only HEADS workgroups wide, so it gets the largest
    workgroup the device allows (up to 1024)."""
    wg: int = 64
    tpr: int = 1
    rpt: int = 4
    qpi: int = 4               # Q4_1 nibble words per work item (4 = whole blocks)
    head_wg: int = 64
    head_tpr: int = 1
    head_rpt: int = 4
    head_qpi: int = 8          # Q8_0 quads per work item (8 = whole block pairs)
    attn_wg: int = 64
    attn_tpr: int = 1
    attn_qpi: int = 4
    sg_min: int = 4            # smallest subgroup size the adapter uses

    @classmethod
    def for_adapter(cls, info: dict, limits: dict | None = None) -> "FusedTuning":
        """Defaults from a sweep on an NVIDIA H200 (results/…-amortize-h200): the attention block, one
        workgroup per head, went from 46 to 31 µs per layer with 1024 invocations instead of 256."""
        sg = int(info.get("subgroupMinSize") or 4)
        if is_cpu(info):
            return cls(sg_min=sg)
        attn = min(1024, int((limits or {}).get("maxComputeInvocationsPerWorkgroup") or 256))
        return cls(wg=128, tpr=min(32, sg), rpt=1, qpi=1, head_wg=256, head_tpr=min(8, sg), head_rpt=2,
                   head_qpi=2, attn_wg=attn, attn_tpr=min(32, sg), attn_qpi=1, sg_min=sg)

    def groups(self, rows: int) -> int:
        """Workgroups of a Q4_1 matvec kernel over rows."""
        return -(-rows // (self.wg // self.tpr * self.rpt))

    def head_groups(self, rows: int) -> int:
        return -(-rows // (self.head_wg // self.head_tpr * self.head_rpt))

    def head_parts(self, rows: int) -> int:
        return self.head_groups(rows) * (self.head_wg // self.sg_min)


def check_contiguous(refs: dict, names: list[str]) -> tuple[str, int, int]:
    """(buffer key, offset, total size) of tensors laid out back to back in one buffer, so a kernel can
    bind them as one matrix; ValueError naming the first gap otherwise."""
    first = refs[names[0]]
    end = first.offset + first.size
    for n in names[1:]:
        r = refs[n]
        if r.buffer != first.buffer or r.offset != end:
            raise ValueError(f"the fused kernels need {', '.join(names)} back to back in one GPU buffer; "
                             f"{n} is at {r.buffer}+{r.offset}, expected {first.buffer}+{end}")
        end = r.offset + r.size
    return first.buffer, first.offset, end - first.offset


def supported(dev) -> str | None:
    """None when the fused kernels can run on dev, else the reason (shown as "unsupported here")."""
    if "subgroups" not in dev.features:
        return "the fused kernels use subgroup operations and this adapter lacks the WebGPU 'subgroups' feature"
    return None


# ------------------------------------------------------------------------------------------ browser
async def prepare(m) -> None:
    """Compile the fused kernels into m.kernels (once) and allocate the argmax parts buffer."""
    from app.gpu import COPY_SRC, STORAGE, GPUError
    from .kernels import load_kernel
    import dataclasses
    t = dataclasses.replace(FusedTuning.for_adapter(m.dev.adapter_info, m.dev.limits), **OVERRIDES)
    if "f_attn" in m.kernels and PARTS_KEY in m.act and getattr(m, "fused_tuning", None) == t:
        return
    why = supported(m.dev)
    if why:
        raise GPUError(f"the fused plans are unsupported here: {why}")
    c = m.cfg
    if PARTS_KEY in m.act:                      # another tuning: new kernels, parts size and plans
        m.act.pop(PARTS_KEY).destroy()
        m.forget_plans()
    m.fused_tuning = t
    q_dim, nparts = c.n_heads * c.head_dim, t.head_parts(c.vocab)
    mv = {"TPR": t.tpr, "QPI": t.qpi, "RPT": t.rpt, "WG": t.wg}
    specs = {
        "f_attn": ("attn_block_fused.wgsl", "main", {"D": c.d_model, "HEADS": c.n_heads, "KV_HEADS": c.n_kv_heads,
                                                     "HEAD_DIM": c.head_dim, "ROPE_DIM": c.rope_dim, "EPS": c.rms_eps,
                                                     "TPR": t.attn_tpr, "QPI": t.attn_qpi, "WG": t.attn_wg,
                                                     "PACC": max(t.attn_wg, c.head_dim)}),
        "f_o": ("matvec_q4_1_add.wgsl", "main", {"ROWS": c.d_model, "COLS": q_dim, **mv}),
        "f_ffn": ("ffn_gate_up_silu.wgsl", "main", {"D": c.d_model, "FFN": c.ffn, "EPS": c.rms_eps, **mv}),
        "f_down": ("matvec_q4_1_add.wgsl", "main", {"ROWS": c.d_model, "COLS": c.ffn, **mv}),
        "f_head": ("head_q8_0_argmax.wgsl", "main", {"D": c.d_model, "ROWS": c.vocab, "EPS": c.rms_eps,
                                                     "WG": t.head_wg, "TPR": t.head_tpr, "RPT": t.head_rpt,
                                                     "QPI": t.head_qpi, "SPW": t.head_wg // t.sg_min}),
        "f_argmax": ("argmax.wgsl", "stage2", {"N": c.vocab, "PARTS": nparts, "WG": min(256, t.head_wg)}),
    }
    modules: dict = {}
    for name, (file, entry, consts) in specs.items():
        m.kernels[name] = await load_kernel(m.dev, file, entry, consts, name, modules)
    if PARTS_KEY not in m.act:
        size = 8 * nparts
        m.act[PARTS_KEY] = await m.dev.checked(f"creating the GPU buffer {PARTS_KEY}", m.dev.create_buffer,
                                               size, STORAGE | COPY_SRC, PARTS_KEY)
        m.memory["fused_scratch"] = size


def _joined(m, names: list[str]):
    key, off, size = check_contiguous(m.refs, names)
    return (m.weights[key], off, size)


def record_fused(m, slot: int = 0, logits: bool = True):
    """One token's dispatches with the fused kernels (see the module docstring)."""
    from app.plan import Plan
    if "f_attn" not in m.kernels:
        raise RuntimeError("the fused kernels are not compiled yet: await app.llm.fused.prepare(model) first")
    c, a, P = m.cfg, m.act, Plan()
    t: FusedTuning = m.fused_tuning
    step, offsets = a["steps"], [slot * STEP_STRIDE]

    def d(kernel, key, entries, groups):
        k = m.kernels[kernel]
        P.add(k.pipeline, [m.group(kernel, key, entries)], (groups,), offsets if k.dynamic else None, key)

    rows = t.groups                      # workgroups of a matvec over n rows
    d("embed", "embed", [step, a["tokens"], m.w("token_embd.weight"), a["x"]], -(-c.d_model // m.tuning.wg))
    for l in range(c.n_layers):
        W = lambda p: m.w(f"blk.{l}.{p}.weight")  # noqa: E731
        qkv = _joined(m, [f"blk.{l}.attn_{p}.weight" for p in "qkv"])
        gate_up = _joined(m, [f"blk.{l}.ffn_gate.weight", f"blk.{l}.ffn_up.weight"])
        d("f_attn", f"f{l}.attn", [step, a["x"], W("attn_norm"), qkv, a["rope"], m.kv("k_cache", l),
                                   m.kv("v_cache", l), a["att"], a["xb"]], c.n_heads)    # xb = attn(x), K/V[pos]
        d("f_o", f"f{l}.o", [W("attn_output"), a["xb"], a["x"]], rows(c.d_model))        # x += Wo·xb
        d("f_ffn", f"f{l}.ffn", [a["x"], W("ffn_norm"), gate_up, a["hb3"]], rows(c.ffn))  # hb3 = silu(g)·u
        d("f_down", f"f{l}.down", [W("ffn_down"), a["hb3"], a["x"]], rows(c.d_model))    # x += Wdown·hb3
    if logits:
        head = "output.weight" if "output.weight" in m.refs else "token_embd.weight"
        d("f_head", "f.head", [a["x"], m.w("output_norm.weight"), m.w(head), a["logits"], a[PARTS_KEY]],
          t.head_groups(c.vocab))
        d("f_argmax", "f.argmax", [step, a["logits"], a[PARTS_KEY], a["tokens"]], 1)    # tokens[slot+1]
    return P
