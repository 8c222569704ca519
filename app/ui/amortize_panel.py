"""The Amortization panel: plans × drivers table, stacked chart, isolation chart (browser-only)."""
from __future__ import annotations

import json

import js  # type: ignore
from pyodide.ffi import create_proxy  # type: ignore

from app.ui.dom import set_html

_hooks = []


def mount(lab) -> None:
    set_html("panel-amortize", "<h2>Amortization</h2><div id='amortize-out'></div>")
    _install_hooks(lab)


def render(lab, section) -> None:
    set_html("amortize-out", "<pre>" + json.dumps(section, indent=1)[:5000] + "</pre>")


async def run(lab, params):
    from app.bench import amortize
    return await amortize.run(lab, params)


def _install_hooks(lab) -> None:
    """window.dlAmortize.check(name, paramsJson) → JSON string: self-checks the browser tests call."""
    async def check(name, params_json="{}"):
        from app.bench import amortize
        try:
            out = await amortize.self_check(lab, str(name), json.loads(str(params_json)))
        except Exception as e:  # noqa: BLE001 - the test reads the message
            from app.lab import describe
            out = {"error": " — ".join(describe(e))}
        return json.dumps(out)
    p = create_proxy(check)
    _hooks.append(p)
    js.window.dlAmortize = js.Object.fromEntries(js.Array.of(js.Array.of("check", p)))
