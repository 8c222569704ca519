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
