"""The plan registry of issue 4: adds `fused`, `gpu_loop` and `resident` to app.llm.model.PLANS (importing
this module is enough) and says, per plan, what one token costs in dispatches, submits and readbacks.

| plan          | replay       | dispatches/token | submits/token            | readbacks/token |
|---------------|--------------|------------------|--------------------------|-----------------|
| op_by_op      | sequential   | 485              | 485 + 1 (readback copy)  | 1               |
| token_encoder | one_encoder  | 485              | 1 + 1                    | 1               |
| token_pass    | one_pass     | 485              | 1 + 1                    | 1               |
| fused         | one_pass     | 123              | 1 + 1                    | 1               |
| gpu_loop (K)  | one_pass     | 123              | 1 / K (copy in the block)| 1 / K           |
| resident (K)  | one_pass     | 62 + 1/K         | 1 / K (copy in the block)| 1 / K           |
(SmolLM2-135M: 30 layers.)  resident: 2 per layer (3 with split, the GPU default: 92 + 1/K) + FINAL + head,
and one argmax tail per block of K; its dispatches after the first of a token encode only dispatchWorkgroups
(app/llm/resident.py).  A PlanSpec may carry two optional attributes that app/llm/generate.py
honours: `prepare(model)` (async: compile extra kernels before recording) and `generate(...)` (a plan
with its own token loop).  Pure parts: ORDER, declared_costs.
"""
from __future__ import annotations

from . import fused, gpu_loop, resident
from .model import PLANS, PlanSpec, dispatch_counts

ORDER = ("op_by_op", "token_encoder", "token_pass", "fused", "gpu_loop", "resident")
LOOP_PLANS = ("gpu_loop", "resident")        # K tokens per submit: their own token loop, parameter k


def declared_costs(plan: str, n_layers: int, k: int = gpu_loop.DEFAULT_K, split: int = 0) -> dict:
    """What the plan declares one decoded token costs (split: resident's 3-step layout)."""
    if plan in ("op_by_op", "token_encoder", "token_pass"):
        d = dispatch_counts(n_layers, True)
        submits = (d if plan == "op_by_op" else 1) + 1
        return {"dispatches_per_token": d, "submits_per_token": submits, "readbacks_per_token": 1}
    d = fused.dispatch_count(n_layers, True)
    if plan == "fused":
        return {"dispatches_per_token": d, "submits_per_token": 2, "readbacks_per_token": 1}
    if plan == "gpu_loop":       # one submit a block: its pass and its readback copy in one command buffer
        return {"dispatches_per_token": d, "submits_per_token": 1 / k, "readbacks_per_token": 1 / k}
    if plan == "resident":
        return {"dispatches_per_token": resident.expected_dispatches(n_layers, k, 1, split),
                "submits_per_token": 1 / k, "readbacks_per_token": 1 / k}
    raise ValueError(f"unknown plan {plan!r}; choose one of {', '.join(ORDER)}")


async def _gpu_loop_generate(lab, m, prompt_ids, max_new, driver="python", on_token=None, logits_out=None, k=None,
                             ramp=None, depth=None):
    return await gpu_loop.generate(lab, m, prompt_ids, max_new, driver, on_token, logits_out, k, ramp, depth)


async def _resident_generate(lab, m, prompt_ids, max_new, driver="python", on_token=None, logits_out=None, k=None,
                             ramp=None, depth=None):
    return await resident.generate(lab, m, prompt_ids, max_new, driver, on_token, logits_out, k, ramp, depth)


def _resident_record(m, slot=0, logits=True):
    return resident.block_plan(m, 1, logits, logits)


def _resident_declared(cfg, logits=True):
    """One single-token block of the 2-step layout.  Runs do not use this: the plan has its own loop, whose
    expected count comes from the prepared tuning (resident.Resident.expected), split or not."""
    return resident.dispatch_count(cfg.n_layers, logits) + (1 if logits else 0)


def _register() -> None:
    f = PlanSpec("one_pass", fused.record_fused, fused.declared,
                 "fused kernels (norm+QKV+RoPE+KV+attention, matvec+residual, norm+gate/up+SiLU, head+argmax), "
                 "one pass per token")
    f.prepare = fused.prepare
    g = PlanSpec("one_pass", fused.record_fused, fused.declared,
                 "fused kernels, K tokens per submit, argmax and the next token stay on the GPU, one readback per K")
    g.prepare = fused.prepare
    g.generate = _gpu_loop_generate
    g.warm = gpu_loop.warm
    r = PlanSpec("one_pass", _resident_record, _resident_declared,
                 "2 dispatches per layer (attention + its output-projection slice; FFN block + its down-projection "
                 "slice), a GPU step counter so the CPU encodes only dispatch calls, K tokens per submit")
    r.prepare = resident.prepare
    r.generate = _resident_generate
    r.warm = resident.warm
    PLANS["fused"] = f
    PLANS["gpu_loop"] = g
    PLANS["resident"] = r


_register()


def best(dev) -> str:
    """The plan to put forward as ours on this adapter (the compare suite's main row).

    On a real GPU, the most amortized plan the adapter supports (resident and gpu_loop need `subgroups`;
    on the H200 resident 910 tok/s, gpu_loop 611: results/2026-12-03-nvidia-h200-final).  On a
    fallback (CPU) adapter kernel time dominates and our fused kernels, shaped for GPUs, run ~2.6× slower
    than the per-op ones (measured: results/2026-12-02-swiftshader-amortize), so token_pass is our fastest
    there.  The choice is by measurement on each kind of adapter, not by a rule about dispatch counts.
    """
    info = getattr(dev, "adapter_info", None) or {}
    if info.get("isFallbackAdapter"):
        return "token_pass"
    for name in reversed(ORDER):
        if name in ("fused", "gpu_loop") and fused.supported(dev):
            continue  # supported() returns the reason it is NOT supported, None when it is
        if name == "resident" and resident.supported_why(dev.features, info):
            continue
        return name
    return "op_by_op"
