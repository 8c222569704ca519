"""SmolLM2 (llama) on WebGPU: GPU state, kernels, and the recorded forward pass of one token.

``record_forward(model, slot, logits)`` returns an app.plan.Plan holding every dispatch of one token,
built once and replayed for every token (see app/llm/generate.py).  It reads like llama2.c's forward():
one line per dispatch.  Token state lives on the GPU so any plan (and a GPU-resident loop) can replay it:
  tokens  u32 storage buffer; the embedding reads tokens[slot], argmax writes tokens[slot + 1]
  steps   uniform buffer of 256-byte slots {pos, slot}; position-dependent kernels bind it at the
          dynamic offset slot·256 (the step's only dynamic offset, in bind group 0)
For the CPU-driven plans the host writes tokens[slot] and steps[slot] before each token and reads
tokens[slot + 1] back after it.

PLANS maps a plan name to its replay mode, recorder and declared dispatch count; other modules add
plans (fused kernels, GPU loop) by adding entries.  Pure parts (CPython): PLANS' counts, Tuning,
dispatch_counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from app.adapter import is_cpu

from .kernels import STEP_STRIDE

MAX_SLOTS = 64                       # per-step uniform slots (a GPU loop encodes up to this many tokens)
LAYER_DISPATCHES = 16                # see record_forward: one per line inside the layer loop
ARGMAX_PARTS = 64                    # stage-1 workgroups of the two-stage argmax


@dataclass
class Tuning:
    """Kernel shape choices per adapter kind (the math is the same either way).

    CPU adapters (SwiftShader): every storage load is a 4-lane gather and each workgroup barrier
    switches between the workgroup's 4-lane fibers, so matvecs use the *_x8 kernels (8 rows per
    invocation, no reduction) and reduction kernels run 4-wide workgroups (one fiber: barriers are cheap).
    GPUs: TPR invocations share a row and reduce in workgroup memory; 64/128-wide workgroups."""
    matvec: str = "x8"       # "x8" (matvec_*_x8.wgsl) or "tpr" (matvec_*.wgsl)
    mv_tpr: int = 1          # threads per row ("tpr" kernels)
    mv_wg: int = 16
    head_tpr: int = 1
    head_wg: int = 16
    red_wg: int = 4          # rmsnorm, attention, argmax
    wg: int = 64             # element-wise kernels

    @classmethod
    def for_adapter(cls, info: dict) -> "Tuning":
        if is_cpu(info):
            return cls()
        return cls(matvec="tpr", mv_tpr=16, mv_wg=128, head_tpr=8, head_wg=128, red_wg=64, wg=64)

    def matvec_groups(self, rows: int, head: bool = False) -> int:
        wg, tpr = (self.head_wg, self.head_tpr) if head else (self.mv_wg, self.mv_tpr)
        per_group = 8 * wg if self.matvec == "x8" else wg // tpr
        return -(-rows // per_group)


def dispatch_counts(n_layers: int, logits: bool = True) -> int:
    """Dispatches of one token in the per-op plans: embed + 16 per layer (+ norm, head, argmax ×2)."""
    return 1 + LAYER_DISPATCHES * n_layers + (4 if logits else 0)


@dataclass
class PlanSpec:
    mode: str                     # app.plan replay mode
    record: object                # record(model, slot, logits) -> Plan
    dispatches: object            # dispatches(cfg, logits) -> declared dispatches per token
    doc: str = ""


def _per_op(cfg, logits=True):
    return dispatch_counts(cfg.n_layers, logits)


# The plans of issue 4 that use the per-op kernels; each is the same dispatch list, replayed differently.
PLANS: dict = {}


@dataclass
class Model:
    """Everything on the GPU for one model: weights, activations, KV cache, kernels, recorded plans."""
    dev: object
    cfg: object                   # gguf.ModelConfig
    tokenizer: object
    refs: dict                    # tensor name → loader.WeightRef
    weights: dict                 # buffer key → GPUBuffer
    info: dict                    # file info: url, bytes, sha256, sha256_verified
    tuning: Tuning
    kernels: dict = field(default_factory=dict)
    act: dict = field(default_factory=dict)
    ctx: int = 0                  # KV cache capacity (positions)
    memory: dict = field(default_factory=dict)
    _groups: dict = field(default_factory=dict)
    _plans: dict = field(default_factory=dict)

    def w(self, name: str):
        """(buffer, offset, size) binding of a weight tensor."""
        r = self.refs[name]
        return (self.weights[r.buffer], r.offset, r.size)

    def kv(self, which: str, layer: int):
        """(buffer, offset, size) of one layer's K or V cache (ctx positions × kv_dim floats)."""
        size = self.ctx * self.cfg.n_kv_heads * self.cfg.head_dim * 4
        return (self.act[which], layer * size, size)

    def group(self, kernel: str, key: str, entries: list):
        """Bind group for kernel with entries, built once per key (and per KV allocation)."""
        if key not in self._groups:
            self._groups[key] = self.kernels[kernel].bind(self.dev, entries, key)
        return self._groups[key]

    def plan(self, name: str, slot: int = 0, logits: bool = True):
        key = (name, slot, logits)
        if key not in self._plans:
            self._plans[key] = PLANS[name].record(self, slot, logits)
        return self._plans[key]

    def forget_plans(self) -> None:
        self._groups.clear()
        self._plans.clear()


def record_forward(m: Model, slot: int = 0, logits: bool = True):
    """One token's dispatches with the per-op kernels.  logits=False stops after the last layer (prompt
    tokens whose logits nobody reads)."""
    from app.plan import Plan
    c, a, P = m.cfg, m.act, Plan()
    step = a["steps"]
    offsets = [slot * STEP_STRIDE]

    def d(kernel, key, entries, groups):
        k = m.kernels[kernel]
        P.add(k.pipeline, [m.group(kernel, key, entries)], (groups,), offsets if k.dynamic else None, key)

    n, kv, hd, f = c.d_model, c.n_kv_heads * c.head_dim, c.head_dim, c.ffn
    t = m.tuning
    mv = t.matvec_groups  # workgroups of a matvec with that many rows
    el = lambda count: -(-count // t.wg)                  # noqa: E731 - one invocation per element
    d("embed", "embed", [step, a["tokens"], m.w("token_embd.weight"), a["x"]], el(n))  # x = E[tokens[slot]]  (d)
    for l in range(c.n_layers):
        W = lambda p: m.w(f"blk.{l}.{p}.weight")  # noqa: E731
        kc, vc = m.kv("k_cache", l), m.kv("v_cache", l)
        d("rmsnorm", f"{l}.attn_norm", [a["x"], W("attn_norm"), a["xb"]], 1)        # xb = rmsnorm(x)·w   (d)
        d("mv_q", f"{l}.q", [W("attn_q"), a["xb"], a["q"]], mv(c.n_heads * hd))     # q = Wq·xb   (heads·hd)
        d("mv_kv", f"{l}.k", [W("attn_k"), a["xb"], a["k"]], mv(kv))                # k = Wk·xb   (kv_heads·hd)
        d("mv_kv", f"{l}.v", [W("attn_v"), a["xb"], a["v"]], mv(kv))                # v = Wv·xb   (kv_heads·hd)
        d("rope_q", f"{l}.rope_q", [step, a["rope"], a["q"], a["qr"]], el(c.n_heads * hd // 2))  # qr = rope(q, pos)
        d("rope_k", f"{l}.rope_k", [step, a["rope"], a["k"], kc], el(kv // 2))      # K[pos] = rope(k, pos)
        d("kv_write", f"{l}.v_write", [step, a["v"], vc], el(kv))                   # V[pos] = v
        d("attention", f"{l}.attn", [step, a["qr"], kc, vc, a["att"], a["xb"]], c.n_heads)  # xb = attn(qr, K, V)
        d("mv_o", f"{l}.o", [W("attn_output"), a["xb"], a["xb2"]], mv(n))           # xb2 = Wo·xb   (d)
        d("add", f"{l}.res_attn", [a["x"], a["xb2"]], el(n))                        # x += xb2
        d("rmsnorm", f"{l}.ffn_norm", [a["x"], W("ffn_norm"), a["xb"]], 1)          # xb = rmsnorm(x)·w
        d("mv_up", f"{l}.gate", [W("ffn_gate"), a["xb"], a["hb"]], mv(f))           # hb = Wgate·xb   (ffn)
        d("mv_up", f"{l}.up", [W("ffn_up"), a["xb"], a["hb2"]], mv(f))              # hb2 = Wup·xb    (ffn)
        d("silu_mul", f"{l}.silu_mul", [a["hb"], a["hb2"], a["hb3"]], el(f))        # hb3 = silu(hb)·hb2
        d("mv_down", f"{l}.down", [W("ffn_down"), a["hb3"], a["xb2"]], mv(n))       # xb2 = Wdown·hb3  (d)
        d("add", f"{l}.res_ffn", [a["x"], a["xb2"]], el(n))                         # x += xb2
    if logits:
        head = "output.weight" if "output.weight" in m.refs else "token_embd.weight"
        d("rmsnorm", "out_norm", [a["x"], m.w("output_norm.weight"), a["xb"]], 1)   # xb = rmsnorm(x)·w
        d("head", "head", [m.w(head), a["xb"], a["logits"]], t.matvec_groups(c.vocab, True))  # logits = E·xb
        am = [step, a["logits"], a["parts"], a["tokens"]]
        d("argmax1", "argmax", am, ARGMAX_PARTS)                                    # parts = chunk maxima
        d("argmax2", "argmax", am, 1)                                               # tokens[slot+1] = argmax
    return P


for _name, _mode, _doc in (("op_by_op", "sequential", "one encoder and one submit per kernel (eager baseline)"),
                           ("token_encoder", "one_encoder", "one command encoder per token, one pass per kernel"),
                           ("token_pass", "one_pass", "one compute pass per token")):
    PLANS[_name] = PlanSpec(_mode, record_forward, _per_op, _doc)
