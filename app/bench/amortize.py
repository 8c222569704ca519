"""The amortize suite: every plan × driver, the isolation experiment and a small dispatch-cost
measurement, all in one browser session, so the numbers can be compared with each other.

Order: (1) per-dispatch cost of the dispatch suite's counter kernel (app.bench.dispatch) in the
sequential, one_encoder and one_pass modes, Python and JS drivers; (2) the isolation experiment;
(3) the model, every plan × driver, `runs` times round-robin (so drift hits every plan alike), same
prompt and max tokens.  Every plan's greedy ids must equal op_by_op's.

URL parameters: quick=1, prompt, chat=1, max_new_tokens, runs, k (gpu_loop, resident), plans (comma list),
drivers (comma list), skip_isolation=1, skip_per_dispatch=1 (tuning runs), fused_tuning / resident_tuning
(JSON overrides of the kernels' shapes), profile=1.  The pure summary lives in app/bench/amortize_report.py.
"""
from __future__ import annotations

from app.adapter import is_cpu
from app.bench import amortize_report as R
from app.bench import isolation
from app.params import TRUE, whole_number_or

DISPATCH_NS = (1, 16, 64, 256)
MODE_OF = {"op_by_op": "sequential", "token_encoder": "one_encoder", "token_pass": "one_pass",
           "fused": "one_pass", "gpu_loop": "one_pass", "resident": "one_pass"}


def settings(params: dict) -> dict:
    """The suite's knobs from URL/form strings; ValueError with a message for the page."""
    from app.llm.gpu_loop import parse_depth, parse_k, parse_ramp
    from app.llm.plans import ORDER
    quick = str(params.get("quick", "")).lower() in TRUE
    out = {"quick": quick, "prompt": params.get("prompt") or R.DEFAULT_PROMPT,
           "chat": str(params.get("chat", "")).lower() in TRUE, "k": parse_k(params.get("k")),
           "ramp": parse_ramp(params.get("ramp")),
           "depth": parse_depth(params.get("depth")),
           "max_new": _int(params, "max_new_tokens", 8 if quick else 32, 1, 512),
           "runs": _int(params, "runs", 2 if quick else 5, 1, 50),
           "plans": _names(params.get("plans"), ORDER, "plan"),
           "drivers": _names(params.get("drivers"), ("python", "js"), "driver"),
           "isolation": str(params.get("skip_isolation", "")).lower() not in TRUE}
    if not str(out["prompt"]).strip():
        raise ValueError("the prompt is empty: type some text for the model to continue")
    return out


def _int(params, key, default, lo, hi) -> int:
    return whole_number_or(params.get(key), default, lo, hi, key)


def _names(raw, allowed, what) -> list[str]:
    if raw is None or not str(raw).strip():
        return list(allowed)
    names = [s.strip() for s in str(raw).split(",") if s.strip()]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {bad[0]!r}; choose from {', '.join(allowed)}")
    return names


# ------------------------------------------------------------------------------------------ browser
async def per_dispatch_costs(lab, quick: bool) -> dict:
    """µs per extra dispatch (least-squares slope over N) of the dispatch suite's own counter kernel."""
    from app.bench import dispatch as D
    from app.bench import dispatch_model as M
    dev = lab.dev
    rig = await D.make_rig(dev, "f32", DISPATCH_NS)
    series = [(mode, "f32", drv) for mode in ("sequential", "one_encoder", "one_pass") for drv in ("python", "js")]
    samples = {s: {} for s in series}
    try:
        for mode, _, drv in series:
            await D.untimed(dev, rig, max(DISPATCH_NS), mode, drv)
        reps = 3 if quick else 8
        for r in range(reps):
            lab.check_cancel()
            lab.progress(f"amortize: per-dispatch cost, round {r + 1}/{reps}", None)
            for s in series:
                for n in DISPATCH_NS:
                    samples[s].setdefault(n, []).append(await D.timed_rep(dev, rig, n, s[0], s[2]))
    finally:
        rig.buf.destroy()
    _, fits = M.summarize(samples)
    return R.per_dispatch(fits, "app.bench.dispatch: f32 counter kernel, slope of µs over N = 1..256, this session")


async def run_plans(lab, cfg: dict, per_dispatch: dict) -> list[dict]:
    """Every plan × driver: one untimed warm-up, then `runs` timed rounds, round-robin.  The warm-up is a
    whole run of the timed shape on a real GPU (its clocks ramp up over tens of ms: on the H200 the first
    run after a 1-token warm-up was up to 4x slower than the next), one token on a CPU adapter."""
    from app.llm.model import PLANS
    from app.llm.session import get_model
    import app.llm.plans  # noqa: F401 - registers fused and gpu_loop
    m = await get_model(lab, 0)
    text = m.tokenizer.chat_prompt(cfg["prompt"]) if cfg["chat"] else cfg["prompt"]
    ids = m.tokenizer.encode(text)
    if len(ids) + cfg["max_new"] > m.cfg.ctx:
        raise ValueError(f"prompt ({len(ids)} tokens) + {cfg['max_new']} new tokens exceeds the context {m.cfg.ctx}")
    m = await get_model(lab, len(ids) + cfg["max_new"])
    combos = [(p, d) for p in cfg["plans"] for d in cfg["drivers"]]
    runs = {c: [] for c in combos}
    unsupported = {}
    total = (cfg["runs"] + 1) * len(combos)
    full_warm = not is_cpu(m.dev.adapter_info)
    for r in range(-1, cfg["runs"]):          # round -1: untimed warm-up (first use, clocks), discarded
        for i, (plan, driver) in enumerate(combos):
            lab.check_cancel()
            if plan in unsupported:
                continue
            what = "warm-up" if r < 0 else f"run {r + 1}/{cfg['runs']}"
            lab.progress(f"amortize: {plan} ({driver}) {what}", ((r + 1) * len(combos) + i) / total)
            try:
                if getattr(PLANS[plan], "prepare", None):
                    await PLANS[plan].prepare(m)
            except Exception as e:  # noqa: BLE001 - e.g. no subgroups: this plan is unsupported here
                unsupported[plan] = str(e)
                continue
            short = r < 0 and not full_warm
            from app.gpu import Unsupported
            try:
                res = await _generate(lab, m, plan, driver, ids[-1:] if short else ids, 1 if short else cfg["max_new"],
                                      cfg)
            except Unsupported as e:              # found only by running (resident persist=1 without co-residency)
                unsupported[plan] = str(e)
                continue
            if r >= 0:
                runs[(plan, driver)].append(res)
            elif getattr(PLANS[plan], "warm", None):
                PLANS[plan].warm(m, len(ids), cfg["max_new"], cfg["k"], cfg["ramp"])
    return R.plan_rows(runs, per_dispatch, MODE_OF, m.cfg.n_layers, cfg["k"], unsupported)


async def _generate(lab, m, plan, driver, ids, max_new, cfg) -> dict:
    from app.llm.generate import check_request, generate
    from app.llm.model import PLANS
    check_request(m, ids, max_new)
    if getattr(PLANS[plan], "generate", None):             # the K-token loops (gpu_loop, resident)
        return await PLANS[plan].generate(lab, m, ids, max_new, driver, k=cfg["k"], ramp=cfg["ramp"],
                                                depth=cfg["depth"])
    return await generate(lab, m, ids, max_new, plan, driver)


async def run(lab, params: dict) -> dict:
    from app.gpu import WebGPUUnavailable
    if lab.dev is None:
        raise WebGPUUnavailable(lab.gpu_error or "WebGPU is not available in this browser.")
    cfg = settings(params)
    set_tuning(params)
    if str(params.get("skip_per_dispatch", "")).lower() in TRUE:     # tuning runs: plans only
        per = {"skipped": "skip_per_dispatch=1: the overhead column is not estimated in this run"}
    else:
        per = await per_dispatch_costs(lab, cfg["quick"])
    iso = None
    if cfg["isolation"]:
        iso = await isolation.run(lab.dev, quick=cfg["quick"], per_dispatch=per,
                                  progress=lambda msg, f: lab.progress(msg, None), check_cancel=lab.check_cancel)
    rows = await run_plans(lab, cfg, per)
    sec = R.section(rows, iso, per, cfg)
    if str(params.get("profile", "")).lower() in TRUE:
        sec["kernel_profile"] = await _kernel_profile(lab, cfg)
    sec.update(tuning_overrides())
    lab.progress("amortize: done", 1.0)
    return sec


async def _kernel_profile(lab, cfg) -> dict:
    """GPU ms per kernel kind for one token of each plan (timestamps between dispatches), or why not."""
    if "chromium-experimental-timestamp-query-inside-passes" not in lab.dev.features:
        return {"status": "unsupported", "reason": "adapter lacks timestamps inside passes"}
    plans = [p for p in ("fused", "token_pass", "resident") if p in cfg["plans"]] or ["fused"]
    try:
        from app.bench.kernel_profile import gpu_profile
        return {"status": "measured", "runs": await gpu_profile(lab, {"plans": ",".join(plans * 2)})}
    except Exception as e:  # noqa: BLE001 - an extra: report why, keep the section
        return {"status": "failed", "reason": str(e)}


def set_tuning(params: dict) -> None:
    """fused_tuning={"wg": 16, ...} and resident_tuning={"wg": 512, ...} (JSON) override the fused and
    resident kernels' shapes, for tuning runs; copy_apart=1 gives the block loops' readback copies a submit of
    their own (app.llm.gpu_loop.parse_copy_apart), for A/B runs; poke=N pokes every N µs while the last readback
    is awaited (app.llm.gpu_loop.parse_poke; poke_with=write|submit, parse_poke_with); gpu_timing=0 writes no
    timestamps in the block loops (app.llm.gpu_loop.parse_gpu_timing), to see what timing costs; encode_ahead=0 encodes the first decode
    block after decode timing starts instead of during the prefill (app.llm.gpu_loop.parse_encode_ahead)."""
    from app.llm import fused, gpu_loop, resident
    gpu_loop.OPTIONS["copy_apart"] = gpu_loop.parse_copy_apart(params.get("copy_apart"))
    gpu_loop.OPTIONS["poke_us"] = gpu_loop.parse_poke(params.get("poke"))
    gpu_loop.OPTIONS["poke_with"] = gpu_loop.parse_poke_with(params.get("poke_with"))
    gpu_loop.OPTIONS["gpu_timing"] = gpu_loop.parse_gpu_timing(params.get("gpu_timing"))
    gpu_loop.OPTIONS["encode_ahead"] = gpu_loop.parse_encode_ahead(params.get("encode_ahead"))
    _overrides(params.get("fused_tuning"), "fused_tuning", fused.FusedTuning, fused.OVERRIDES)
    _overrides(params.get("resident_tuning"), "resident_tuning", resident.ResidentTuning, resident.OVERRIDES)


def tuning_overrides() -> dict:
    """The overrides set_tuning applied, for the results section they shaped (none: {})."""
    from app.llm import fused, resident
    return {f"{name}_tuning_overrides": dict(over)
            for name, over in (("fused", fused.OVERRIDES), ("resident", resident.OVERRIDES)) if over}


def _overrides(raw, what: str, cls, target: dict) -> None:
    import dataclasses
    import json
    target.clear()
    if not raw:
        return
    try:
        want = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError:
        raise ValueError(f"{what} must be a JSON object, got {raw!r}") from None
    if not isinstance(want, dict):
        raise ValueError(f"{what} must be a JSON object, got {raw!r}")
    zero_ok = getattr(cls, "ZERO_OK", ())                  # 0 only where it is the default or explicitly allowed
    low = {f.name: 0 if f.default == 0 or f.name in zero_ok else 1 for f in dataclasses.fields(cls)}
    bad = [k for k, v in want.items()
           if k not in low or not isinstance(v, int) or isinstance(v, bool) or v < low[k]]
    if bad:
        raise ValueError(f"{what}: {bad[0]!r} is not a tuning field with a whole number (≥ 1 unless its default "
                         f"is 0 or it allows 0); fields: {', '.join(sorted(low))}")
    target.update(want)


async def self_check(lab, name: str, params: dict) -> dict:
    """Small correctness runs for the browser tests (window.dlAmortize.check)."""
    set_tuning(params)
    if name == "isolation":
        return await isolation.run(lab.dev, quick=True, sizes=params, driver=params.get("driver", "python"))
    if name == "plans":
        cfg = settings({"runs": "1", **{k: str(v) for k, v in params.items()}})
        rows = await run_plans(lab, cfg, {})
        return {"plans": rows}
    if name in ("profile", "gpu_profile", "kernel_time", "encode_cost"):
        from app.bench import kernel_profile
        return await getattr(kernel_profile, name)(lab, params)
    raise ValueError(f"unknown self-check {name!r}")
