"""The Compare panel: our engine beside wllama (llama.cpp/WebAssembly) on the same model — form, table, chart.

Suite interface (app/suites.py): mount(lab), render(lab, section), async run(lab, params) -> section.
"""
from __future__ import annotations

import json

import js  # type: ignore

from app.ui.dom import add_options, el, esc, html_table, message, on, run_button, set_html

_chart = None


def mount(lab) -> None:
    set_html("panel-compare", """
      <h2>Compare with llama.cpp (wllama) in this browser</h2>
      <p class="muted">The same SmolLM2-135M Q4_1 file, the same raw prompt, greedy decoding, the same number of
      new tokens and context size: our WGSL engine (best plan and the eager op_by_op plan) beside wllama 3.13.0
      on WebGPU (or its honest CPU fallback) and on CPU with 1 thread and with every core.</p>
      <label for="cmp-prompt">Prompt</label>
      <textarea id="cmp-prompt">The capital of France is</textarea>
      <div class="controls">
        <label>Format <select id="cmp-chat"><option value="0">raw text (no template, no BOS)</option>
          <option value="1">chat (ChatML template)</option></select></label>
        <label>Max new tokens <input id="cmp-max" type="number" min="1" max="4096" value="32"></label>
        <label>Runs per engine <input id="cmp-runs" type="number" min="1" max="20" value="3"></label>
        <label>Our plan <select id="cmp-plan"><option value="">best (plan registry)</option></select></label>
        <button id="cmp-run" class="primary">Run comparison</button>
        <button id="cmp-stop" disabled>Stop</button>
      </div>
      <div id="cmp-message"></div>
      <div id="cmp-table"></div>
      <div class="chart-box" id="cmp-chart-box" hidden><canvas id="cmp-chart" height="110"></canvas></div>
      <ul id="cmp-notes" class="muted"></ul>""")
    on("cmp-run", "click", lambda evt: _run_clicked(lab))
    on("cmp-stop", "click", lambda evt: _stop(lab))
    on("cmp-plan", "focus", lambda evt: _refresh_plans())
    _refresh_plans()


def _refresh_plans() -> None:
    """List every registered plan (other modules register theirs after this panel mounts)."""
    from app import compare
    from app.llm.model import PLANS
    compare._registry()
    add_options("cmp-plan", PLANS)


def _form() -> dict:
    return {"prompt": str(el("cmp-prompt").value), "chat": str(el("cmp-chat").value),
            "max_new_tokens": str(el("cmp-max").value), "runs": str(el("cmp-runs").value),
            "plan": str(el("cmp-plan").value)}


def _stop(lab) -> None:
    lab.cancel_requested = True
    el("cmp-stop").disabled = True
    set_html("cmp-message", message("info", "Stopping after the current run… (rows measured so far are kept)"))


async def _run_clicked(lab) -> None:
    async def body():
        section = await run(lab, _form())
        lab.section("compare", section)
        render(lab, section)
        set_html("cmp-message", message("info", "Stopped: rows not reached are marked.") if section.get("cancelled") else "")
        return section
    await run_button(lab, "cmp", "cmp-run", "Comparing…", body,
                     "Running… each engine loads, warms up, then runs; this takes a while.")


async def run(lab, params: dict) -> dict:
    from app import compare
    return await compare.run(lab, params)


def render(lab, section: dict) -> None:
    from app import compare_report as cr
    if not isinstance(section, dict) or not section.get("engines"):
        return
    head = (f"<p>Prompt {esc(repr(section.get('prompt')))} ({esc(section.get('prompt_tokens'))} tokens), "
            f"{esc(section.get('max_new_tokens'))} new tokens, n_ctx {esc(section.get('n_ctx'))}, "
            f"{esc(section.get('runs'))} run(s) per engine, reference {esc(section.get('reference'))}; "
            f"wllama build {esc((section.get('wllama') or {}).get('version'))}. "
            "Decode tok/s is the rate after the first token (tokens after it ÷ time from it to the last) for every "
            "engine; our rows' notes add our other suites' rate, counted from the prefill's end. "
            "“Ours ×” = our decode rate ÷ that row's (above 1: ours is faster).</p>")
    failed = [e for e in section["engines"] if e.get("error")]
    warn = "".join(message("error", f"{cr.label(e)}: {e['error']}") for e in failed)
    set_html("cmp-table", head + warn + html_table(cr.HEADERS, cr.rows(section), numeric={2, 4, 6, 7, 9, 10}))
    set_html("cmp-notes", "".join(f"<li>{esc(n)}</li>" for n in section.get("notes", [])))
    _draw(section)


def _draw(section: dict) -> None:
    """Bar chart of median decode tok/s per engine (missing bars = no measurement)."""
    global _chart
    from app import compare_report as cr
    if not hasattr(js, "Chart"):
        return
    engines = section["engines"]
    cfg = {"type": "bar",
           "data": {"labels": [cr.label(e) for e in engines],
                    "datasets": [{"label": "decode tokens/s (median)",
                                  "data": [e.get("decode_tok_per_s") for e in engines],
                                  "backgroundColor": ["#2b6cb0" if e["engine"] == "ours" else
                                                      ("#38a169" if e.get("on_gpu") else "#a0aec0") for e in engines]}]},
           "options": {"animation": False, "plugins": {"legend": {"display": False}},
                       "scales": {"y": {"beginAtZero": True, "title": {"display": True, "text": "decode tokens/s"}}}}}
    if _chart is not None:
        _chart.destroy()
    el("cmp-chart-box").hidden = False  # empty until there is a run to draw
    _chart = js.Chart.new(el("cmp-chart"), js.JSON.parse(json.dumps(cfg)))
