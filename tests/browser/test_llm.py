"""SmolLM2-135M on WebGPU in the page, against the numpy reference computed here from the same GGUF.

Logit error bound: max|gpu − ref| ≤ 1e-4 · max|ref| per step.  Both sides compute in float32 from the
same exactly-dequantized weights (Q4_1/Q8_0 blocks give the same f32 values on both sides); they differ
only in the order of f32 accumulations (blocked dot products, tree reductions, exp/sqrt of the GPU's
math library), each worth a few ulp (~1e-7 relative), compounded through 30 layers and a 49152-row head.
Measured here: ~2e-6.  1e-4 leaves a 50× margin for other GPUs' math libraries and still fails on any
real defect (a wrong RoPE pair, scale or KV slot moves logits by O(1), i.e. 1e-1 relative or more).
SwiftShader is slow (seconds per few tokens), so runs are short.
"""
from __future__ import annotations

import base64
import json
import os
import shutil

import numpy as np
import pytest

from conftest import MODEL, open_lab, page_text_has_no_traceback, wait_state

PROMPT = "The capital of France is"
N_NEW = 10
METRICS = ("prompt_tokens", "ttft_ms", "decode_tok_per_s", "dispatches_per_token", "submits_per_token",
           "readbacks_per_token", "gpu_ms_per_token", "generated_token_ids", "text")


@pytest.fixture(scope="module")
def ref():
    """Reference greedy ids and per-step logits for PROMPT (CPython, numpy)."""
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL}")
    from app.llm.gguf import GGUFFile, load_config
    from app.llm.reference import Reference
    from app.llm.tokenizer import Tokenizer
    g = GGUFFile(MODEL.read_bytes())
    cfg = load_config(g)
    ids = Tokenizer.from_metadata(g.metadata).encode(PROMPT)
    r = Reference(g, cfg, 64)
    for pos, t in enumerate(ids):
        logits = r.forward(t, pos)
    out, steps = [], []
    for i in range(N_NEW):
        steps.append(logits)
        out.append(int(np.argmax(logits)))
        logits = r.forward(out[-1], len(ids) + i)
    return {"prompt_ids": ids, "ids": out, "logits": steps, "eos": cfg.eos_id}


@pytest.fixture(scope="module")
def lab(browser, server):
    """One page for the module: the model is loaded once and kept, as in a real session."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.gguf_requests = []
    page.on("request", lambda r: r.url.endswith(".gguf") and page.gguf_requests.append(r.url))
    assert open_lab(page, server) == "ready"
    page.wait_for_function("window.dlLLM !== undefined", timeout=30_000)
    yield page
    ctx.close()


def run(page, **params) -> dict:
    out = json.loads(page.evaluate("async (p) => await dlLLM.run(p)", json.dumps(params)))
    return out


def test_logits_and_greedy_tokens_match_reference(lab, ref):
    out = run(lab, prompt=PROMPT, max_new_tokens=N_NEW, plan="token_pass", capture_logits=True)
    assert "error" not in out, out
    sec = out["section"]
    assert sec["prompt_token_ids"] == ref["prompt_ids"]
    assert sec["generated_token_ids"] == ref["ids"], "greedy tokens differ from the numpy reference"
    assert len(sec["generated_token_ids"]) >= 8
    logits = [np.frombuffer(base64.b64decode(x), np.float32) for x in out["logits"]]
    assert len(logits) == N_NEW
    for step, (got, want) in enumerate(zip(logits, ref["logits"])):
        rel = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        assert rel <= 1e-4, f"step {step}: max relative logit error {rel:.2e}"
    assert sec["text"].startswith(" Paris")


def test_metrics_and_counts(lab, ref):
    sec = run(lab, prompt=PROMPT, max_new_tokens=3, plan="token_pass", driver="js")["section"]
    for key in METRICS + ("model", "plan", "driver", "gpu_memory_mb"):
        assert key in sec, key
    assert sec["dispatches_per_token"] == sec["expected_dispatches_per_token"] == 485
    assert sec["prefill_dispatches_per_token"] == sec["expected_prefill_dispatches_per_token"] == 481
    assert sec["submits_per_token"] == 2.0 and sec["readbacks_per_token"] == 1.0   # replay + readback copy
    assert sec["ttft_ms"] > 0 and sec["decode_tok_per_s"] > 0
    g = sec["gpu_ms_per_token"]
    assert g == "unsupported" or g > 0
    mem = sec["gpu_memory_mb"]
    # the KV cache holds the context asked for (it only grows: the first test asked for 5 + 10)
    assert mem["weights"] <= 110 and sec["ctx"] == len(ref["prompt_ids"]) + N_NEW
    assert mem["kv_cache"] == pytest.approx(2 * 30 * sec["ctx"] * 192 * 4 / 1e6, abs=1e-3)
    assert sec["generated_token_ids"] == ref["ids"][:3]
    assert len(lab.gguf_requests) == 1, "the model is fetched once per session"


@pytest.mark.parametrize("plan,driver", [("op_by_op", "python"), ("token_encoder", "js"), ("token_pass", "python")])
def test_plans_give_identical_tokens(lab, ref, plan, driver):
    sec = run(lab, prompt=PROMPT, max_new_tokens=8, plan=plan, driver=driver)["section"]
    assert sec["generated_token_ids"] == ref["ids"][:8]
    assert sec["dispatches_per_token"] == sec["expected_dispatches_per_token"]
    if plan == "op_by_op":
        assert sec["submits_per_token"] == 486.0
        assert sec["gpu_ms_per_token"] == "unsupported" or sec["gpu_ms_per_token"] > 0


def test_block_loop_options_and_overrides_apply_to_their_own_run(lab, ref):
    """The llm suite takes the block loops' options and the kernel overrides from its own parameters
    (app.bench.amortize.set_tuning, as amortize and compare do) and records the overrides; the next run without
    them gets the defaults again, not what an earlier run or suite left set."""
    sec = run(lab, prompt=PROMPT, max_new_tokens=3, plan="resident", driver="js", poke="50",
              resident_tuning='{"split": 1}')["section"]
    assert sec["generated_token_ids"] == ref["ids"][:3]
    assert sec["resident_tuning_overrides"] == {"split": 1}
    assert sec["poke_us"] == 50 and sec["poke_with"] == "write"
    sec = run(lab, prompt=PROMPT, max_new_tokens=3, plan="resident", driver="js")["section"]
    assert sec["generated_token_ids"] == ref["ids"][:3]
    assert "resident_tuning_overrides" not in sec and sec["poke_us"] == 0 and sec["poke_with"] is None


def test_streams_and_stop_keeps_what_was_made(lab):
    lab.click("#tabs button[data-panel=llm]")
    lab.fill("#llm-prompt", "Write a long story about a dragon.")
    lab.select_option("#llm-chat", "1")
    lab.fill("#llm-max", "200")
    lab.click("#llm-generate")
    lab.wait_for_function("document.getElementById('llm-output').textContent.length > 0", timeout=120_000)
    assert lab.get_attribute("#status", "data-state") == "running"   # text arrived before the run ended
    streamed = lab.inner_text("#llm-output")
    lab.click("#llm-stop")
    assert wait_state(lab, ("done", "error"), 120) == "done"
    metrics = lab.inner_text("#llm-metrics")
    assert "cancelled" in metrics and "Stopped by the user" in metrics
    final = lab.inner_text("#llm-output")
    assert final.startswith(streamed.strip()[:10])
    saved = lab.evaluate("JSON.parse(localStorage.getItem('dispatchlab.results.v1')).llm")
    assert saved["stopped"] == "cancelled" and 0 < len(saved["generated_token_ids"]) < 200
    assert page_text_has_no_traceback(lab)


def test_empty_and_too_long_prompts_in_the_panel(lab):
    lab.click("#tabs button[data-panel=llm]")
    lab.fill("#llm-prompt", "   ")
    lab.click("#llm-generate")
    lab.wait_for_selector("#llm-message .message.error", timeout=30_000)
    assert "prompt is empty" in lab.inner_text("#llm-message")
    assert "prompt is empty" in lab.inner_text("#error")
    out = run(lab, prompt="hello " * 4200, max_new_tokens=4000)
    assert "over the model's context length of 8192" in out["error"]
    assert page_text_has_no_traceback(lab)


def test_the_panel_runs_with_the_page_urls_options(page, server):
    """The LLM panel's Generate passes the page URL's parameters under its form's values, as the amortize panel
    does: a bad poke in the URL is reported there, before any model work."""
    assert open_lab(page, server, "poke=abc") == "ready"
    page.click("#tabs button[data-panel=llm]")
    page.fill("#llm-max", "2")
    page.click("#llm-generate")
    page.wait_for_selector("#llm-message .message.error", timeout=60_000)
    assert "poke (µs between pokes)" in page.inner_text("#llm-message")
    assert page_text_has_no_traceback(page)


# ------------------------------------------------------------------------------ bad model files (autorun)
@pytest.fixture(scope="module")
def bad_models(site):
    """Bad copies inside this session's private site: a corrupt GGUF, and the real file with a manifest
    that gives another sha256."""
    d = site / "models"
    (d / "corrupt").mkdir(exist_ok=True)
    (d / "corrupt" / "broken.gguf").write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\xff" * 60)
    (d / "badhash").mkdir(exist_ok=True)
    target = d / "badhash" / MODEL.name
    if not target.exists():
        try:
            os.link(d / MODEL.name, target)
        except OSError:
            shutil.copyfile(d / MODEL.name, target)
    (d / "badhash" / "manifest.json").write_text(json.dumps({"file": MODEL.name, "sha256": "0" * 64}))
    return d


@pytest.mark.parametrize("query,needle", [
    ("prompt=%20%20", "prompt is empty"),
    ("model=models/missing.gguf", "model file not found (HTTP 404): models/missing.gguf"),
    ("model=models/corrupt/broken.gguf", "implausible counts"),
    (f"model=models/badhash/{MODEL.name}", "has the wrong sha256"),
    ("gpu_budget_mb=50", "out of GPU memory while creating the GPU buffers for the weights"),
    ("poke=abc", "poke (µs between pokes)"),
    ("resident_tuning=%7B%22nope%22%3A1%7D", "resident_tuning: 'nope' is not a tuning field"),
])
def test_bad_inputs_in_autorun(page, server, bad_models, query, needle):
    assert open_lab(page, server, f"suite=llm&autorun=1&max_new_tokens=2&{query}", timeout_s=300) == "error"
    doc = page.evaluate("dlResults")
    assert needle in doc["error"], doc["error"]
    assert needle in page.inner_text("#error")
    assert "llm" not in doc
    assert page_text_has_no_traceback(page)
