"""The "compare" section (our engine beside wllama/llama.cpp): pure helpers, validator, text table, CSV.

Pure standard library, so build.py's tables, the import check and the CPython tests use the same code as
the page.  Section layout (app/compare.py builds it):
  {"prompt", "chat", "prompt_tokens", "n_ctx", "max_new_tokens", "runs", "reference": "ours/<plan>",
   "engines": [{"engine", "mode", "threads", "on_gpu", "decode_tok_per_s", "ttft_ms", "generated_token_ids",
                "agree_prefix", "note", + load_ms, decode_ci, decode_runs, ttft_runs, dispatches_per_token,
                ours_speedup, error, wllama: {...}, ours only: decode_from_prefill_tok_per_s, decode_from_prefill_ci}...],
   "wllama": {version, capabilities}, "notes": [...]}
"""
from __future__ import annotations

from app import report
from app.bench import stats

ROW_KEYS = ("engine", "mode", "threads", "on_gpu", "decode_tok_per_s", "ttft_ms", "generated_token_ids",
            "agree_prefix", "note")
NO_DISPATCH_COUNT = "wllama does not expose its dispatch count"
FALLBACK_F16 = "WebGPU unavailable: adapter lacks shader-f16 (ran on CPU)"


# ------------------------------------------------------------------------------------ pure helpers
def agree_prefix(ids, ref) -> int | None:
    """Length of the common prefix of two greedy outputs (None when either is missing)."""
    if ids is None or ref is None:
        return None
    n = 0
    for a, b in zip(ids, ref):
        if a != b:
            break
        n += 1
    return n


def summarise(values) -> dict:
    """Median and 95% bootstrap CI of the measured values (None entries are runs that gave none)."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"median": None, "ci": None}
    lo, hi = stats.bootstrap_ci(xs)
    return {"median": round(stats.median(xs), 3), "ci": [round(lo, 3), round(hi, 3)]}


def webgpu_label(placement: dict, caps: dict) -> tuple[bool, str]:
    """(on_gpu, note) for a wllama run that asked for every layer on WebGPU.  Only llama.cpp's own
    "offloaded N/N layers to GPU" line makes it a GPU run; anything else is said plainly."""
    off = placement.get("offloaded")
    if off and off[0] > 0 and off[0] == off[1]:
        return True, f"all {off[1]} layers offloaded to WebGPU"
    if off and off[0] > 0:
        return False, f"WebGPU partial: only {off[0]}/{off[1]} layers offloaded (rest on CPU)"
    if not caps.get("webgpu"):
        return False, "WebGPU unavailable: no navigator.gpu in this browser (ran on CPU)"
    if not caps.get("shader_f16"):
        return False, FALLBACK_F16
    return False, "WebGPU unavailable: llama.cpp offloaded no layers to the GPU (ran on CPU)"


def add_comparisons(engines: list[dict], ref_index: int | None) -> None:
    """Fill agree_prefix and ours_speedup (ours' decode rate ÷ this row's; > 1 means ours is faster)."""
    ref = engines[ref_index] if ref_index is not None else None
    ref_ids = ref.get("generated_token_ids") if ref and not ref.get("error") else None
    ref_rate = ref.get("decode_tok_per_s") if ref_ids is not None else None
    for e in engines:
        ids = e.get("generated_token_ids") if not e.get("error") else None
        e["agree_prefix"] = agree_prefix(ids, ref_ids)
        rate = e.get("decode_tok_per_s")
        e["ours_speedup"] = round(ref_rate / rate, 3) if ref_rate and rate else None


def label(e: dict) -> str:
    threads = f", {e['threads']} thr" if e.get("threads") else ""
    return f"{e.get('engine')} {e.get('mode')}{threads}"


# ------------------------------------------------------------------------------------ validation
def validate(sec, where: str) -> None:
    report.need_keys(sec, ("engines",), where)
    report.need(isinstance(sec["engines"], list) and sec["engines"], f"{where}.engines", "expected a non-empty list")
    for i, e in enumerate(sec["engines"]):
        w = f"{where}.engines[{i}]"
        report.need_keys(e, ROW_KEYS, w)
        report.need(isinstance(e["engine"], str) and isinstance(e["mode"], str), w, "engine and mode must be text")
        report.need(isinstance(e["on_gpu"], bool), w, "on_gpu must be true or false")
        report.need(isinstance(e["note"], str), w, "note must be text")
        for k in ("decode_tok_per_s", "ttft_ms"):
            report.need(e[k] is None or (report.is_num(e[k]) and e[k] >= 0), w, f"{k} must be a non-negative number or null")
        ids = e["generated_token_ids"]
        report.need(isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in ids),
                    w, "generated_token_ids must be a list of integers")
        ap = e["agree_prefix"]
        report.need(ap is None or (isinstance(ap, int) and 0 <= ap <= len(ids)), w,
                    "agree_prefix must be null or an integer between 0 and the number of generated tokens")
        # A wllama row may only claim the GPU with llama.cpp's offload line behind it.
        if e["engine"] == "wllama" and e["on_gpu"]:
            off = (e.get("wllama") or {}).get("offloaded")
            report.need(isinstance(off, list) and len(off) == 2 and off[0] == off[1] and off[0] > 0, w,
                        "on_gpu is true but wllama's log shows no full GPU offload")


# ------------------------------------------------------------------------------------ text / CSV
HEADERS = ["Engine", "Mode", "Threads", "On GPU", "Decode tok/s", "95% CI", "TTFT ms", "Load ms", "Agree",
           "Ours ×", "Dispatches/token", "Note"]


def _ci(e) -> str:
    ci = e.get("decode_ci")
    return f"{ci[0]:.1f}–{ci[1]:.1f}" if ci else "—"


def _cells(e: dict) -> list:
    n = len(e.get("generated_token_ids") or [])
    agree = "—" if e.get("agree_prefix") is None else f"{e['agree_prefix']}/{n}"
    note = e.get("note") or ""
    if e.get("error"):
        note = f"FAILED: {e['error']}" + (f" — {note}" if note else "")
    disp = e.get("dispatches_per_token")
    return [e.get("engine"), e.get("mode"), e.get("threads") or "—", "yes" if e.get("on_gpu") else "no",
            report.fmt(e.get("decode_tok_per_s"), 1), _ci(e), report.fmt(e.get("ttft_ms"), 0),
            report.fmt(e.get("load_ms"), 0), agree, report.fmt(e.get("ours_speedup"), 2),
            report.fmt(disp, 0) if disp is not None else "n/a", note]


def rows(sec: dict) -> list[list]:
    return [_cells(e) for e in sec.get("engines", [])]


def format_section(sec: dict) -> str:
    head = (f"Compare: our engine vs wllama {sec.get('wllama', {}).get('version') or ''} on the same GGUF — "
            f"prompt {sec.get('prompt')!r} ({sec.get('prompt_tokens')} tokens), {sec.get('max_new_tokens')} new tokens, "
            f"greedy, n_ctx {sec.get('n_ctx')}, {sec.get('runs')} run(s) per engine; reference {sec.get('reference')}; "
            "decode tok/s = tokens after the first ÷ time from the first token to the last, for every engine")
    out = [head, report.table(HEADERS, rows(sec))]
    out += [f"  * {n}" for n in sec.get("notes", [])]
    return "\n".join(out)


def csv_rows(sec: dict) -> list[list]:
    return [HEADERS] + rows(sec)


report.section("compare", validate, format_section, csv_rows)
