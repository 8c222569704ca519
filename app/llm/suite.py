"""The "llm" suite: parse and check the run's parameters, load the model, generate, build the section.

Parameters (URL query in autorun, the form in the panel over the URL's): prompt, chat=1, max_new_tokens, plan,
driver, model (a GGUF path/URL; default the built-in SmolLM2), and the block loops' options and kernel overrides
that app.bench.amortize.set_tuning reads (poke, copy_apart, gpu_timing, encode_ahead, resident_tuning, ...).  Bad
values raise ValueError with a message meant for the page.  Pure helper: parse_params (CPython-testable).
"""
from __future__ import annotations

from app.params import TRUE, whole_number

DEFAULT_PROMPT = "The capital of France is"
DEFAULT_MAX_NEW = 32
MAX_NEW_LIMIT = 4096


def parse_params(params: dict, plans=None) -> dict:
    """{prompt, chat, max_new, plan, driver} from string params; ValueError on bad input."""
    plans = registered_plans() if plans is None else plans
    prompt = params.get("prompt", DEFAULT_PROMPT)
    if prompt is None or not str(prompt).strip():
        raise ValueError("the prompt is empty: type some text for the model to continue")
    raw = str(params.get("max_new_tokens", DEFAULT_MAX_NEW)).strip()
    max_new = whole_number(raw, 1, MAX_NEW_LIMIT, "max new tokens")
    plan = params.get("plan") or "token_pass"
    if plan not in plans:
        raise ValueError(f"unknown plan {plan!r}; choose one of: {', '.join(plans)}")
    driver = params.get("driver") or "python"
    if driver not in ("python", "js"):
        raise ValueError(f"unknown driver {driver!r}; choose python or js")
    return {"prompt": str(prompt), "chat": str(params.get("chat", "")).lower() in TRUE, "max_new": max_new,
            "plan": plan, "driver": driver}


def registered_plans() -> dict:
    """PLANS, including those of app.llm.plans (fused, gpu_loop) when that module is present."""
    from .model import PLANS
    try:
        from . import plans  # noqa: F401 - registers its plans on import
    except Exception as e:  # noqa: BLE001 - the per-op plans still work without them
        PLANS_ERROR.append(f"{type(e).__name__}: {e}")
    return PLANS


PLANS_ERROR: list = []   # why app.llm.plans could not be imported, if it could not


def memory_mb(memory: dict) -> dict:
    out = {k: round(v / 1e6, 3) for k, v in memory.items()}
    out["total"] = round(sum(memory.values()) / 1e6, 3)
    return out


async def run(lab, params: dict, on_token=None, logits_out=None) -> dict:
    """Run one generation and return the "llm" section."""
    from app.bench.amortize import set_tuning, tuning_overrides
    from app.gpu import WebGPUUnavailable
    from .generate import check_request, generate
    from .session import get_model
    p = parse_params(params)
    set_tuning(params)          # the block loops' options and kernel overrides: this run's, never a previous suite's
    if lab.dev is None:
        raise WebGPUUnavailable("WebGPU is not available in this browser, so the model cannot run here.")
    m = await get_model(lab, 0, params.get("model"), params.get("gpu_budget_mb"), params.get("tuning"))
    tok = m.tokenizer
    text = tok.chat_prompt(p["prompt"]) if p["chat"] else p["prompt"]
    ids = tok.encode(text)
    check_request(_Ctx(m.cfg), ids, p["max_new"])  # before the KV cache is sized for it
    m = await get_model(lab, len(ids) + p["max_new"], params.get("model"), params.get("gpu_budget_mb"),
                        params.get("tuning"))
    lab.progress(f"generating with plan {p['plan']} ({p['driver']} driver)", None)
    r = await generate(lab, m, ids, p["max_new"], p["plan"], p["driver"], on_token, logits_out)
    counted, declared = r["dispatches_per_token"], r["expected_dispatches_per_token"]
    section = {
        "model": m.info["file"], "model_sha256": m.info["sha256"], "model_verified": m.info["sha256_verified"],
        "prompt": p["prompt"], "chat": p["chat"], "max_new_tokens": p["max_new"], "prompt_token_ids": ids,
        **r,
        "dispatch_count_ok": r["generated_token_ids"] == [] or counted == declared,
        "ctx": m.ctx, "gpu_memory_mb": memory_mb(m.memory),
        "tuning": dict(vars(m.tuning)),
        "config": {k: getattr(m.cfg, k) for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim",
                                                   "ffn", "vocab", "ctx")},
        **tuning_overrides(),
    }
    lab.progress(f"generated {len(r['generated_token_ids'])} tokens ({r['stopped']})", 1.0)
    return section


class _Ctx:
    """Stand-in with the model's config and an unlimited cache, so check_request reports the context
    length error before any KV cache is allocated."""

    def __init__(self, cfg):
        self.cfg, self.ctx = cfg, cfg.ctx
