"""The amortize suite in the page: every plan gives the numpy reference's greedy tokens with its declared
dispatch count, gpu_loop gives the same tokens for K = 1, 3, 16 with EOS inside a block, the isolation
splits equal k=1, and the suite's autorun produces a valid section and a rendered panel.

SwiftShader runs our kernels at about one token per second, so prompts are short and runs few.
The expected ids are the numpy reference's (pinned and checked in tests/unit/test_reference.py).
"""
from __future__ import annotations

import json

import pytest

from app import report
from conftest import open_lab, page_text_has_no_traceback, wait_state

PROMPT = "The capital of France is"
PROMPT_GREEDY = [7042, 30, 198, 198]           # " Paris.\n\n" (reference.greedy)
CHAT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
CHAT_GREEDY = [504, 3575, 282, 4649, 314, 7042, 30, 2]   # "The capital of France is Paris.<|im_end|>"



def check(page, name, params, timeout_s=900):
    page.set_default_timeout(timeout_s * 1000)
    out = json.loads(page.evaluate("([n, p]) => dlAmortize.check(n, p)", [name, json.dumps(params)]))
    assert "error" not in out, out["error"]
    return out


def test_isolation_splits_compute_the_same_result(lab_page):
    iso = check(lab_page, "isolation", {"rows": 512, "cols": 256, "max_k": 64, "reps": 1})
    assert iso["k"] == [1, 2, 4, 8, 16, 32, 64]
    assert iso["all_splits_identical"] is True
    assert [c["k"] for c in iso["checks"]] == iso["k"]
    for c in iso["checks"]:
        assert c["max_abs_diff_vs_k1"] == 0.0          # bit-identical to one dispatch
        assert c["max_rel_err_vs_numpy"] < 1e-5        # f32 sums of 256 terms vs float64 numpy
    assert set(iso["series"]) == {"one_pass", "sequential"}
    assert all(len(s["ms"]) == len(iso["k"]) for s in iso["series"].values())


@pytest.mark.parametrize("plans,driver,ramp", [("op_by_op,token_pass,fused,gpu_loop", "python", "0"),
                                               ("token_encoder,fused,gpu_loop", "js", "1")])
def test_every_plan_gives_reference_tokens_and_declared_dispatches(lab_page, plans, driver, ramp):
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": plans, "drivers": driver,
                                    "k": 3, "ramp": ramp})
    rows = out["plans"]
    assert [r["plan"] for r in rows] == plans.split(",")
    for r in rows:
        assert "unsupported" not in r, r
        assert r["generated_token_ids"] == PROMPT_GREEDY, r["plan"]
        assert r["dispatches_per_token"] == r["declared_dispatches_per_token"], r["plan"]
        assert r["dispatch_count_ok"] is True
    by = {r["plan"]: r for r in rows}
    assert by["fused"]["dispatches_per_token"] == 123 and by["gpu_loop"]["dispatches_per_token"] == 123
    if "op_by_op" in by:
        assert by["op_by_op"]["dispatches_per_token"] == 485 and by["op_by_op"]["submits_per_token"] == 486
    # 4 tokens: blocks of 3 and 1, or ramping up (decode_lengths) 1, 1 and 2
    assert by["gpu_loop"]["blocks"] == (3 if ramp == "1" else 2) and by["gpu_loop"]["ramp"] is (ramp == "1")
    assert by["gpu_loop"]["readbacks_per_token"] == pytest.approx(by["gpu_loop"]["blocks"] / 4)
    # one submit a block: the readback copy rides in the block's command buffer
    assert by["gpu_loop"]["submits_per_token"] == pytest.approx(by["gpu_loop"]["blocks"] / 4)
    assert by["gpu_loop"]["copy_apart"] is False
    assert by["gpu_loop"]["encode_ahead"] is True                # the default: the first block encoded during prefill
    (bt,) = by["gpu_loop"]["block_timing_runs"]                 # one run: each block's submit, readback, GPU time
    assert bt["block_lengths"] == ([1, 1, 2] if ramp == "1" else [3, 1])
    assert len(bt["block_read_ms"]) == len(bt["block_lengths"]) and bt["block_read_ms"] == sorted(bt["block_read_ms"])
    assert len(bt["block_sent_ms"]) == len(bt["block_lengths"]) and bt["block_sent_ms"] == sorted(bt["block_sent_ms"])
    assert all(0 <= s < r for s, r in zip(bt["block_sent_ms"], bt["block_read_ms"]))   # submitted before read back
    if bt["block_gpu_ms"] != "unsupported":                     # adapters without timestamp-query
        assert len(bt["block_gpu_ms"]) == len(bt["block_lengths"]) and all(g > 0 for g in bt["block_gpu_ms"])
        # one queue, one clock: each block's pass starts after the previous one's ends
        assert len(bt["block_gpu_gap_ms"]) == len(bt["block_lengths"]) - 1 and all(g >= 0 for g in bt["block_gpu_gap_ms"])


@pytest.mark.parametrize("driver", ["python", "js"])
def test_resident_plan_gives_reference_tokens_and_declared_dispatches(lab_page, driver):
    """The JS row submits each block's readback copy on its own (copy_apart=1, the old way, for A/B runs): 2
    submits a block instead of 1, the same tokens.  The Python row pokes (poke=50): its last readback is awaited
    with at least one poke (a 4-byte writeBuffer, poke_with's default), which the submit count leaves out; the JS row sends none.  The Python row also
    writes no timestamps (gpu_timing=0): its GPU times say so instead of holding numbers; the JS row's are
    measured (SwiftShader has timestamp-query).  The JS row encodes its first decode block during the prefill (the
    default, here with its copy in a command buffer of its own); the Python row after decode timing starts
    (encode_ahead=0)."""
    apart = driver == "js"
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": "resident", "drivers": driver,
                                    "k": 3, "copy_apart": "1" if apart else "", "poke": "" if apart else "50",
                                    "gpu_timing": "" if apart else "0", "encode_ahead": "" if apart else "0"})
    (r,) = out["plans"]
    assert "unsupported" not in r, r
    assert r["generated_token_ids"] == PROMPT_GREEDY
    if apart:
        assert r["gpu_ms_per_token"] > 0 and r["gpu_timing"].startswith("timestampWrites")
        assert all(len(b["block_gpu_ms"]) == 3 for b in r["block_timing_runs"])
    else:
        assert r["gpu_ms_per_token"] == "not measured (gpu_timing=0)" and r["gpu_timing"].startswith("off")
        assert all(b["block_gpu_ms"] == b["block_gpu_gap_ms"] == "not measured (gpu_timing=0)"
                   for b in r["block_timing_runs"])
    # the defaults: blocks ramping up (1, 1, 2), 4 in flight
    assert r["blocks"] == 3 and r["ramp"] is True and r["depth"] == 4
    assert r["dispatches_per_token"] == (62 * 4 + 3) / 4      # 2·30 + FINAL + head per token, a tail per block
    assert r["dispatch_count_ok"] is True
    assert r["readbacks_per_token"] == pytest.approx(3 / 4)
    assert r["copy_apart"] is apart and r["submits_per_token"] == pytest.approx((2 if apart else 1) * 3 / 4)
    assert r["poke_us"] == (0 if apart else 50) and r["poke_with"] == (None if apart else "write")
    assert r["encode_ahead"] is apart
    assert r["pokes_runs"] and all((p == 0) if apart else (p >= 1) for p in r["pokes_runs"]), r["pokes_runs"]
    # the rate after the first delivery: the 3 tokens of blocks 2 and 3 over the time from block 1's readback to
    # block 3's (block_read_ms is rounded to µs, the rate to 3 decimals: on a loaded machine SwiftShader's rate can
    # be ~0.25 tok/s, where that rounding alone is 2e-3 of it)
    runs = r["block_timing_runs"]
    assert len(r["decode_after_first_runs"]) == len(runs)
    for rate, b in zip(r["decode_after_first_runs"], runs):
        assert b["block_lengths"] == [1, 1, 2]
        assert rate == pytest.approx(3000 / (b["block_read_ms"][-1] - b["block_read_ms"][0]), rel=1e-3, abs=6e-4)


LONG_PROMPT = " ".join(["one two three four five six seven eight nine ten"] * 7)   # 70 tokens: > 64 positions


@pytest.fixture(scope="module")
def long_reference(lab_page):
    """token_pass's greedy tokens after LONG_PROMPT, computed once for every resident variant below."""
    (r,) = check(lab_page, "plans", {"prompt": LONG_PROMPT, "max_new_tokens": 3, "plans": "token_pass",
                                     "drivers": "js", "k": 4})["plans"]
    assert len(r["generated_token_ids"]) == 3
    return r["generated_token_ids"]


@pytest.mark.parametrize("tuning", ['{"wg": 64}', '{"wg": 64, "kv_pre": 8, "acc": 1, "split": 1}',
                                    '{"wg": 64, "sga": 1, "kv_pre": 8, "acc": 1, "split": 1, "wo_parts": 2}',
                                    '{"wg": 64, "sga": 1, "sgl": 2, "kv_pre": 3}'])
def test_resident_attention_spans_several_chunks(lab_page, long_reference, tuning):
    """A context longer than the resident kernel's workgroup (64 invocations on CPU adapters) makes its
    attention run several chunks with a running max and sum, with K/V of the first chunk's first kv_pre
    rounds loaded up front and the rest inside the loop; the tokens must still match token_pass.  sga: 16
    slots of 4 lanes (4 vec4s each) take 4 or 5 positions each, 2 of 2 lanes per 4-wide subgroup merge by
    shuffles (sgl 2), and this dispatch's own K/V come from workgroup memory (split 0); wo_parts: 2 workgroups
    per head, each adding half of the output projection's rows.  No grid here: its extra workgroups (up to 90 a
    step) cost SwiftShader more than the rest of a step, about 1.6 of 3.4 s a position with split; the tests
    with a short prompt cover it."""
    out = check(lab_page, "plans", {"prompt": LONG_PROMPT, "max_new_tokens": 3, "plans": "resident",
                                    "drivers": "js", "k": 4, "resident_tuning": tuning})
    (r,) = out["plans"]
    assert "unsupported" not in r, r
    assert r["generated_token_ids"] == long_reference
    assert {**r["tuning"], **json.loads(tuning)} == r["tuning"]     # the row records the tuning that ran


def test_resident_tuning_variants_give_reference_tokens(lab_page):
    """The H200 tuning knobs must not change the tokens: a workgroup smaller than D/4 (partial sums gathered
    in two passes), a head workgroup smaller than the step's, fewer rows per head workgroup."""
    tuning = '{"wg": 128, "head_wg": 64, "head_rows": 32}'
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": "resident", "drivers": "js",
                                    "k": 3, "resident_tuning": tuning})
    (r,) = out["plans"]
    assert "unsupported" not in r, r
    assert r["generated_token_ids"] == PROMPT_GREEDY


@pytest.mark.parametrize("k,ramp", [(3, ""), (16, "0")])
def test_resident_split_gives_reference_tokens_and_declared_dispatches(lab_page, k, ramp):
    """split=1 (Q|K|V in a step of its own): same tokens, 3·30 + FINAL + head per token, a tail per block; the
    prompt of several tokens exercises the prefill through the split steps too."""
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": "resident", "drivers": "js",
                                    "k": k, "ramp": ramp, "resident_tuning": '{"split": 1}'})
    (r,) = out["plans"]
    assert "unsupported" not in r, r
    assert r["generated_token_ids"] == PROMPT_GREEDY
    assert r["dispatches_per_token"] == (92 * 4 + (3 if ramp == "" else 1)) / 4   # blocks 1, 1, 2 (default), or 4
    assert r["dispatch_count_ok"] is True


@pytest.mark.parametrize("tuning", ['{"acc": 1, "grid": 1, "split": 1, "kv_pre": 5, "cm": 4}',
                                    '{"grid": 1, "split": 1, "sga": 1, "wo_parts": 2}',
                                    '{"fb": 16, "acc": 1, "grid": 1, "split": 1, "sga": 1, "wo_parts": 3, "wv": 1,'
                                    ' "touch": 15, "rd": 1, "fold": 1, "hpre": 1, "dn": 3, "hq": 1}',
                                    '{"fb": 8, "acc": 1, "wv": 1}', '{"fb": 16, "cm": 7}',
                                    '{"fb": 16, "acc": 2, "grid": 1, "split": 1, "sga": 1, "wo_parts": 3}',
                                    '{"wg": 128, "head_wg": 64, "acc": 2, "grid": 1, "rd": 1, "fold": 1, "hpre": 1,'
                                    ' "dn": 1}'])
def test_resident_acc_and_grid_give_reference_tokens(lab_page, tuning):
    """acc (residual sums as fixed-point atomics, two slots per accumulator zeroed one dispatch after their
    read) and grid (the step from the workgroup count, the position from the state): same tokens over a
    prompt of several tokens and blocks of 3, declared dispatches unchanged (the extra workgroups are not
    dispatches).  fb 16 / 8: each FFN workgroup's down-projection slice is half / a quarter of a Q4_1 block
    (the low or high nibbles of some of its bytes), 96 / 192 workgroups per step (without acc: 96 partial
    vectors gathered).  touch (loads whose values only feed a store nothing reads) leaves the tokens alone.
    rd (accumulators read through workgroup memory) and fold (no FINAL: the head reads the last residual and
    advances the position) give the same tokens, fold with one dispatch a token less; so does hpre (the head's
    first embedding words loaded before the residual), and dn (the norm's cross-subgroup sum after the matvec).
    dn's bit 2, block sums by shuffles, needs subgroups ≥ 8 wide, so here (SwiftShader's are 4) it falls back to
    the block_sums pass; it runs on GPUs, where every H200 run gave the same tokens as the other plans
    (results/2026-12-05-nvidia-h200-dn).  cm (the plan's own copy of the matrices: 1 and 2 the down and output
    projections column-major, 4 q|k|v and gate|up word-interleaved) gives the same tokens, with split (the
    Q|K|V step) and without (Q|K|V in the ATTN step): a wrong permutation would not.  hq (the plan's copy of
    the embedding, head items interleaved) gives the same tokens through the embedding reads and the head's dot
    products, hpre's first item included.  acc without grid or split is the fb 8 row, grid without acc the
    wo_parts 2 row, grid without split the wg 128 row."""
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": "resident", "drivers": "js",
                                    "k": 3, "resident_tuning": tuning})
    (r,) = out["plans"]
    assert "unsupported" not in r, r
    assert r["generated_token_ids"] == PROMPT_GREEDY
    per = (92 if "split" in tuning else 62) - ('"fold": 1' in tuning)
    assert r["dispatches_per_token"] == (per * 4 + 3) / 4     # blocks 1, 1, 2
    assert r["dispatch_count_ok"] is True


@pytest.mark.parametrize("level", [1, 3])
def test_resident_persist_gives_reference_tokens_or_says_unsupported(lab_page, level):
    """persist (a whole token in one dispatch, grid barriers on an atomic counter between its steps) needs every
    workgroup of the dispatch resident at once.  Where they are, it gives the reference tokens with one dispatch a
    token (+ the tail per block); where they are not (SwiftShader runs a few workgroups at a time), the barrier
    gives up after a bounded number of polls and the run says so, instead of hanging or returning wrong tokens.
    Level 3 (weights, norm weights and K/V items loaded before the previous step's barrier) compiles and fails
    the same way here; on GPUs both gave the reference tokens
    (results/2026-12-05-nvidia-h100-persist, results/2026-12-06-nvidia-h200-poke)."""
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 4, "plans": "resident", "drivers": "js,python",
                                    "k": 3, "resident_tuning": json.dumps({"acc": 1, "grid": 1, "split": 1, "persist": level})})
    r = out["plans"][0]
    if "unsupported" in r:
        assert f"persist={level} is unsupported here" in r["unsupported"], r
        assert "did not run all 24 workgroups" in r["unsupported"], r
        return
    assert len(out["plans"]) == 2
    assert r["generated_token_ids"] == PROMPT_GREEDY
    assert r["dispatches_per_token"] == (4 + 3) / 4     # blocks 1, 1, 2
    assert r["dispatch_count_ok"] is True


def test_resident_ablation_skips_the_work(lab_page):
    """skip (timing runs only) really removes work: with every phase but ATTN's token pick skipped (all bits
    but 64), the head's parts name token 300, so that is what comes out, every time."""
    out = check(lab_page, "plans", {"prompt": PROMPT, "max_new_tokens": 3, "plans": "resident", "drivers": "js",
                                    "k": 2, "resident_tuning": '{"skip": 959}'})
    (r,) = out["plans"]
    assert r["generated_token_ids"] == [300, 300, 300]


@pytest.mark.parametrize("k,ramp,depth", [(1, 0, 2), (5, 1, 4), (16, 0, 1)])
def test_resident_k_gives_same_tokens_with_eos_inside_a_block(lab_page, k, ramp, depth):
    """Blocks of k (or ramping up to k) with depth blocks in flight: the blocks after EOS are discarded."""
    out = check(lab_page, "plans", {"prompt": CHAT, "max_new_tokens": 12, "plans": "resident", "drivers": "js",
                                    "k": k, "ramp": ramp, "depth": depth})
    (r,) = out["plans"]
    assert (r["ramp"], r["depth"]) == (bool(ramp), depth)
    assert r["generated_token_ids"] == CHAT_GREEDY     # a prompt of several blocks, EOS inside one
    assert r["stopped"] == "eos"


@pytest.mark.parametrize("k", [1, 3, 16])
def test_gpu_loop_k_gives_same_tokens_with_eos_inside_a_block(lab_page, k):
    out = check(lab_page, "plans", {"prompt": CHAT, "max_new_tokens": 12, "plans": "gpu_loop", "drivers": "js",
                                    "k": k})
    (r,) = out["plans"]
    assert r["generated_token_ids"] == CHAT_GREEDY     # EOS (2) is token 8: inside a block for K = 3, 16
    assert r["stopped"] == "eos"
    assert r["dispatches_per_token"] == 123
    if k > 1:
        assert r["wasted_tokens"] > 0                  # computed past EOS in its block, then discarded


def test_autorun_quick_section_and_panel(page, server):
    q = "suite=amortize&autorun=1&quick=1&max_new_tokens=2&runs=1&plans=fused,gpu_loop&drivers=js&k=2"
    assert open_lab(page, server, q, timeout_s=900) == "done"
    doc = page.evaluate("dlResults")
    report.validate(doc)                               # the schema build.py bench and imports check
    sec = doc["amortize"]
    assert [(r["plan"], r["driver"]) for r in sec["plans"]] == [("fused", "js"), ("gpu_loop", "js")]
    assert sec["all_tokens_identical"] is True
    iso = sec["isolation"]
    for key in ("k", "ms", "slope_us", "sequential_per_dispatch_us"):
        assert key in iso
    assert iso["sequential_per_dispatch_us"] > 0 and iso["all_splits_identical"] is True
    for mode in ("sequential_us", "one_encoder_us", "one_pass_us"):
        assert sec["per_dispatch"][mode] is not None
    text = page.inner_text("#panel-amortize")
    assert "gpu_loop K=2" in text and "Isolation" in text and "tok/s after the 1st token" in text
    assert page.evaluate("document.querySelectorAll('#panel-amortize canvas').length") == 2
    assert page_text_has_no_traceback(page)


@pytest.mark.parametrize("query,message", [("k=0", "k (tokens per submit) must be between 1 and 64"),
                                           ("ramp=maybe", "ramp must be 1 or 0 (on or off), got 'maybe'"),
                                           ("depth=9", "depth (blocks in flight) must be between 1 and 8")])
def test_bad_k_ramp_or_depth_gets_a_message(page, server, query, message):
    page.goto(server.url + f"?suite=amortize&autorun=1&{query}&skip_isolation=1")
    assert wait_state(page, ("done", "error"), timeout_s=300) == "error"
    assert message in page.inner_text("#error")
    assert page_text_has_no_traceback(page)
