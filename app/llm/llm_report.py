"""The "llm" section of a results file: validation, text table and CSV rows (pure stdlib).

Registered with app.report at import time (one import line at the bottom of app/report.py), so the
page, `build.py bench` and the tests all validate and print it the same way.
"""
from __future__ import annotations

from app import report
from app.report import fmt, is_num, need, need_keys, table

REQUIRED = ("model", "prompt_tokens", "generated_token_ids", "text", "ttft_ms", "decode_tok_per_s",
            "dispatches_per_token", "submits_per_token", "readbacks_per_token", "gpu_ms_per_token")
# (key, label, digits) in print order
ROWS = (("prompt_tokens", "prompt tokens", 0), ("ttft_ms", "time to first token (ms)", 1),
        ("decode_tok_per_s", "decode tokens/s", 2), ("decode_ms_per_token", "decode ms/token", 1),
        ("decode_after_first_tok_per_s", "decode tokens/s after the first token", 2),
        ("dispatches_per_token", "dispatches/token", 1), ("expected_dispatches_per_token", "declared dispatches/token", 0),
        ("submits_per_token", "submits/token", 2), ("readbacks_per_token", "readbacks/token", 2),
        ("gpu_ms_per_token", "GPU ms/token (timestamps)", 2))


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def validate(sec, where: str) -> None:
    need_keys(sec, REQUIRED, where)
    need(isinstance(sec["model"], str) and sec["model"] != "", f"{where}.model", "expected the model file name")
    need(_count(sec["prompt_tokens"]) and sec["prompt_tokens"] >= 1, f"{where}.prompt_tokens",
         f"expected a positive integer, got {sec['prompt_tokens']!r}")
    ids = sec["generated_token_ids"]
    need(isinstance(ids, list) and all(_count(i) for i in ids), f"{where}.generated_token_ids",
         "expected a list of token ids (non-negative integers)")
    need(isinstance(sec["text"], str), f"{where}.text", "expected a string")
    for k in ("ttft_ms", "decode_tok_per_s"):  # None: no token was made (cancelled before the first)
        need(sec[k] is None or (is_num(sec[k]) and sec[k] >= 0), f"{where}.{k}",
             f"expected a non-negative number or null, got {sec[k]!r}")
    for k in ("dispatches_per_token", "submits_per_token", "readbacks_per_token"):
        need(is_num(sec[k]) and sec[k] >= 0, f"{where}.{k}", f"expected a non-negative number, got {sec[k]!r}")
    g = sec["gpu_ms_per_token"]
    need(g == "unsupported" or (is_num(g) and g >= 0), f"{where}.gpu_ms_per_token",
         f"expected milliseconds or \"unsupported\", got {g!r}")


def _fmt(v, digits: int) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return fmt(v)
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def format_section(sec: dict) -> str:
    head = (f"LLM — {sec.get('model')}, plan {sec.get('plan', '?')} ({sec.get('mode', '?')}), "
            f"driver {sec.get('driver', '?')}, {'chat' if sec.get('chat') else 'raw'} prompt, "
            f"stopped by {sec.get('stopped', '?')}")
    rows = [[label, _fmt(sec.get(k), d)] for k, label, d in ROWS if k in sec]
    mem = sec.get("gpu_memory_mb") or {}
    if mem:
        rows.append(["GPU memory (MB)", ", ".join(f"{k} {v}" for k, v in mem.items())])
    if sec.get("dispatch_count_ok") is False:
        rows.append(["WARNING", "counted dispatches differ from the plan's declared count"])
    ids = " ".join(str(i) for i in sec.get("generated_token_ids", []))
    return "\n".join([head, table(["metric", "value"], rows), f"token ids: {ids}", f"text: {sec.get('text', '')!r}"])


def csv_rows(sec: dict) -> list:
    out = [[k, sec.get(k)] for k, _, _ in ROWS if k in sec]
    out += [[k, sec.get(k)] for k in ("model", "plan", "mode", "driver", "stopped") if k in sec]
    out.append(["generated_token_ids", " ".join(str(i) for i in sec.get("generated_token_ids", []))])
    out.append(["text", sec.get("text", "")])
    return out


report.section("llm", validate, format_section, csv_rows)
