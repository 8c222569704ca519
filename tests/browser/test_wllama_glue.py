"""static/wllama_glue.js on its own (no Python): wllama loads offline from the vendored files, runs on CPU
with 1 and 2 threads, reports its WebGPU fallback honestly, returns token ids that match our numpy reference,
and turns a broken wasm into a message instead of a hang.

PROMPT's first 8 greedy tokens have a top-1/top-2 logit margin of at least 1.76 in app/llm/reference.py
(float32), far above the error of llama.cpp's 8-bit activation quantization; prompts with small margins
(e.g. "The capital of France is", margin 0.22 at token 6) legitimately diverge between engines there.
"""
import time

import pytest

from conftest import LOCAL

PROMPT = "1 2 3 4 5 6"
# Greedy continuation " 7 8 9 1" of PROMPT, computed by app.llm.reference (margins >= 1.76 logits).
GREEDY_8 = [216, 39, 216, 40, 216, 41, 216, 33]
N_CTX = 256


@pytest.fixture(scope="module")
def glue(browser, server):
    ctx = browser.new_context()
    p = ctx.new_page()
    p.external_requests = []

    def route(r):
        if LOCAL.match(r.request.url) or r.request.url.startswith(("data:", "blob:")):
            return r.continue_()
        p.external_requests.append(r.request.url)
        return r.abort()
    p.route("**/*", route)
    p.goto(server.url + "build-info.json")  # any same-origin document: the glue needs no Python
    assert p.evaluate("crossOriginIsolated") is True
    p.evaluate("import('/static/wllama_glue.js')")
    p.wait_for_function("window.dlWllama !== undefined")
    p.model_url = server.url + "models/SmolLM2-135M-Instruct.Q4_1.gguf"
    yield p
    p.evaluate("dlWllama.unload()")
    ctx.close()


def load(p, **opts):
    return p.evaluate("(o) => dlWllama.load(o)", {"url": p.model_url, "n_ctx": N_CTX, "timeout_ms": 180_000, **opts})


def complete(p, n=8):
    return p.evaluate("(o) => dlWllama.complete(o)", {"prompt": PROMPT, "n_predict": n, "timeout_ms": 180_000})


def test_capabilities(glue):
    caps = glue.evaluate("dlWllama.capabilities()")
    assert caps["jspi"] is True and caps["cross_origin_isolated"] is True
    assert caps["version"].startswith("b")  # llama.cpp build tag, e.g. b12211-7d7f028
    assert caps["hardware_concurrency"] >= 1
    assert isinstance(caps["shader_f16"], bool)


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_threads_and_greedy_ids(glue, threads):
    r = load(glue, n_gpu_layers=0, n_threads=threads)
    assert r["ok"], r.get("error")
    assert r["threads"] == threads and r["multithread"] is (threads > 1)
    assert r["on_gpu"] is False and r["offloaded"] is None and r["cpu_model_buffer"] is True
    assert r["add_bos"] is False and r["n_ctx"] == N_CTX
    assert r["load_ms"] > 0
    c = complete(glue)
    assert c["ok"], c.get("error")
    assert c["token_ids"] == GREEDY_8, c["text"]
    assert c["text"] == " 7 8 9 1"
    assert c["timings"]["predicted_n"] == 8 and c["timings"]["prompt_n"] == 11  # no BOS, no prompt cache
    assert 0 < c["ttft_ms"] < c["total_ms"] and c["decode_tok_per_s"] > 0
    again = complete(glue)  # cache_prompt false: the whole prompt is evaluated again
    assert again["token_ids"] == GREEDY_8 and again["timings"]["cache_n"] == 0


def test_webgpu_request_reports_where_it_ran(glue):
    caps = glue.evaluate("dlWllama.capabilities()")
    r = load(glue, n_gpu_layers=999, n_threads=1)
    assert r["ok"], r.get("error")
    if not caps["shader_f16"]:  # SwiftShader here: wllama silently stays on CPU; the log proves it
        assert r["on_gpu"] is False and r["offloaded"] is None and r["cpu_model_buffer"] is True
    else:
        assert r["on_gpu"] is (r["offloaded"] is not None and r["offloaded"][0] == r["offloaded"][1])
    c = complete(glue, 4)
    assert c["ok"] and c["token_ids"] == GREEDY_8[:4]
    assert glue.external_requests == []


def test_placement_parses_llama_log(glue):
    gpu = glue.evaluate("dlWllama.placement(['load_tensors: offloading 30 repeating layers to GPU',"
                        "'load_tensors: offloaded 31/31 layers to GPU', 'load_tensors: CPU model buffer size = 20 MiB'])")
    assert gpu == {"offloaded": [31, 31], "cpu_model_buffer": True, "on_gpu": True}
    part = glue.evaluate("dlWllama.placement(['load_tensors: offloaded 12/31 layers to GPU'])")
    assert part["on_gpu"] is False and part["offloaded"] == [12, 31]
    cpu = glue.evaluate("dlWllama.placement(['load_tensors:          CPU model buffer size =    92.10 MiB'])")
    assert cpu == {"offloaded": None, "cpu_model_buffer": True, "on_gpu": False}


def test_broken_wasm_is_a_message(glue):
    # wllama itself never settles loadModel after a wasm abort; the glue fails it from the log at once.
    t0 = time.monotonic()
    r = load(glue, n_gpu_layers=0, n_threads=1, wasm_url=glue.model_url.replace("models/SmolLM2-135M-Instruct.Q4_1.gguf",
                                                                                "vendor/wllama/missing.wasm"),
             timeout_ms=60_000)
    assert r["ok"] is False and "Aborted(CompileError" in r["error"]
    assert time.monotonic() - t0 < 50  # well before the 60 s timeout
    c = complete(glue)
    assert c["ok"] is False and "no wllama model loaded" in c["error"]
    assert glue.external_requests == []
