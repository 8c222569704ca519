"""The Amortization panel: every plan × driver (table + stacked chart) and the isolation experiment.

Suite interface (app/suites.py): mount(lab), render(lab, section), async run(lab, params) -> section.
Mounting also registers the fused and gpu_loop plans (app.llm.plans), so every panel lists them, and
installs window.dlAmortize.check(name, paramsJson) for the browser tests.
"""
from __future__ import annotations

import json

import js  # type: ignore
from pyodide.ffi import create_proxy  # type: ignore

from app.ui.dom import el, esc, html_table, message, on, refuse_start, set_html, while_busy

PANEL = """
  <h2>Dispatch amortization</h2>
  <p class="muted">The same model and weights under five dispatch plans, from one submit per kernel to a
  GPU-resident loop of K tokens per submit, each replayed from Python or by one call into JavaScript.
  Then the isolation experiment: one fixed matvec split into k dispatches, so that only the dispatch
  count changes. All in one session, beside a fresh per-dispatch cost measurement.</p>
  <div class="controls">
    <label>Prompt <input id="amortize-prompt" size="32" value="The capital of France is"></label>
    <label>New tokens <input id="amortize-max" type="number" min="1" max="512" value="32"></label>
    <label>Runs <input id="amortize-runs" type="number" min="1" max="50" value="5"></label>
    <label>K (gpu_loop, resident) <input id="amortize-k" type="number" min="1" max="64"></label>
    <label><input id="amortize-quick" type="checkbox"> quick</label>
    <button id="amortize-run" class="primary">Run amortize suite</button>
    <button id="amortize-stop" disabled>Stop</button>
  </div>
  <div id="amortize-messages"></div>
  <div id="amortize-out"></div>
  <div id="amortize-iso"></div>
  <div class="charts" id="amortize-charts" hidden>
    <div class="chart-box"><canvas id="amortize-chart-plans"></canvas></div>
    <div class="chart-box"><canvas id="amortize-chart-isolation"></canvas></div>
  </div>
"""
_lab = None
_hooks = []


def mount(lab) -> None:
    global _lab
    import app.llm.plans  # noqa: F401 - registers the fused and gpu_loop plans for every panel
    from app.llm.gpu_loop import DEFAULT_K
    _lab = lab
    set_html("panel-amortize", PANEL)
    el("amortize-k").value = str(DEFAULT_K)
    el("amortize-quick").checked = bool(lab.params.get("quick"))
    on("amortize-run", "click", _run)
    on("amortize-stop", "click", _stop)
    _install_hooks(lab)


async def run(lab, params):
    from app.bench import amortize
    return await while_busy(lab, "amortize", lambda: amortize.run(lab, params))


def _say(kind: str, text: str) -> None:
    set_html("amortize-messages", message(kind, text))


async def _run(evt) -> None:
    from app import suites
    lab = _lab
    if refuse_start(lab, _say):
        return
    set_html("amortize-messages", "")
    params = {**lab.params, "prompt": str(el("amortize-prompt").value),
              "max_new_tokens": str(el("amortize-max").value), "runs": str(el("amortize-runs").value),
              "k": str(el("amortize-k").value), "quick": "1" if el("amortize-quick").checked else ""}
    lab.status("running", "Running the amortize suite…")
    try:
        await suites.run_suite(lab, "amortize", params)
        lab.status("done", "Done")
    except BaseException:
        lab.status("error", "Failed")
        raise


def _stop(evt) -> None:
    if _lab.busy:
        _lab.cancel_requested = True
        _say("info", "Stopping after the current run.")


# ------------------------------------------------------------------------------------------ rendering
def _f(x, d=2) -> str:
    return "—" if x is None else (x if isinstance(x, str) else f"{x:.{d}f}")


def _row(r: dict) -> list:
    if "unsupported" in r:
        return [r["plan"], r["driver"], "unsupported here: " + str(r["unsupported"])] + [""] * 9
    ci = r.get("decode_tok_per_s_ci95")
    ok = {True: "yes", False: "NO", None: "—"}[r.get("tokens_match_op_by_op")]
    share = r.get("overhead_share")
    return [r["plan"] + (f" K={r['k']}" if "k" in r else ""), r["driver"], _f(r["dispatches_per_token"], 0),
            _f(r["submits_per_token"], 3), _f(r["readbacks_per_token"], 3), _f(r["decode_tok_per_s"], 1),
            f"[{_f(ci[0], 1)}, {_f(ci[1], 1)}]" if ci else "—", _f(r.get("decode_after_first_tok_per_s"), 1),
            _f(r["ms_per_token"]), _f(r.get("gpu_ms_per_token")),
            "—" if share is None else f"{100 * share:.0f}%", ok]


def render(lab, sec: dict) -> None:
    from app.ui import amortize_charts
    heads = ["plan", "driver", "dispatches/token", "submits/token", "readbacks/token", "tok/s", "95% CI",
             "tok/s after the 1st token", "ms/token", "GPU ms/token", "overhead*", "ids = op_by_op"]
    msgs = []
    if not sec.get("all_tokens_identical", True):
        msgs.append(message("error", "The plans did not all produce the same greedy tokens."))
    bad = [r for r in sec.get("plans", []) if "unsupported" not in r and not r.get("dispatch_count_ok", True)]
    if bad:
        msgs.append(message("error", "Counted dispatches differ from the declared count for: "
                            + ", ".join(f"{r['plan']} ({r['driver']})" for r in bad)))
    pj = "".join(f"<li>{esc(p['plan'])}: Python {p['python_ms']:.2f} ms/token, JS {p['js_ms']:.2f} ms/token, "
                 f"ratio {p['ratio']:.3f} ({'within' if p['within_10pct'] else 'not within'} 10%)</li>"
                 for p in sec.get("python_vs_js", []))
    set_html("amortize-out", "".join(msgs) + html_table(heads, [_row(r) for r in sec.get("plans", [])],
                                                        numeric=set(range(2, 11)))
             + "<p class='muted'>* estimated dispatch overhead = dispatches/token × the per-dispatch cost of the plan's "
               "submission mode and driver, measured in this session with the dispatch suite's kernel, ÷ ms/token. "
               "tok/s counts every new token from the prefill's end; the rate after the 1st token counts the tokens "
               "delivered after the first delivery, from it to the last (the compare suite's rate).</p>"
             + (f"<ul>{pj}</ul>" if pj else ""))
    el("amortize-charts").hidden = False  # empty until there is a run to draw
    amortize_charts.ms_per_token(sec)
    iso = sec.get("isolation")
    if iso:
        ser = iso.get("series") or {}
        lines = [f"<li>{esc(m)}: {s['slope_us']:.1f} µs per extra dispatch (r² {s['r2']:.3f})</li>" for m, s in ser.items()]
        lines.append(f"<li>dispatch suite, this session: sequential {_f(iso.get('sequential_per_dispatch_us'), 1)} µs, "
                     f"one_pass {_f(iso.get('one_pass_per_dispatch_us'), 1)} µs per dispatch</li>")
        check = ("every split gave bit-identical results (and matched numpy)" if iso.get("all_splits_identical")
                 else "SPLITS DIFFER: see checks in the JSON")
        set_html("amortize-iso", f"<h3>Isolation: {iso.get('rows')}×{iso.get('cols')} Q4_1 matvec in k dispatches</h3>"
                 f"<p>{esc(check)}</p><ul>{''.join(lines)}</ul>")
        amortize_charts.isolation(iso)


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
