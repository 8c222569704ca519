"""Results schema ``dispatchlab/1``: build, validate, export (JSON/CSV) and print as text tables.

Pure Python (stdlib only): used by the page, by ``build.py bench`` and by the CPython tests.
Each suite owns one top-level section ("dispatch", "llm", "amortize", "compare"); a validator and a text
formatter per section are registered in SECTIONS below.
"""
from __future__ import annotations

import csv
import io
import json
import time

SCHEMA = "dispatchlab/1"


class ResultsError(ValueError):
    """A results file that is not a Dispatch Lab results file, or is damaged; the message says how."""


def new_results(env: dict) -> dict:
    return {"schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "env": env}


# ---------------------------------------------------------------------------- validation helpers
def need(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise ResultsError(f"{where}: {msg}")


def is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x


def need_keys(obj, keys, where: str) -> None:
    need(isinstance(obj, dict), where, f"expected an object, got {type(obj).__name__}")
    missing = [k for k in keys if k not in obj]
    need(not missing, where, "missing " + ", ".join(repr(k) for k in missing))


def parse(text: str, name: str = "file") -> dict:
    """Parse and validate a results file; raise ResultsError with a message a person can act on."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise ResultsError(f"{name} is not valid JSON ({e})")
    validate(doc, name)
    return doc


def validate(doc, name: str = "results") -> None:
    need(isinstance(doc, dict), name, "not a JSON object")
    schema = doc.get("schema")
    need(schema is not None, name, "no 'schema' field: this is not a Dispatch Lab results file")
    need(schema == SCHEMA, name, f"schema {schema!r} is not supported (expected {SCHEMA!r})")
    need_keys(doc, ("created", "env"), name)
    need(isinstance(doc["env"], dict), f"{name}.env", "expected an object")
    sections = [s for s in SECTIONS if s in doc]
    need(sections or doc.get("error"), name, "holds no results (no " + "/".join(SECTIONS) + " section)")
    for s in sections:
        SECTIONS[s][0](doc[s], f"{name}.{s}")


# ---------------------------------------------------------------------------- text tables
def table(headers: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) if _numeric(c) else c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(out)


def _numeric(s: str) -> bool:
    try:
        float(s.replace("×", "").replace("%", ""))
        return True
    except ValueError:
        return False


def fmt(x, digits: int = 2) -> str:
    if isinstance(x, str):
        return x
    if x is None:
        return "—"
    return f"{x:.{digits}f}"


def format_env(env: dict) -> str:
    a = env.get("adapter") or {}
    bits = [f"adapter: {a.get('vendor', '?')} / {a.get('architecture', '?')} / {a.get('description') or a.get('device') or '?'}"
            f" (fallback: {a.get('isFallbackAdapter')})" if a else "adapter: none",
            f"browser: {env.get('user_agent', '?')}",
            f"cross-origin isolated: {env.get('cross_origin_isolated')}, timer resolution: {env.get('timer_resolution_us')} µs"]
    sf = env.get("safety")
    if sf:
        bits.append("safety checks (probed): " + (f"out-of-bounds read {sf.get('out_of_bounds_read')}, workgroup "
                                                  f"memory before a write {sf.get('workgroup_memory_before_write')}"
                                                  if sf.get("status") == "measured" else str(sf.get("status"))))
    launch = env.get("launch")
    if launch:
        dawn = [f for f in launch.get("flags", []) if str(f).startswith("--enable-dawn-features=")]
        bits.append(f"launched by bench ({launch.get('via')}): {launch.get('browser')}"
                    + (f", {' '.join(dawn)}" if dawn else ""))
    host = env.get("host")
    if host:
        bits.append(f"host (seen by bench): {host.get('cpu')}, {host.get('logical_cpus')} logical CPUs, {host.get('os')};"
                    f" 1-minute load average {host.get('load_1min_at_start')} at the start,"
                    f" {host.get('load_1min_at_end')} at the end")
    return "\n".join(bits)


def format_tables(doc: dict) -> str:
    parts = ["Environment", format_env(doc.get("env", {}))]
    for s, (_, formatter, _csv) in SECTIONS.items():
        if s in doc:
            parts += ["", formatter(doc[s])]
    if doc.get("error"):
        parts += ["", f"ERROR: {doc['error']}"]
    return "\n".join(parts)


def to_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    for s, (_, _fmt, rows_fn) in SECTIONS.items():
        if s in doc:
            for row in rows_fn(doc[s]):
                w.writerow([s, *row])
    return buf.getvalue()


# ---------------------------------------------------------------------------- sections
# name -> (validator(section, where), text formatter(section) -> str, csv rows(section) -> list[list])
SECTIONS: dict = {}


def section(name: str, validator, formatter, csv_rows) -> None:
    SECTIONS[name] = (validator, formatter, csv_rows)


from app.bench import dispatch_report  # noqa: E402,F401  (registers the "dispatch" section)
from app import compare_report  # noqa: E402,F401  (registers the "compare" section)
from app.bench import amortize_report  # noqa: E402,F401  (registers the "amortize" section)
from app.llm import llm_report  # noqa: E402,F401  (registers the "llm" section)
