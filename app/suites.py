"""Suites the page can run (interactive or ?suite=NAME&autorun=1), and the panels that show them."""
from __future__ import annotations

import json

from app import report

# suite name -> module path exposing  mount(lab), render(lab, section) and  async run(lab, params) -> section
PANELS: dict = {}
PANELS["dispatch"] = "app.ui.dispatch_panel"
PANELS["llm"] = "app.ui.llm_panel"
PANELS["amortize"] = "app.ui.amortize_panel"
PANELS["compare"] = "app.ui.compare_panel"
ORDER = ("dispatch", "llm", "amortize", "compare")


def _modules():
    import importlib
    out = {}
    for name, path in PANELS.items():
        out[name] = importlib.import_module(path)
    return out


def mount_panels(lab) -> None:
    saved = lab.restore()
    for name, mod in _modules().items():
        mod.mount(lab)
        if saved and name in saved:
            mod.render(lab, saved[name])
    if saved:
        lab.results = saved


async def run_suite(lab, name: str, params: dict) -> None:
    mod = _modules()[name]
    section = await mod.run(lab, params)
    lab.section(name, section)
    mod.render(lab, section)


async def autorun(lab) -> None:
    from app.lab import _post, describe
    name = lab.params.get("suite", "dispatch")
    names = [n for n in ORDER if n in PANELS] if name == "all" else [name]
    lab.results = report.new_results(lab.env)
    lab.status("running", f"Running {name}…")
    errors = []
    for n in names:
        if n not in PANELS:
            errors.append(f"unknown suite {n!r}; known: {', '.join(PANELS)}")
            continue
        try:
            await run_suite(lab, n, lab.params)
        except BaseException as e:  # noqa: BLE001 - report and go on with the next suite
            title, detail = describe(e)
            lab.error(title, detail)
            errors.append(f"{n}: {detail}")
    doc = dict(lab.results)
    doc["env"] = lab.env  # suites may have refined it (e.g. timestamp quantization)
    if errors:
        doc["error"] = "; ".join(errors)
    lab.status("error" if errors else "done", "Failed" if errors else "Done")
    import js  # type: ignore
    js.window.dlResults = js.JSON.parse(json.dumps(doc))
    if lab.params.get("report"):
        await _post("/api/results", doc)
