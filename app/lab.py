"""The page controller: boot, shared state, status/progress/errors, autorun and result storage.

Panels (app/ui/*_panel.py) each expose ``mount(lab)`` and optionally ``render(section)``; suites
(app/suites.py) run a benchmark and put their section into ``lab.results``.  Nothing below this
module touches ``lab``'s page state directly.
"""
from __future__ import annotations

import asyncio
import json
import traceback
import urllib.parse

import js  # type: ignore

from app import report
from app.gpu import Device, WebGPUUnavailable, GPUError

STORE_KEY = "dispatchlab.results.v1"


class Cancelled(Exception):
    """The user pressed Stop."""


class Lab:
    def __init__(self):
        q = urllib.parse.parse_qs(str(js.location.search).lstrip("?"))
        self.params = {k: v[-1] for k, v in q.items()}
        self.dev: Device | None = None
        self.env: dict = {}
        self.results: dict | None = None
        self.imported: list[tuple[str, dict]] = []
        self.busy = False
        self.cancel_requested = False
        self.gpu_error: str | None = None

    # ----------------------------------------------------------------- page state
    def status(self, state: str, text: str) -> None:
        js.dl.setStatus(state, text)

    def progress(self, message: str, fraction=None) -> None:
        js.dl.setProgress(fraction, message)
        if self.params.get("report"):
            asyncio.ensure_future(_post("/api/progress", {"message": message, "fraction": fraction}))

    def error(self, title: str, detail: str = "", help: str = "") -> None:
        js.dl.showError(title, detail, help)

    def check_cancel(self) -> None:
        if self.cancel_requested:
            raise Cancelled("cancelled by the user")

    # ----------------------------------------------------------------- results
    def section(self, name: str, value: dict) -> None:
        """Store one suite's section in the current results and persist them (survive reloads)."""
        if self.results is None:
            self.results = report.new_results(self.env)
        self.results[name] = value
        js.dl.store.set(STORE_KEY, json.dumps(self.results))

    def restore(self) -> dict | None:
        raw = js.dl.store.get(STORE_KEY)
        if not raw:
            return None
        try:
            return report.parse(str(raw), "saved results")
        except report.ResultsError:
            js.dl.store.remove(STORE_KEY)
            return None


LAB: Lab | None = None


async def _post(path: str, obj: dict) -> None:
    await js.dl.postJSON(path, js.JSON.parse(json.dumps(obj)))


def describe(exc: BaseException) -> tuple[str, str]:
    """A (title, detail) pair for an exception, with no traceback for errors we expect."""
    if isinstance(exc, WebGPUUnavailable):
        return "WebGPU is not available", str(exc)
    if isinstance(exc, Cancelled):
        return "Run cancelled", "Stopped before it finished; everything measured so far is kept."
    if isinstance(exc, GPUError):
        return "GPU error", str(exc)
    known = (ValueError, report.ResultsError, OSError, MemoryError)
    if isinstance(exc, known):
        return type(exc).__name__.replace("Error", " error").strip(), str(exc)
    js.console.error("".join(traceback.format_exception(exc)))  # for developers, in the console only
    return "Unexpected error", f"{type(exc).__name__}: {exc} (details in the browser console)"


def guard(fn, *args):
    """Call fn (sync or async); show any exception as a message instead of a traceback."""
    async def run_async(coro):
        try:
            return await coro
        except BaseException as e:  # noqa: BLE001
            LAB.error(*describe(e))
    try:
        r = fn(*args)
    except BaseException as e:  # noqa: BLE001
        LAB.error(*describe(e))
        return None
    return run_async(r) if asyncio.iscoroutine(r) else r


async def boot(lab: Lab) -> None:
    from app import environment
    import pyodide_js  # type: ignore
    lab.status("loading", "Loading numpy…")
    lab.progress("loading numpy", 0.5)
    await pyodide_js.loadPackage("numpy")
    lab.status("loading", "Requesting a GPU adapter…")
    lab.progress("requesting GPU adapter", 0.8)
    try:
        lab.dev = await Device.request()
    except WebGPUUnavailable as e:
        lab.gpu_error = str(e)
        lab.error("WebGPU is not available", str(e), e.help)
    lab.env = environment.collect(lab.dev)
    if lab.dev is not None:
        lab.status("loading", "Probing the adapter's safety checks…")
        lab.env["safety"] = await environment.probe_safety(lab.dev)
    from app.ui import env_panel
    env_panel.render(lab)


async def main() -> None:
    global LAB
    LAB = lab = Lab()
    try:
        await boot(lab)
        from app import suites
        suites.mount_panels(lab)       # a panel that cannot import (a site missing a module) fails here
    except BaseException as e:  # noqa: BLE001
        lab.status("error", "Failed to start")
        lab.error(*describe(e))
        if lab.params.get("report"):
            await _post("/api/results", {**report.new_results(lab.env), "error": describe(e)[1]})
        return
    if lab.dev is None:
        lab.status("error", "No WebGPU")
        lab.progress("", 0)
        if lab.params.get("report"):
            await _post("/api/results", {**report.new_results(lab.env), "error": lab.gpu_error})
        return
    lab.status("ready", "Ready")
    lab.progress("ready", 1)
    if lab.params.get("autorun"):
        await suites.autorun(lab)
