"""Tiny DOM helpers shared by the panels (browser-only)."""
from __future__ import annotations

import asyncio
import html

import js  # type: ignore
from pyodide.ffi import create_proxy  # type: ignore

_proxies = []  # event handlers live as long as the page


def el(id_: str):
    return js.document.getElementById(id_)


def esc(x) -> str:
    return html.escape(str(x))


def set_html(id_: str, markup: str) -> None:
    el(id_).innerHTML = markup


def on(id_: str, event: str, handler) -> None:
    """Bind handler (sync or async, receives the event) to an element; errors go to the lab's error box."""
    def call(evt):
        from app import lab
        r = lab.guard(handler, evt)
        if asyncio.iscoroutine(r):
            asyncio.ensure_future(r)
    p = create_proxy(call)
    _proxies.append(p)
    el(id_).addEventListener(event, p)


def html_table(headers: list[str], rows: list[list], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td class='num'>{esc(c)}</td>" if i in numeric else f"<td>{esc(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kv(pairs: list[tuple]) -> str:
    return "<dl class='kv'>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs) + "</dl>"


def message(kind: str, text: str) -> str:
    return f"<div class='message {kind}'>{esc(text)}</div>"


def add_options(select_id: str, names) -> None:
    """Append to a <select> the names it does not list yet (plans registered after the panel mounted)."""
    sel = el(select_id)
    have = {str(o.value) for o in sel.options}
    for name in names:
        if name not in have:
            opt = js.document.createElement("option")
            opt.value = opt.textContent = name
            sel.appendChild(opt)


async def run_button(lab, prefix: str, run_id: str, status_text: str, body, start_text: str = ""):
    """What a panel's Run button does around its work: one run at a time, Run/Stop button states, the page
    status, and any exception shown as a message in the panel (never a traceback).  body() is awaited and
    returns the section; None is returned when it failed or another run was in progress."""
    from app.lab import describe
    msg_id, stop_id = f"{prefix}-message", f"{prefix}-stop"
    if lab.busy:
        set_html(msg_id, message("error", "A run is already in progress; wait for it or press Stop."))
        return None
    lab.busy, lab.cancel_requested = True, False
    el(run_id).disabled, el(stop_id).disabled = True, False
    set_html(msg_id, message("info", start_text) if start_text else "")
    lab.status("running", status_text)
    try:
        section = await body()
        lab.status("done", "Done")
        return section
    except BaseException as e:  # noqa: BLE001 - a message, never a traceback
        title, detail = describe(e)
        set_html(msg_id, message("error", f"{title}: {detail}"))
        lab.error(title, detail)
        lab.status("error", title)
        return None
    finally:
        lab.busy = False
        el(run_id).disabled, el(stop_id).disabled = False, True


async def while_busy(lab, prefix: str, work):
    """Await work() with the lab marked busy and the panel's Run disabled / Stop enabled, whoever
    started it (its Run button or autorun).  Buttons are `<prefix>-run` and `<prefix>-stop`."""
    lab.busy, lab.cancel_requested = True, False
    el(f"{prefix}-run").disabled, el(f"{prefix}-stop").disabled = True, False
    try:
        return await work()
    finally:
        lab.busy = False
        el(f"{prefix}-run").disabled, el(f"{prefix}-stop").disabled = False, True


def refuse_start(lab, say) -> bool:
    """True (after saying why) when a suite cannot start now: another run, or no WebGPU device."""
    if lab.busy:
        say("info", "Another run is in progress; wait for it or press its Stop button.")
        return True
    if lab.dev is None:
        say("error", "This browser has no usable WebGPU device (see the Environment tab).")
        return True
    js.dl.hideError()
    return False
