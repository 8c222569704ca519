"""The amortize suite: every plan × driver, plus the isolation experiment, in one browser session."""
from __future__ import annotations

from app.bench import isolation


async def run(lab, params: dict) -> dict:
    quick = bool(params.get("quick"))
    iso = await isolation.run(lab.dev, quick=quick, progress=lab.progress, check_cancel=lab.check_cancel)
    return {"plans": [], "isolation": iso}


async def self_check(lab, name: str, params: dict) -> dict:
    """Small correctness runs for the browser tests (and the panel's "verify" button)."""
    if name == "isolation":
        return await isolation.run(lab.dev, quick=True, sizes=params, driver=params.get("driver", "python"))
    raise ValueError(f"unknown self-check {name!r}")
