"""The "compare" suite: our engine beside wllama (llama.cpp in WebAssembly) on the same GGUF, in one page.

Rows, all with the same raw prompt, greedy decoding, max new tokens and context size (n_ctx):
  ours <best plan>, ours op_by_op            app.llm (WebGPU, our WGSL kernels)
  wllama webgpu  (n_gpu_layers 999)          labelled a GPU run only when llama.cpp logs a full offload
  wllama cpu, 1 thread / all cores           navigator.hardwareConcurrency
Each engine loads once, makes one untimed warm-up (a whole generation on a real GPU, whose clocks need it:
app.bench.amortize found first runs up to 4x slower; 1 token on a CPU adapter), then `runs` timed
generations; the row holds the median decode rate with a bootstrap CI.  Any failure stays in its row
(error + note); the rest still runs.
Params: prompt, chat, max_new_tokens, runs, quick, driver (ours), plan (ours' main row; default: the plan
registry's best for this adapter), model, fused_tuning / resident_tuning (as in the amortize suite).
"""
from __future__ import annotations

import json

import js  # type: ignore

from app.adapter import is_cpu
from app.params import TRUE, whole_number
from app.compare_report import (NO_DISPATCH_COUNT, add_comparisons, label, summarise, webgpu_label)
from app.bench.amortize_report import block_timing

QUICK_MAX_NEW, FULL_MAX_NEW = 8, 32
QUICK_RUNS, FULL_RUNS = 1, 3
MAX_RUNS = 20
FALLBACK_ORDER = ("op_by_op", "token_encoder", "token_pass")  # if app.llm.plans is missing
GLUE = "static/wllama_glue.js"
LOAD_TIMEOUT_MS = 180_000
FINISH = {"length": "max_new_tokens", "stop": "eos"}  # llama-server's finish_reason in our words


def _now() -> float:
    return float(js.performance.now())


def parse(params: dict) -> dict:
    """{prompt, chat, max_new, runs, quick, driver, plan (None: the registry's best)}; ValueError for the page."""
    from app.llm.suite import parse_params
    _registry()
    quick = str(params.get("quick", "")).lower() in TRUE
    p = {**params, "max_new_tokens": params.get("max_new_tokens") or (QUICK_MAX_NEW if quick else FULL_MAX_NEW)}
    base = parse_params(p)  # also checks a given plan against the registry
    base["plan"] = params.get("plan") or None
    raw = str(params.get("runs") or (QUICK_RUNS if quick else FULL_RUNS)).strip()
    runs = whole_number(raw, 1, MAX_RUNS, "runs")
    from app.llm.gpu_loop import parse_depth, parse_ramp
    parse_ramp(params.get("ramp"))     # the K-token loops read them from the page's parameters: check them here,
    parse_depth(params.get("depth"))   # before any engine loads, so a bad one is a message, not a failed row
    return {**base, "runs": runs, "quick": quick}


def _registry():
    """app.llm.plans (importing it registers fused and gpu_loop), or None where it is not there."""
    try:
        from app.llm import plans
        return plans
    except ImportError:
        return None


def best_plan(dev) -> str:
    """Our fastest plan per the plan registry (app.llm.plans: ORDER runs from eager to most amortized),
    skipping plans this adapter cannot run; the per-op token_pass when the registry is not there."""
    from app.llm import model
    plans = _registry()
    if plans is not None and callable(getattr(plans, "best", None)):
        return plans.best(dev)
    fused = getattr(plans, "fused", None)
    for name in reversed(getattr(plans, "ORDER", FALLBACK_ORDER)):
        needs_fused = name in ("fused", "gpu_loop")
        if name in model.PLANS and not (needs_fused and (fused is None or fused.supported(dev))):
            return name
    return "op_by_op"


def n_ctx_for(need: int) -> int:
    """The one context size every engine gets: the run's length rounded up to 256 positions."""
    return max(256, -(-need // 256) * 256)


def _row(engine, mode, threads, on_gpu, note="") -> dict:
    return {"engine": engine, "mode": mode, "threads": threads, "on_gpu": on_gpu, "decode_tok_per_s": None,
            "ttft_ms": None, "generated_token_ids": [], "agree_prefix": None, "note": note, "error": None,
            "load_ms": None, "decode_ci": None, "decode_runs": [], "ttft_runs": [], "dispatches_per_token": None}


def _finish(row: dict, results: list[dict], rate: str = "decode_tok_per_s") -> None:
    """Fold the timed runs into the row: medians, CI, ids of the first run, determinism check.  rate: the
    results' key that holds the decode rate after the first token (every engine's row uses that definition)."""
    d, t = summarise(r.get(rate) for r in results), summarise(r.get("ttft_ms") for r in results)
    row.update(decode_tok_per_s=d["median"], decode_ci=d["ci"], ttft_ms=t["median"],
               decode_runs=[r.get(rate) for r in results], ttft_runs=[r.get("ttft_ms") for r in results],
               generated_token_ids=list(results[0]["generated_token_ids"]) if results else [])
    if results and "block_lengths" in results[0]:                      # our block-loop plans
        row["block_timing_runs"] = block_timing(results)
    if any(r["generated_token_ids"] != results[0]["generated_token_ids"] for r in results[1:]):
        row["note"] = _join(row["note"], "runs generated different tokens (nondeterministic)")


# ------------------------------------------------------------------------------------ our engine
async def run_ours(lab, row: dict, plan: str, driver: str, ids: list, max_new: int, n_ctx: int, runs: int,
                   url=None) -> None:
    from app.llm import session
    from app.llm.generate import generate
    m = await session.get_model(lab, n_ctx, url)  # loaded already by run(); this only sizes the KV cache
    await generate(lab, m, ids, warm_tokens(lab, max_new), plan, driver)  # warm-up: the plan, first use, clocks
    results = []
    for i in range(runs):
        lab.check_cancel()
        lab.progress(f"compare: {label(row)} run {i + 1}/{runs}", None)
        results.append(await generate(lab, m, ids, max_new, plan, driver))
    _finish(row, results, "decode_after_first_tok_per_s")     # wllama's definition (static/wllama_glue.js)
    own = summarise(r.get("decode_tok_per_s") for r in results)
    row["decode_from_prefill_tok_per_s"], row["decode_from_prefill_ci"] = own["median"], own["ci"]
    if own["median"] is not None:
        row["note"] = _join(row["note"], f"{own['median']:.1f} tok/s counted from the prefill's end (the other "
                                         "suites' decode rate, which includes the first token's latency)")
    row["dispatches_per_token"] = results[0]["dispatches_per_token"]
    row["stopped"] = results[0]["stopped"]
    for key in ("k", "tuning"):                                         # block loops: what shaped the rate
        if key in results[0]:
            row[key] = results[0][key]


# ------------------------------------------------------------------------------------ wllama
async def glue():
    """window.dlWllama, importing static/wllama_glue.js on first use (the page does not load it)."""
    if not js.eval("window.dlWllama !== undefined"):
        await js.eval(f"import(new URL({GLUE!r}, document.baseURI).href)")
    return js.window.dlWllama


async def call(fn, opts: dict) -> dict:
    """Call a glue function with plain options; its plain result as a dict."""
    res = await fn(js.JSON.parse(json.dumps(opts)))
    return json.loads(str(js.JSON.stringify(res)))


async def run_wllama(lab, w, row: dict, caps: dict, text: str, max_new: int, n_ctx: int, runs: int,
                     n_gpu_layers: int, url: str, first: bool = False) -> None:
    timeout = 120_000 + 10_000 * max_new  # SwiftShader-era CPUs can be slow; a hang must still end
    try:
        r = await call(w.load, {"url": url, "n_ctx": n_ctx, "n_gpu_layers": n_gpu_layers,
                                "n_threads": row["threads"], "timeout_ms": LOAD_TIMEOUT_MS})
        placement = {k: r.get(k) for k in ("offloaded", "cpu_model_buffer", "on_gpu")}
        row["wllama"] = {**placement, "multithread": r.get("multithread"), "threads_requested": row["threads"]}
        if not r.get("ok"):
            row["error"] = f"wllama failed to load: {r.get('error')}"
            return
        if n_gpu_layers:
            row["on_gpu"], row["note"] = webgpu_label(placement, caps)
            row["mode"] = "webgpu" if row["on_gpu"] else "webgpu→cpu"
        row["load_ms"] = round(r["load_ms"], 1)
        if first:
            row["note"] = _join(row["note"], "first wllama load in this page: includes compiling its 10 MB wasm")
        if r.get("threads") != row["threads"]:
            row["note"] = _join(row["note"], f"asked for {row['threads']} threads, wllama uses {r.get('threads')}")
            row["threads"] = r.get("threads")
        warm = await call(w.complete, {"prompt": text, "n_predict": warm_tokens(lab, max_new),
                                       "timeout_ms": timeout})
        if not warm.get("ok"):
            row["error"] = f"wllama failed to generate: {warm.get('error')}"
            return
        results = []
        for i in range(runs):
            lab.check_cancel()
            lab.progress(f"compare: {label(row)} run {i + 1}/{runs}", None)
            c = await call(w.complete, {"prompt": text, "n_predict": max_new, "timeout_ms": timeout})
            if not c.get("ok"):
                row["error"] = f"wllama failed to generate: {c.get('error')}"
                break
            results.append({"decode_tok_per_s": c.get("decode_tok_per_s"), "ttft_ms": c.get("ttft_ms"),
                            "generated_token_ids": c.get("token_ids") or [], "timings": c.get("timings"),
                            "stopped": FINISH.get(c.get("finish_reason"), c.get("finish_reason"))})
        if results:
            _finish(row, results)
            row["wllama"]["timings"] = [x["timings"] for x in results]
            row["stopped"] = results[0]["stopped"]
            row["wllama"]["prompt_n"] = (results[0]["timings"] or {}).get("prompt_n")
        row["note"] = _join(row["note"], NO_DISPATCH_COUNT)
    finally:
        await w.unload()


def warm_tokens(lab, max_new: int) -> int:
    """Tokens of the untimed warm-up: a whole run on a real GPU, 1 on a CPU adapter (or none)."""
    return max_new if lab.dev is not None and not is_cpu(lab.dev.adapter_info) else 1


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


# ------------------------------------------------------------------------------------ the suite
async def run(lab, params: dict) -> dict:
    from app.bench.amortize import set_tuning, tuning_overrides
    from app.lab import Cancelled, describe
    p = parse(params)
    set_tuning(params)
    url = params.get("model") or "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    best = p["plan"] or best_plan(lab.dev)
    hc = int(js.navigator.hardwareConcurrency or 1)
    rows = [_row("ours", best, None, True)]
    if best != "op_by_op":
        rows.append(_row("ours", "op_by_op", None, True))
    rows += [_row("wllama", "webgpu", hc, False), _row("wllama", "cpu", 1, False)]
    if hc > 1:
        rows.append(_row("wllama", "cpu", hc, False))
    sec = {"prompt": p["prompt"], "chat": p["chat"], "max_new_tokens": p["max_new"], "runs": p["runs"],
           "driver": p["driver"], "reference": f"ours/{best}", "engines": rows, "wllama": {},
           "notes": [f"ours' main row runs plan {best}: " + ("chosen with the plan parameter" if p["plan"] else
                     "our fastest plan on this kind of adapter (app.llm.plans.best: resident on GPUs with subgroups, "
                     "else gpu_loop; token_pass on fallback/CPU adapters; as measured)"),
                     "warm-up before the timed runs: " + ("a whole generation (GPU clocks)"
                                                          if warm_tokens(lab, p["max_new"]) > 1 else "1 token")]}
    sec.update(tuning_overrides())

    # Prompt ids come from our tokenizer; the context is sized from them so every engine gets the same n_ctx.
    from app.llm import session
    lab.progress("compare: loading our model", 0.02)
    text, ids = p["prompt"], None
    try:
        # app.llm.session keeps one model per page; a model loaded earlier (e.g. by the LLM tab) is not timed.
        was_loaded = session.is_loaded(lab, params.get("model"))
        t0 = _now()
        m = await session.get_model(lab, 0, params.get("model"))
        load_ms = round(_now() - t0, 1)
        for r in rows:
            if r["engine"] == "ours":
                if was_loaded:
                    r["note"] = "model already loaded in this page (load time not measured)"
                else:
                    r["load_ms"] = load_ms
        text = m.tokenizer.chat_prompt(p["prompt"]) if p["chat"] else p["prompt"]
        ids = m.tokenizer.encode(text)
    except Cancelled:
        raise
    except Exception as e:  # noqa: BLE001 - our engine failing must not stop the wllama rows
        err = " — ".join(describe(e))
        for r in rows[:2]:
            if r["engine"] == "ours":
                r["error"] = err
        if p["chat"]:
            sec["notes"].append("our tokenizer was unavailable, so the chat template was not applied")
    n_ctx = n_ctx_for((len(ids) if ids else 64) + p["max_new"])
    sec.update(prompt_text=text, prompt_tokens=len(ids) if ids else None, prompt_token_ids=ids, n_ctx=n_ctx)

    caps = {}
    try:
        w = await glue()
        caps = await call(w.capabilities, {})
        sec["wllama"] = {"version": caps.get("version"), "capabilities": caps}
        if caps.get("import_error"):
            raise RuntimeError(caps["import_error"])
    except Exception as e:  # noqa: BLE001
        w = None
        for r in rows:
            if r["engine"] == "wllama":
                r["error"] = f"wllama could not be loaded: {' — '.join(describe(e))}"

    first_wllama = True
    for i, row in enumerate(rows):
        if row["error"]:
            continue
        lab.progress(f"compare: {label(row)}", 0.05 + 0.9 * i / len(rows))
        try:
            if row["engine"] == "ours":
                await run_ours(lab, row, row["mode"], p["driver"], ids, p["max_new"], n_ctx, p["runs"],
                               params.get("model"))
            else:
                await run_wllama(lab, w, row, caps, text, p["max_new"], n_ctx, p["runs"],
                                 999 if row["mode"] == "webgpu" else 0, url, first_wllama)
                first_wllama = False
        except Cancelled:
            sec["cancelled"] = True
            for r in rows[i:]:
                r["error"] = r["error"] or "cancelled by the user before this row finished"
            break
        except Exception as e:  # noqa: BLE001 - one engine's failure stays in its row
            row["error"] = " — ".join(describe(e))

    ref = next((i for i, r in enumerate(rows) if r["engine"] == "ours" and not r["error"]
                and r["generated_token_ids"]), None)
    sec["reference"] = f"ours/{rows[ref]['mode']}" if ref is not None else None
    if ref is None:
        sec["notes"].append("our engine produced no tokens, so there is no reference for agree and ratios")
    add_comparisons(rows, ref)
    sec["ratios"] = {label(r): r["ours_speedup"] for r in rows}  # ours' decode rate ÷ the row's
    for r in rows:
        if r["engine"] == "wllama" and r.get("wllama", {}).get("prompt_n") not in (None, len(ids or [])):
            r["note"] = _join(r["note"], f"llama.cpp tokenized the prompt into {r['wllama']['prompt_n']} tokens, "
                                         f"ours into {len(ids or [])}")
    sec["notes"] += notes(lab, caps)
    lab.progress("compare: done", 1.0)
    return sec


def notes(lab, caps: dict) -> list[str]:
    out = ["decode tok/s is the same for every engine, wall clock in this page: tokens after the first ÷ (last token "
           "− first token) (decode_after_first_tok_per_s in app/llm/generate.py). Our rows also give the rate our "
           "other suites report, new tokens ÷ (last token read back − prefill done), which charges the first "
           "token's latency to decode (decode_from_prefill_tok_per_s). TTFT = request to first token, prompt "
           "included. llama.cpp's own timings are in each wllama row.",
           "Every engine loads once, makes one untimed warm-up (a whole generation on a real GPU, 1 token on a CPU "
           "adapter), then the timed runs; the CI is a 95% "
           "bootstrap interval of the median over those runs.",
           "wllama is loaded from the GGUF bytes in memory (Wllama.loadModel with a Blob): load_ms excludes the "
           "download, and nothing is written to the browser's storage.",
           f"{NO_DISPATCH_COUNT}; its rows leave dispatches/token empty rather than guess.",
           "Our rows share one model load (fetch, sha256, parse, upload, compile); load_ms is that load.",
           "agree = length of the greedy prefix on which the row matches ours; llama.cpp quantizes activations to "
           "8 bits for its dot products, so a token whose top-2 logits are close may legitimately differ."]
    adapter = (lab.env or {}).get("adapter") or {}
    if is_cpu(adapter):
        out.append("This adapter is a software fallback (SwiftShader): 'on GPU' rows run WebGPU on the CPU cores.")
    if caps and not caps.get("jspi"):
        out.append("This browser lacks JSPI (WebAssembly.Suspending); wllama may fail or run without async reads.")
    return out
