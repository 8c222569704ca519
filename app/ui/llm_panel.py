"""The LLM panel: prompt, chat/raw, max tokens, plan and driver, Generate/Stop, streaming text, metrics.

Suite interface (app/suites.py): mount(lab), render(lab, section), async run(lab, params) -> section.
The model stays loaded for the page session (app.llm.session), so only the first run downloads it.
"""
from __future__ import annotations


from app.ui.dom import add_options, el, esc, kv, message, on, run_button, set_html

METRICS = (("prompt_tokens", "Prompt tokens"), ("ttft_ms", "Time to first token (ms)"),
           ("decode_tok_per_s", "Decode tokens/s"), ("decode_ms_per_token", "Decode ms/token"),
           ("decode_after_first_tok_per_s", "Decode tokens/s after the first token"),
           ("dispatches_per_token", "Dispatches/token"), ("expected_dispatches_per_token", "Declared dispatches/token"),
           ("submits_per_token", "Submits/token"), ("readbacks_per_token", "Readbacks/token"),
           ("gpu_ms_per_token", "GPU ms/token (timestamps)"), ("stopped", "Stopped by"))


def mount(lab) -> None:
    from app.llm.suite import registered_plans
    PLANS = registered_plans()
    plans = "".join(f"<option value='{esc(p)}'{' selected' if p == 'token_pass' else ''}>{esc(p)}</option>"
                    for p in PLANS)
    set_html("panel-llm", f"""
      <h2>SmolLM2-135M on WebGPU</h2>
      <p class="muted">Our own WGSL kernels run the model token by token at batch 1; Python (Pyodide) records
      each token's dispatches once and replays them. Weights stay quantized on the GPU (Q4_1, Q8_0).</p>
      <label for="llm-prompt">Prompt</label>
      <textarea id="llm-prompt">The capital of France is</textarea>
      <div class="controls">
        <label>Format <select id="llm-chat"><option value="0">raw text (no template, no BOS)</option>
          <option value="1">chat (ChatML template)</option></select></label>
        <label>Max new tokens <input id="llm-max" type="number" min="1" max="4096" value="32"></label>
        <label>Plan <select id="llm-plan">{plans}</select></label>
        <label>Driver <select id="llm-driver"><option value="python">python</option>
          <option value="js">js</option></select></label>
        <button id="llm-generate" class="primary">Generate</button>
        <button id="llm-stop" disabled>Stop</button>
      </div>
      <div><progress id="llm-progress" max="1" value="0"></progress> <span id="llm-progress-text" class="muted"></span></div>
      <div id="llm-message"></div>
      <pre id="llm-output" class="output"></pre>
      <div id="llm-metrics"></div>""")
    on("llm-generate", "click", lambda evt: _generate(lab))
    on("llm-stop", "click", lambda evt: _stop(lab))
    on("llm-plan", "focus", lambda evt: _refresh_plans())
    from app.llm import debug
    debug.install(lab)


def _refresh_plans() -> None:
    """Other modules may register plans after mount (fused, gpu_loop): list them all."""
    from app.llm.suite import registered_plans
    add_options("llm-plan", registered_plans())


def _form(lab) -> dict:
    """The form's values over the page URL's parameters (model, poke, resident_tuning, ...), as the amortize panel."""
    return {**lab.params, "prompt": str(el("llm-prompt").value), "chat": str(el("llm-chat").value),
            "max_new_tokens": str(el("llm-max").value), "plan": str(el("llm-plan").value),
            "driver": str(el("llm-driver").value)}


def _stop(lab) -> None:
    lab.cancel_requested = True
    el("llm-stop").disabled = True
    set_html("llm-message", message("info", "Stopping after the current token…"))


async def _generate(lab) -> None:
    async def body():
        section = await run(lab, _form(lab))
        lab.section("llm", section)
        render(lab, section)
        return section
    await run_button(lab, "llm", "llm-generate", "Generating…", body)


def _progress(lab):
    """lab.progress that also drives the panel's own bar."""
    base = lab.progress

    def progress(msg, fraction=None):
        base(msg, fraction)
        bar = el("llm-progress")
        if fraction is None:
            bar.removeAttribute("value")
        else:
            bar.value = fraction
        el("llm-progress-text").textContent = msg
    return progress


class _PanelLab:
    """The lab as the suite sees it, with progress going to the panel's bar too."""

    def __init__(self, lab):
        self._lab = lab
        self.progress = _progress(lab)

    def __getattr__(self, name):
        return getattr(self._lab, name)


async def run(lab, params: dict) -> dict:
    from app.llm.suite import run as run_suite
    out = el("llm-output")
    out.textContent = ""
    el("llm-metrics").innerHTML = ""

    def on_token(token_id, piece):
        if piece:
            out.insertAdjacentText("beforeend", piece)

    return await run_suite(_PanelLab(lab), params, on_token=on_token)


def render(lab, section: dict) -> None:
    if not isinstance(section, dict):
        return
    el("llm-output").textContent = section.get("text", "")
    rows = [(label, _fmt(section.get(key))) for key, label in METRICS]
    rows += [("Plan / mode / driver", f"{section.get('plan')} / {section.get('mode')} / {section.get('driver')}"),
             ("GPU timing", section.get("gpu_timing", "—")),
             ("GPU memory (MB)", ", ".join(f"{k} {v}" for k, v in (section.get("gpu_memory_mb") or {}).items())),
             ("KV cache positions", section.get("ctx")),
             ("Model", f"{section.get('model')} (sha256 {'verified' if section.get('model_verified') else 'NOT verified'})"),
             ("Generated ids", " ".join(str(i) for i in section.get("generated_token_ids") or []))]
    note = ""
    if section.get("stopped") == "cancelled":
        note = message("info", "Stopped by the user: the text and metrics above cover the tokens made so far.")
    if section.get("dispatch_count_ok") is False:
        note += message("error", "The counted dispatches per token differ from the plan's declared count.")
    set_html("llm-metrics", note + kv(rows))


def _fmt(v) -> str:
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{v:.2f}"
    return "—" if v is None else str(v)
