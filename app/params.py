"""Checks on URL/form values shared by the suites: a clear ValueError for the page and the CLI."""
from __future__ import annotations

TRUE = ("1", "true", "yes", "on")         # what a URL/form flag says for "on"
FALSE = ("0", "false", "no", "off")       # … and for "off"


def whole_number(raw, lo: int, hi: int, what: str) -> int:
    """int(raw) within lo..hi, else ValueError naming `what` ("k (tokens per submit)", "runs", …)."""
    try:
        v = int(str(raw).strip())
    except ValueError:
        raise ValueError(f"{what} must be a whole number, got {raw!r}") from None
    if not lo <= v <= hi:
        raise ValueError(f"{what} must be between {lo} and {hi}, got {v}")
    return v


def whole_number_or(raw, default: int, lo: int, hi: int, what: str) -> int:
    """`default` for a missing or blank value (None, ""), else whole_number(raw, lo, hi, what)."""
    if raw is None or str(raw).strip() == "":
        return default
    return whole_number(raw, lo, hi, what)
