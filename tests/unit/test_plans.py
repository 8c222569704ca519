"""Pure parts of the plan registry, the fused recorder, the GPU loop's bookkeeping and the amortize
section (CPython; the browser tests run the same plans on the GPU)."""
import dataclasses
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from app import report
from app.bench import amortize_report as R
from app.llm import fused, gpu_loop, plans, resident
from app.llm.kernels import STEP_STRIDE
from app.llm.loader import WeightRef, weight_layout
from app.llm.model import PLANS, dispatch_counts

MODEL = Path(os.environ.get("DISPATCHLAB_MODEL", Path(__file__).resolve().parents[2]
                            / ".cache/model/SmolLM2-135M-Instruct.Q4_1.gguf"))


def test_registry_has_every_plan_with_hooks():
    assert list(plans.ORDER) == ["op_by_op", "token_encoder", "token_pass", "fused", "gpu_loop", "resident"]
    assert all(p in PLANS for p in plans.ORDER)
    assert PLANS["fused"].mode == PLANS["gpu_loop"].mode == PLANS["resident"].mode == "one_pass"
    assert PLANS["fused"].prepare is fused.prepare and PLANS["gpu_loop"].prepare is fused.prepare
    assert PLANS["resident"].prepare is resident.prepare
    assert callable(PLANS["gpu_loop"].generate) and not hasattr(PLANS["fused"], "generate")
    assert callable(PLANS["resident"].generate) and callable(PLANS["resident"].warm)


def test_fused_dispatch_count_meets_target():
    assert fused.dispatch_count(30) == 123 <= 125
    assert fused.dispatch_count(30, logits=False) == 121
    assert dispatch_counts(30) == 485            # the per-op plans, for the comparison
    cfg = SimpleNamespace(n_layers=30)
    assert PLANS["fused"].dispatches(cfg, True) == 123 and PLANS["gpu_loop"].dispatches(cfg, False) == 121


@pytest.mark.parametrize("plan,want", [
    ("op_by_op", (485, 486, 1)), ("token_encoder", (485, 2, 1)), ("token_pass", (485, 2, 1)),
    ("fused", (123, 2, 1)), ("gpu_loop", (123, 1 / 16, 1 / 16)), ("resident", (62 + 1 / 16, 1 / 16, 1 / 16))])
def test_declared_costs(plan, want):
    c = plans.declared_costs(plan, 30, k=16)
    assert (c["dispatches_per_token"], c["submits_per_token"], c["readbacks_per_token"]) == pytest.approx(want)
    with pytest.raises(ValueError):
        plans.declared_costs("nope", 30)


# ------------------------------------------------------------------------------------------ recorder
class FakeKernel:
    def __init__(self, name, dynamic):
        self.pipeline, self.dynamic = f"pipe:{name}", dynamic


class FakeModel:
    """Just enough of app.llm.model.Model for record_fused: names, not GPU objects."""

    def __init__(self, n_layers=3):
        self.cfg = SimpleNamespace(n_layers=n_layers, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536,
                                   vocab=49152)
        dyn = {"embed", "f_attn", "f_argmax"}
        self.kernels = {k: FakeKernel(k, k in dyn) for k in
                        ("embed", "f_attn", "f_o", "f_ffn", "f_down", "f_head", "f_argmax")}
        self.act = {k: k for k in ("steps", "tokens", "x", "xb", "hb3", "att", "rope", "logits", "k_cache",
                                   "v_cache", fused.PARTS_KEY)}
        self.tuning = SimpleNamespace(wg=64)
        self.fused_tuning = fused.FusedTuning()
        self.refs, self.weights, off = {}, {}, 0
        for l in range(n_layers):
            for p in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
                self.refs[f"blk.{l}.{p}.weight"] = WeightRef(f"layer.{l}", off, 1024, (1, 1), "Q4_1", 0)
                off += 1024
            self.weights[f"layer.{l}"] = f"buffer layer.{l}"
        self.groups = []

    def w(self, name):
        return ("w", name)

    def kv(self, which, layer):
        return (which, layer)

    def group(self, kernel, key, entries):
        self.groups.append((kernel, key, entries))
        return key


@pytest.mark.parametrize("slot,logits", [(0, True), (5, True), (2, False)])
def test_record_fused_counts_and_offsets(slot, logits):
    m = FakeModel(n_layers=3)
    p = fused.record_fused(m, slot, logits)
    assert len(p) == fused.dispatch_count(3, logits)
    kinds = [s.label.rpartition(".")[2] for s in p.steps]
    assert kinds[0] == "embed" and kinds[1:5] == ["attn", "o", "ffn", "down"]
    assert (kinds[-2:] == ["head", "argmax"]) == logits
    for s in p.steps:      # the step uniform's slot is the only dynamic offset, on the kernels that read it
        dynamic = s.pipeline in ("pipe:embed", "pipe:f_attn", "pipe:f_argmax")
        assert s.offsets == ([slot * STEP_STRIDE] if dynamic else None)
    assert len({key for _, key, _ in m.groups}) == len(m.groups)   # one bind group per distinct key


def test_check_contiguous_names_the_gap():
    refs = {"a": WeightRef("layer.0", 0, 100, (1, 1), "Q4_1", 0), "b": WeightRef("layer.0", 100, 50, (1, 1), "Q4_1", 0),
            "c": WeightRef("layer.0", 256, 10, (1, 1), "Q4_1", 0), "d": WeightRef("layer.1", 150, 10, (1, 1), "Q4_1", 0)}
    assert fused.check_contiguous(refs, ["a", "b"]) == ("layer.0", 0, 150)
    with pytest.raises(ValueError, match="c is at layer.0"):
        fused.check_contiguous(refs, ["a", "b", "c"])
    with pytest.raises(ValueError, match="d is at layer.1"):
        fused.check_contiguous(refs, ["a", "b", "d"])


def test_real_model_layout_keeps_qkv_and_gate_up_contiguous():
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL}")
    from app.llm.gguf import GGUFFile, load_config
    g = GGUFFile(MODEL.read_bytes())
    cfg = load_config(g)
    refs, _ = weight_layout(g.tensors, cfg.n_layers)
    for l in range(cfg.n_layers):
        _, _, size = fused.check_contiguous(refs, [f"blk.{l}.attn_{p}.weight" for p in "qkv"])
        assert size == (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim * cfg.d_model // 32 * 20
        fused.check_contiguous(refs, [f"blk.{l}.ffn_gate.weight", f"blk.{l}.ffn_up.weight"])


def test_tuning_per_adapter():
    cpu = fused.FusedTuning.for_adapter({"isFallbackAdapter": True, "subgroupMinSize": 4})
    assert (cpu.tpr, cpu.rpt, cpu.wg) == (1, 4, 64)
    assert cpu.groups(576) == 3 and cpu.head_groups(49152) == 192 and cpu.head_parts(49152) == 192 * 16
    gpu = fused.FusedTuning.for_adapter({"isFallbackAdapter": False, "subgroupMinSize": 32, "vendor": "nvidia"},
                                        {"maxComputeInvocationsPerWorkgroup": 1024})
    assert gpu.tpr == 32 and gpu.wg % 32 == 0 and gpu.head_tpr <= 32 and gpu.attn_wg == 1024
    assert fused.FusedTuning.for_adapter({"subgroupMinSize": 32}, {}).attn_wg == 256   # the WebGPU default limit
    small = fused.FusedTuning.for_adapter({"isFallbackAdapter": False, "subgroupMinSize": 16})
    assert small.tpr == 16 and small.head_tpr <= 16            # a row's lanes must share one subgroup


# ------------------------------------------------------------------------------------------ resident
def test_resident_counts():
    assert resident.steps_per_token(30) == 61
    assert resident.dispatch_count(30) == 62 and resident.dispatch_count(30, logits=False) == 61
    assert resident.expected_dispatches(30, 4, 2) == (62 * 4 + 2) / 4      # blocks of 3 and 1: a tail each
    assert PLANS["resident"].dispatches(SimpleNamespace(n_layers=30), True) == 63   # one token = one block


def test_resident_tuning_fits_workgroup_memory():
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    cpu = resident.ResidentTuning.for_adapter({"isFallbackAdapter": True}, {}, cfg)
    assert (cpu.wg, cpu.nwg(cfg), cpu.head_groups(cfg)) == (64, 24, 768)
    lim = {"maxComputeInvocationsPerWorkgroup": 1024, "maxComputeWorkgroupStorageSize": 32768}
    big = resident.ResidentTuning.for_adapter({"subgroupMinSize": 32}, lim, cfg)
    assert (big.wg, big.split, big.acc, big.grid, big.kv_pre, big.sga, big.fb, big.wo_parts, big.touch, big.dn,
            big.cm, big.hq, big.head_rows) == (512, 1, 1, 1, 4, 1, 16, 10, 4, 3, 1, 0, 128)
    assert big.head_groups(cfg) == 384
    assert big.nwg(cfg) == 96
    assert big.shared_bytes(cfg, 32) <= 32768
    big.check(cfg, 32)
    # subgroups possibly 4 wide: sga would merge 128 subgroups' head_dim floats, more than 32 KiB, so not sga
    narrow = resident.ResidentTuning.for_adapter({}, lim, cfg)
    assert (narrow.wg, narrow.sga, narrow.wo_parts) == (512, 0, 10) and narrow.shared_bytes(cfg, 4) <= 32768
    assert big.max_wo_parts(cfg) == 10 and cpu.max_wo_parts(cfg) == 2     # 96 // 9, 24 // 9
    assert big.max_wo_parts(SimpleNamespace(**{**vars(cfg), "ffn": 16 * 225})) == 24   # 25 would leave a part empty
    assert (cpu.split, cpu.acc, cpu.grid, cpu.touch, cpu.dn, cpu.cm) == (0, 0, 0, 0, 0, 0)
    small = resident.ResidentTuning.for_adapter({}, {"maxComputeInvocationsPerWorkgroup": 1024,
                                                     "maxComputeWorkgroupStorageSize": 16384}, cfg)
    assert small.shared_bytes(cfg) <= 16384 and small.wg >= 64
    # prod holds every matvec's items and the P·V partials (4 floats per invocation; sga: head_dim per subgroup)
    assert big.prod(cfg, 32) == 4 * 512 and cpu.prod(cfg) == 3 * 64 * 9
    for bad in ({"fb": 48}, {"fb": 128, "wg": 64}, {"fb": 512}, {"wg": 96}, {"fb": 24}, {"fb": 4}, {"wv": 2},
                {"hq": 2}):
        with pytest.raises(ValueError, match="resident"):
            resident.ResidentTuning(**{"wg": 1024, **bad}).check(cfg)
    resident.ResidentTuning(wg=256, fb=96).check(cfg)
    for fb, nwg in ((16, 96), (8, 192)):          # part of a Q4_1 block of Wdown's columns per FFN workgroup
        t = resident.ResidentTuning(wg=256, fb=fb, acc=1, wo_parts=10)
        t.check(cfg)
        assert t.nwg(cfg) == nwg and t.max_wo_parts(cfg) == {16: 10, 8: 21}[fb]   # 21 · 28 rows ≥ 576 > 20 · 28


def test_resident_hq_copy_holds_every_head_item():
    """hq's copy of the embedding: 18 words per (row, pair of blocks) item, in whole chunks of 32 items."""
    cfg = SimpleNamespace(d_model=576, vocab=49152)
    assert resident.hq_words(cfg) == 49152 * 9 * 18                     # 442368 items, a multiple of 32
    assert resident.hq_words(SimpleNamespace(d_model=64, vocab=33)) == 64 * 18   # 33 items: 2 chunks


def test_resident_supported_why():
    assert resident.supported_why({"subgroups"}, {"subgroupMinSize": 32}) is None
    assert "subgroups" in resident.supported_why(set(), {})
    assert "4 wide" in resident.supported_why({"subgroups"}, {"subgroupMinSize": 2})


def test_resident_layout_constants_of_the_real_model():
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL}")
    from app.llm.gguf import GGUFFile, load_config
    g = GGUFFile(MODEL.read_bytes())
    cfg = load_config(g)
    refs, _ = weight_layout(g.tensors, cfg.n_layers)
    c = resident.layout_constants(refs, cfg)
    row = cfg.d_model // 32 * 5                     # u32 words per Q4_1 row of d_model columns
    assert c["OFF_O"] == (cfg.n_heads + 2 * cfg.n_kv_heads) * cfg.head_dim * row
    assert c["OFF_GATE"] == c["OFF_O"] + cfg.d_model * (cfg.n_heads * cfg.head_dim // 32 * 5)
    assert c["OFF_DOWN"] == c["OFF_GATE"] + 2 * cfg.ffn * row
    assert c["L_STRIDE"] * 4 == refs["blk.1.attn_q.weight"].offset
    assert c["N_STRIDE"] == 2 * cfg.d_model and c["NOFF_FFN"] == cfg.d_model
    assert c["NOFF_OUT"] * 4 == refs["output_norm.weight"].offset
    moved = dict(refs)
    r = refs["blk.2.ffn_down.weight"]
    moved["blk.2.ffn_down.weight"] = WeightRef(r.buffer, r.offset + 256, r.size, r.shape, r.type_name, 0)
    with pytest.raises(ValueError, match="layer 2's ffn_down"):
        resident.layout_constants(moved, cfg)
    untied = {**refs, "output.weight": refs["token_embd.weight"]}
    with pytest.raises(ValueError, match="tied"):
        resident.layout_constants(untied, cfg)


def test_plan_keep_state_needs_the_same_state():
    from app.plan import Plan
    p = Plan()
    with pytest.raises(ValueError, match="keep_state"):
        p.add("pipe", ["bg"], (1,), keep_state=True)          # nothing before it
    p.add("pipe", ["bg"], (4,))
    p.add("pipe", ["bg"], (4,), keep_state=True)
    with pytest.raises(ValueError, match="keep_state"):
        p.add("other", ["bg"], (4,), keep_state=True)
    with pytest.raises(ValueError, match="keep_state"):
        p.add("pipe", ["bg"], (4,), [256], keep_state=True)   # a dynamic offset must be set per dispatch
    assert [s.keep_state for s in p.steps] == [False, True] and p.counts("one_pass")["dispatches"] == 2


# ------------------------------------------------------------------------------------------ gpu loop
def test_parse_k():
    assert gpu_loop.parse_k(None) == gpu_loop.parse_k("") == gpu_loop.DEFAULT_K == 4
    assert gpu_loop.parse_k("3") == 3 and gpu_loop.parse_k(64) == 64
    for bad in ("0", "65", "x", "1.5"):
        with pytest.raises(ValueError, match="k \\(tokens per submit\\)"):
            gpu_loop.parse_k(bad)


@pytest.mark.parametrize("total,k,want", [(8, 3, [3, 3, 2]), (16, 16, [16]), (5, 16, [5]), (1, 1, [1]), (0, 4, [])])
def test_block_lengths(total, k, want):
    assert gpu_loop.block_lengths(total, k) == want


def test_resident_state_layout_matches_the_kernel():
    """tokens_at (Python: where the CPU writes the prompt and reads tokens back) and the kernel's tok0() and
    acc_at() must describe the same state buffer: 4 accumulators of 2·D words ahead of the tokens with acc, then
    (persist) the staging words, one per row of the joined Q|K|V matrix, from stage0() = 8·D."""
    import re
    src = (Path(__file__).resolve().parents[2] / "wgsl" / "resident.wgsl").read_text()
    assert re.search(r"fn tok0\(\) -> u32 \{ return select\(0u, 8u \* D, ACC != 0u\) \+ "
                     r"select\(0u, stage_words\(\), PERSIST != 0u\); \}", src)
    assert re.search(r"fn stage_words\(\) -> u32 \{ return \(HEADS \+ 2u \* KV_HEADS\) \* HEAD_DIM; \}", src)
    assert re.search(r"fn stage0\(\) -> u32 \{ return 8u \* D; \}", src)
    assert re.search(r"fn acc_at\(which: u32, slot: u32\) -> u32 \{ return \(2u \* which \+ slot\) \* 2u \* D; \}", src)
    cfg = SimpleNamespace(d_model=576, n_heads=9, n_kv_heads=3, head_dim=64)
    acc, plain = resident.ResidentTuning(acc=1), resident.ResidentTuning()
    last_acc_word = (2 * 1 + 1) * 2 * cfg.d_model + 2 * cfg.d_model       # acc_at(1, 1) + hi[D] | lo[D]
    assert resident.tokens_at(cfg, acc) == resident.STATE_HEADER + last_acc_word == 4 + 8 * 576
    assert resident.tokens_at(cfg, plain) == resident.STATE_HEADER
    persist = resident.ResidentTuning(acc=1, grid=1, split=1, persist=1)
    assert resident.tokens_at(cfg, persist) == 4 + 8 * 576 + (9 + 2 * 3) * 64


def test_resident_scratch_has_room_for_the_touch_slot():
    """scratch_floats (the buffer the CPU allocates) must reach past the kernel's o_touch() vec4, which comes
    after HP (2·HEAD_GROUPS floats, rounded up to a vec4); an odd HEAD_GROUPS needs the rounding."""
    import re
    src = (Path(__file__).resolve().parents[2] / "wgsl" / "resident.wgsl").read_text()
    assert re.search(r"fn o_touch\(\) -> u32 \{ return o_hp\(\) \+ \(2u \* HEAD_GROUPS \+ 3u\) / 4u; \}", src)
    for vocab in (49152, 49152 - 64):                                       # 768 and 767 head groups
        cfg = SimpleNamespace(d_model=576, n_heads=9, head_dim=64, ffn=1536, vocab=vocab)
        t = resident.ResidentTuning(fb=16)
        o_hp = (3 * 576 + 9 * 64 + 9 * 576 + t.nwg(cfg) * 576) // 4
        o_touch = o_hp + (2 * t.head_groups(cfg) + 3) // 4
        assert resident.scratch_floats(cfg, t) == 4 * (o_touch + 1)


def test_decode_lengths_ramp_up_to_k():
    for total, k in ((128, 8), (128, 16), (4, 3), (12, 3), (1, 8), (300, 64)):
        got = gpu_loop.decode_lengths(total, k, ramp=True)
        assert sum(got) == total and all(1 <= n <= k for n in got) and got[:2] == [1, 1][:total]
        head = got[:-1]                                        # the last block takes what is left
        assert all(b >= a and b <= a + max(1, a // 2) for a, b in zip(head, head[1:])), got
    assert gpu_loop.decode_lengths(128, 8, ramp=True)[:8] == [1, 1, 2, 3, 4, 6, 8, 8]
    assert gpu_loop.decode_lengths(8, 3) == [3, 3, 2] and gpu_loop.decode_lengths(0, 4, ramp=True) == []
    assert gpu_loop.decode_lengths(4, 3, ramp=True) == [1, 1, 2]           # the function's own default: off
    assert gpu_loop.parse_ramp(None) is gpu_loop.parse_ramp("") is gpu_loop.RAMP is True   # the runs' default: on
    assert gpu_loop.parse_ramp("1") and not gpu_loop.parse_ramp("0") and not gpu_loop.parse_ramp(" OFF ") \
        and gpu_loop.parse_ramp("true") and not gpu_loop.parse_ramp(0)
    for bad in ("2", "maybe"):
        with pytest.raises(ValueError, match=r"^ramp must be 1 or 0"):
            gpu_loop.parse_ramp(bad)
    assert gpu_loop.parse_copy_apart(None) is gpu_loop.parse_copy_apart("") is False   # default: the copy in the block
    assert gpu_loop.parse_copy_apart("1") and not gpu_loop.parse_copy_apart("off")
    with pytest.raises(ValueError, match=r"^copy_apart must be 1 or 0"):
        gpu_loop.parse_copy_apart("2")
    assert gpu_loop.parse_poke(None) == gpu_loop.parse_poke("") == gpu_loop.OPTIONS["poke_us"] == 0   # default: off
    assert gpu_loop.parse_poke(" 50 ") == 50 and gpu_loop.parse_poke("0") == 0
    for bad, msg in (("-1", "must be between 0 and 100000"), ("fast", "must be a whole number"),
                     ("100001", "must be between")):
        with pytest.raises(ValueError, match=rf"^poke \(µs between pokes\) {msg}"):
            gpu_loop.parse_poke(bad)
    assert gpu_loop.parse_poke_with(None) == gpu_loop.parse_poke_with("") == gpu_loop.OPTIONS["poke_with"] == "write"
    assert gpu_loop.parse_poke_with(" Submit ") == "submit"
    with pytest.raises(ValueError, match=r"^poke_with must be one of write, submit"):
        gpu_loop.parse_poke_with("flush")
    assert gpu_loop.parse_gpu_timing(None) is gpu_loop.parse_gpu_timing("") is gpu_loop.OPTIONS["gpu_timing"] is True
    assert not gpu_loop.parse_gpu_timing("0") and gpu_loop.parse_gpu_timing("on")
    with pytest.raises(ValueError, match=r"^gpu_timing must be 1 or 0"):
        gpu_loop.parse_gpu_timing("sometimes")
    assert gpu_loop.parse_encode_ahead(None) is gpu_loop.parse_encode_ahead("") is True   # default: during the prefill
    assert gpu_loop.OPTIONS["encode_ahead"] is True
    assert not gpu_loop.parse_encode_ahead("0") and gpu_loop.parse_encode_ahead("1")
    with pytest.raises(ValueError, match=r"^encode_ahead must be 1 or 0"):
        gpu_loop.parse_encode_ahead("early")


def test_whole_number_messages():
    from app.params import whole_number
    assert whole_number(" 7 ", 1, 8, "runs") == 7
    with pytest.raises(ValueError, match=r"^runs must be a whole number, got '1.5'$"):
        whole_number("1.5", 1, 8, "runs")
    with pytest.raises(ValueError, match=r"^max new tokens must be between 1 and 8, got 9$"):
        whole_number(9, 1, 8, "max new tokens")


def test_parse_depth():
    assert gpu_loop.parse_depth(None) == gpu_loop.parse_depth("") == gpu_loop.DEPTH == 4
    assert gpu_loop.parse_depth("2") == 2 and gpu_loop.parse_depth(1) == 1
    for bad in ("0", "9", "two", "1.5"):
        with pytest.raises(ValueError, match="depth"):
            gpu_loop.parse_depth(bad)


def test_truncate_stops_at_eos_and_room():
    assert gpu_loop.truncate([5, 6, 2, 7], 10, eos_id=2) == ([5, 6, 2], True)     # EOS inside a block
    assert gpu_loop.truncate([5, 6, 7], 2, eos_id=2) == ([5, 6], True)            # max_new reached
    assert gpu_loop.truncate([5, 6, 7], 5, eos_id=2) == ([5, 6, 7], False)
    assert gpu_loop.truncate([2], 1, eos_id=2) == ([2], True)


# ------------------------------------------------------------------------------------------ section
def _run(plan, ids, disp, ms=10.0, rate=100.0, **extra):
    return {"generated_token_ids": ids, "dispatches_per_token": disp, "expected_dispatches_per_token": disp,
            "submits_per_token": 2, "readbacks_per_token": 1, "decode_tok_per_s": rate, "decode_ms_per_token": ms,
            "gpu_ms_per_token": "unsupported", "ttft_ms": 5.0, "stopped": "max_new_tokens", **extra}


def _section():
    per = R.per_dispatch([{"mode": m, "driver": d, "slope_us": s} for m, d, s in
                          (("sequential", "python", 50.0), ("one_pass", "python", 20.0), ("one_pass", "js", 10.0),
                           ("one_encoder", "python", 30.0), ("sequential", "js", 40.0), ("one_encoder", "js", 25.0))],
                         "test")
    runs = {("op_by_op", "python"): [_run("op_by_op", [1, 2, 3], 485, ms=30.0, rate=33.0)] * 3,
            ("fused", "python"): [_run("fused", [1, 2, 3], 123, ms=11.0, rate=90.0),
                                  _run("fused", [1, 2, 3], 123, ms=12.0, rate=80.0)],
            ("fused", "js"): [_run("fused", [1, 2, 3], 123, ms=10.5, rate=95.0)],
            ("gpu_loop", "js"): [_run("gpu_loop", [1, 2, 4], 123, ms=4.0, rate=250.0, k=16, wasted_tokens=13,
                                      block_lengths=[1, 2], block_read_ms=[3.5, 6.0], block_gpu_ms=[1.2, 2.3],
                                      block_sent_ms=[0.4, 1.0], block_gpu_gap_ms=[0.05], tuning={"wg": 8})],
            ("token_pass", "js"): []}
    rows = R.plan_rows(runs, per, {"op_by_op": "sequential", "fused": "one_pass", "gpu_loop": "one_pass",
                                   "token_pass": "one_pass"}, 30, 16, {})
    iso = {"k": [1, 2, 4], "ms": [1.0, 1.1, 1.3], "slope_us": 100.0, "sequential_per_dispatch_us": 50.0,
           "series": {"one_pass": {"ms": [1.0, 1.1, 1.3], "slope_us": 100.0, "intercept_ms": 0.9, "r2": 0.99}}}
    return R.section(rows, iso, per, {"prompt": "p", "max_new": 3, "runs": 3})


def test_section_rows_and_checks():
    sec = _section()
    by = {(r["plan"], r["driver"]): r for r in sec["plans"]}
    op = by[("op_by_op", "python")]
    assert op["overhead_share"] == pytest.approx(485 * 50.0 / 1000 / 30.0) and op["per_dispatch_us"] == 50.0
    assert by[("fused", "python")]["decode_tok_per_s"] == 85.0 and by[("fused", "python")]["runs"] == 2
    assert by[("fused", "js")]["overhead_share"] == pytest.approx(123 * 10.0 / 1000 / 10.5)
    assert by[("gpu_loop", "js")]["tokens_match_op_by_op"] is False and by[("gpu_loop", "js")]["k"] == 16
    assert by[("gpu_loop", "js")]["block_timing_runs"] == [       # per run: what tells a slow run's cause apart
        {"block_lengths": [1, 2], "block_sent_ms": [0.4, 1.0], "block_read_ms": [3.5, 6.0], "block_gpu_ms": [1.2, 2.3],
         "block_gpu_gap_ms": [0.05]}]
    assert by[("gpu_loop", "js")]["tuning"] == {"wg": 8}
    assert "block_timing_runs" not in by[("fused", "js")]
    assert by[("token_pass", "js")] == {"plan": "token_pass", "driver": "js", "unsupported": "no run finished"}
    assert sec["all_tokens_identical"] is False
    assert sec["best"] == {"plan": "gpu_loop", "driver": "js", "decode_tok_per_s": 250.0}
    (pj,) = sec["python_vs_js"]
    assert pj["plan"] == "fused" and pj["ratio"] == pytest.approx(11.5 / 10.5) and pj["within_10pct"] is True


def test_section_validates_formats_and_exports():
    doc = {**report.new_results({}), "amortize": _section()}
    report.validate(doc)
    text = report.format_tables(doc)
    assert "gpu_loop K=16" in text and "Isolation" in text and "unsupported here" in text
    rows = report.to_csv(doc).splitlines()
    assert rows[0].startswith("amortize,kind,plan") and any(",isolation," in r for r in rows)
    bad = _section()
    del bad["plans"][0]["ms_per_token"]
    with pytest.raises(report.ResultsError, match=r"amortize.plans\[0\]: missing 'ms_per_token'"):
        report.validate({**report.new_results({}), "amortize": bad})
    bad = _section()
    bad["isolation"]["ms"] = [1.0]
    with pytest.raises(report.ResultsError, match="isolation"):
        report.validate({**report.new_results({}), "amortize": bad})


def test_settings_parse_and_reject():
    from app.bench.amortize import settings
    s = settings({"quick": "1"})
    assert s["quick"] and s["max_new"] == 8 and s["runs"] == 2 and s["k"] == 4 and s["plans"] == list(plans.ORDER)
    s = settings({"plans": "fused, gpu_loop", "drivers": "js", "k": "3", "runs": "4", "max_new_tokens": "8"})
    assert s["plans"] == ["fused", "gpu_loop"] and s["drivers"] == ["js"] and (s["k"], s["runs"], s["max_new"]) == (3, 4, 8)
    for bad, msg in (({"plans": "fast"}, "unknown plan 'fast'"), ({"drivers": "c"}, "unknown driver"),
                     ({"runs": "0"}, "runs must be between"), ({"max_new_tokens": "x"}, "whole number"),
                     ({"prompt": "  "}, "prompt is empty"), ({"k": "99"}, "k \\(tokens per submit\\)")):
        with pytest.raises(ValueError, match=msg):
            settings(bad)


def test_set_tuning_validates():
    from app.bench.amortize import set_tuning
    set_tuning({"fused_tuning": '{"wg": 128, "attn_wg": 1024}'})
    assert fused.OVERRIDES == {"wg": 128, "attn_wg": 1024}
    for bad in ('{"speed": 2}', '{"wg": "big"}', '{"wg": 0}', "not json"):
        with pytest.raises(ValueError, match="fused_tuning"):
            set_tuning({"fused_tuning": bad})
    set_tuning({})
    assert fused.OVERRIDES == {}
    set_tuning({"resident_tuning": '{"wg": 512}'})
    assert resident.OVERRIDES == {"wg": 512} and fused.OVERRIDES == {}
    for bad in ('{"tpr": 2}', '{"wg": 0}', '{"skip": -1}', '{"skip": true}'):
        with pytest.raises(ValueError, match="resident_tuning"):
            set_tuning({"resident_tuning": bad})
    set_tuning({"resident_tuning": '{"skip": 0, "head_wg": 256}'})   # 0 where 0 is the default
    assert resident.OVERRIDES == {"skip": 0, "head_wg": 256}
    set_tuning({"resident_tuning": '{"kv_pre": 0}'})                 # 0 where the field allows it
    assert resident.OVERRIDES == {"kv_pre": 0}
    from app.bench.amortize import tuning_overrides
    assert tuning_overrides() == {"resident_tuning_overrides": {"kv_pre": 0}}   # what the JSON records
    set_tuning({})
    assert resident.OVERRIDES == {} and tuning_overrides() == {}


def test_best_plan_per_adapter_kind():
    from types import SimpleNamespace
    from app.llm import plans
    gpu = SimpleNamespace(adapter_info={"isFallbackAdapter": False}, features={"subgroups"})
    no_subgroups = SimpleNamespace(adapter_info={"isFallbackAdapter": False}, features=set())
    cpu = SimpleNamespace(adapter_info={"isFallbackAdapter": True}, features={"subgroups"})
    assert plans.best(gpu) == "resident"
    assert plans.best(SimpleNamespace(adapter_info={"subgroupMinSize": 2}, features={"subgroups"})) == "gpu_loop"
    assert plans.best(no_subgroups) == "token_pass"
    assert plans.best(cpu) == "token_pass"


def test_resident_split_steps():
    assert resident.steps_per_token(30) == 61 and resident.steps_per_token(30, 1) == 91
    assert resident.dispatch_count(30, True, 1) == 92
    assert resident.expected_dispatches(30, 4, 2, 1) == (92 * 4 + 2) / 4
    kinds = [resident.step_kind(s, 2, 1) for s in range(7)]
    assert kinds == ["qkv", "attn", "ffn", "qkv", "attn", "ffn", "final"]
    assert [resident.step_kind(s, 2) for s in range(5)] == ["attn", "ffn", "attn", "ffn", "final"]
    with pytest.raises(ValueError, match="split"):
        resident.ResidentTuning(wg=64, fb=64, split=2).check(SimpleNamespace(
            n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152))
    assert plans.declared_costs("resident", 30, k=4, split=1)["dispatches_per_token"] == (92 * 4 + 1) / 4


def test_resident_fold_and_rd():
    """fold leaves FINAL out of decode (the head does its work): one dispatch a token less, and only where the
    head can find the last residual without the position (acc, grid, an even layer count); rd costs 2·d_model
    words of workgroup memory."""
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    assert resident.dispatch_count(30, True, 1, fold=1) == 91
    assert resident.dispatch_count(30, False, 1, fold=1) == 91        # prefill keeps FINAL (no head)
    assert resident.expected_dispatches(30, 4, 2, 1, 1) == (91 * 4 + 2) / 4
    ok = resident.ResidentTuning(wg=512, fb=16, split=1, acc=1, grid=1, rd=1, fold=1)
    ok.check(cfg, 32)
    for bad, why in (({"acc": 0}, "fold=1 needs acc"), ({"grid": 0}, "fold=1 needs acc")):
        with pytest.raises(ValueError, match=why):
            dataclasses.replace(ok, **bad).check(cfg, 32)
    with pytest.raises(ValueError, match="even number of layers"):
        ok.check(SimpleNamespace(**{**vars(cfg), "n_layers": 29}), 32)
    with pytest.raises(ValueError, match="hpre and hq 0 or 1"):
        dataclasses.replace(ok, rd=2).check(cfg, 32)
    assert ok.shared_bytes(cfg, 32) - dataclasses.replace(ok, rd=0).shared_bytes(cfg, 32) == 4 * (2 * 576 - 1)


def test_resident_block_plan_matches_the_declared_count():
    """block_plan records what dispatch_count declares, fold or not, with a head (decode) or without (prefill):
    per token the step dispatches with NWG + step workgroups (grid), then the head; one tail per block."""
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    for fold in (0, 1):
        t = resident.ResidentTuning(wg=512, fb=16, split=1, acc=1, grid=1, fold=fold)
        kernels = {k: SimpleNamespace(pipeline=object()) for k in ("r_step", "r_head", "r_tail")}
        m = SimpleNamespace(cfg=cfg, resident_tuning=t, _plans={}, kernels=kernels, ctx=256,
                            act={k: k for k in ("resident_state", "rope", "k_cache", "v_cache", "resident_scratch")},
                            weights={k: k for k in ("layers", "norms", "token_embd")}, group=lambda *a: "bind group")
        for logits, tail, length in ((True, True, 3), (False, False, 2), (True, False, 1)):
            plan = resident.block_plan(m, length, logits, tail)
            assert len(plan) == length * resident.dispatch_count(30, logits, 1, fold) + tail
            steps = resident.step_dispatches(30, logits, 1, fold)
            assert steps == 91 - (fold if logits else 0)
            first = plan.steps[:steps + logits]
            assert [s.workgroups[0] for s in first[:steps]] == [96 + s for s in range(steps)]
            assert all(s.pipeline is kernels["r_step"].pipeline for s in first[:steps])
            if logits:
                assert first[-1].pipeline is kernels["r_head"].pipeline and first[-1].workgroups[0] == 768
            assert (plan.steps[-1].pipeline is kernels["r_tail"].pipeline) is tail


def test_resident_persist_plan_counts_and_checks():
    """persist: one dispatch a token (NWG workgroups, NWG + 1 when the head runs too), one tail per block, as
    declared; it needs split, acc and grid (the staging words and the accumulators are its only cross-workgroup
    data), the head at the steps' workgroup size, and a barrier counter that stays under its failure bit."""
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    t = resident.ResidentTuning(wg=512, fb=16, split=1, acc=1, grid=1, persist=1, head_rows=128)
    t.check(cfg, 32)
    for level in (2, 3):
        dataclasses.replace(t, persist=level).check(cfg, 32)
    assert resident.dispatch_count(30, True, 1, persist=1) == resident.dispatch_count(30, False, 1, persist=1) == 1
    assert resident.expected_dispatches(30, 4, 2, 1, 0, 1) == (4 + 2) / 4
    kernels = {k: SimpleNamespace(pipeline=object()) for k in ("r_step", "r_head", "r_tail", "r_persist")}
    m = SimpleNamespace(cfg=cfg, resident_tuning=t, _plans={}, kernels=kernels, ctx=256,
                        act={k: k for k in ("resident_state", "rope", "k_cache", "v_cache", "resident_scratch")},
                        weights={k: k for k in ("layers", "norms", "token_embd")}, group=lambda *a: "bind group")
    for logits, tail, length in ((True, True, 3), (False, False, 2)):
        plan = resident.block_plan(m, length, logits, tail)
        assert len(plan) == length + tail
        assert [s.workgroups[0] for s in plan.steps[:length]] == [96 + logits] * length
        assert all(s.pipeline is kernels["r_persist"].pipeline for s in plan.steps[:length])
        assert (plan.steps[-1].pipeline is kernels["r_tail"].pipeline) is tail
    for bad, why in (({"split": 0}, "persist=1 needs split"), ({"acc": 0}, "persist=1 needs"),
                     ({"grid": 0}, "persist=1 needs"), ({"fold": 1}, "persist=1 needs"),
                     ({"hpre": 1}, "persist=1 needs"), ({"head_wg": 256}, "persist=1 needs"),
                     ({"persist": 4}, "persist 0..3")):
        with pytest.raises(ValueError, match=why):
            dataclasses.replace(t, **bad).check(cfg, 32)
    assert resident.barrier_count(30, 1, 8192, 96) < 2 ** 31 <= resident.barrier_count(30, 1, 8192 * 32, 96)
    assert t.shared_bytes(cfg, 32) == dataclasses.replace(t, persist=0).shared_bytes(cfg, 32)


def test_resident_wo_parts_and_sga_checks():
    """wo_parts: heads × parts ATTN workgroups must exist and every part get rows; sga: lanes per position a power
    of two within a subgroup and a head, at most 8 vec4s per lane; its prod holds one head_dim per subgroup."""
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    T = resident.ResidentTuning
    T(wg=512, fb=32, wo_parts=5).check(cfg)                              # 45 of 48 workgroups
    T(wg=512, fb=64, wo_parts=2).check(cfg)                              # 18 of 24
    for bad in (T(wg=512, fb=32, wo_parts=6), T(wg=512, fb=64, wo_parts=3)):
        with pytest.raises(ValueError, match="wo_parts"):
            bad.check(cfg)
    with pytest.raises(ValueError, match="every part"):                  # ceil(576 / 25) · 24 = 576: one part empty
        T(wg=512, fb=32, wo_parts=25).check(SimpleNamespace(**{**vars(cfg), "ffn": 32 * 230}))
    with pytest.raises(ValueError, match="wo_parts ≥ 1"):
        T(wo_parts=0).check(cfg)
    assert resident.rows_for_every_part(576, 5) and resident.rows_for_every_part(576, 24)
    assert not resident.rows_for_every_part(576, 25) and resident.rows_for_every_part(3, 3)
    assert [resident.min_subgroup(i) for i in ({}, {"subgroupMinSize": 32}, {"subgroupMinSize": 2})] == [4, 32, 4]
    assert T(sga=1).lanes(cfg, 32) == 16 and T(sga=1).lanes(cfg, 4) == 4 and T(sga=1, sgl=2).lanes(cfg, 32) == 2
    T(wg=64, sga=1, sgl=2).check(cfg, 4)                                 # 2 positions per 4-wide subgroup, 8 vec4s
    for sgl, sg in ((8, 4), (3, 4), (1, 4), (32, 32)):
        with pytest.raises(ValueError, match="sgl="):
            T(wg=64, sga=1, sgl=sgl).check(cfg, sg)
    T(wg=64, sgl=3).check(cfg, 4)                                        # sgl means nothing without sga
    assert T(wg=64, sga=1).prod(cfg, 4) == T(wg=64).prod(cfg, 4) == 3 * 64 * 9
    assert T(wg=512, sga=1).prod(cfg, 4) == 512 // 4 * 64 > T(wg=512).prod(cfg)   # 4-wide: 128 subgroups
    assert T(wg=512, sga=1).prod(cfg, 32) == T(wg=512).prod(cfg, 32)


def test_resident_acc_and_grid_layout():
    """acc: the state grows by 2 accumulators × 2 slots × (hi, lo) × d_model words, zero at the start of a run;
    grid: step s of a token is dispatched with NWG + s workgroups (NWG without grid)."""
    cfg = SimpleNamespace(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, head_dim=64, ffn=1536, vocab=49152)
    plain, acc = resident.ResidentTuning(wg=1024, fb=32), resident.ResidentTuning(wg=1024, fb=32, acc=1, grid=1)
    assert resident.state_words(cfg, plain, 100) == 4 + 101
    assert resident.state_words(cfg, acc, 100) == 4 + 101 + 8 * 576
    w = resident.state_init(cfg, acc, 100, [5, 6, 7])
    assert w.dtype == np.uint32 and len(w) == resident.state_words(cfg, acc, 100)
    at = 4 + 8 * 576                                  # tokens after the accumulators
    assert list(w[:4]) == [0, 3, 100, 0] and list(w[at:at + 3]) == [5, 6, 7] and not w[4:at].any() \
        and not w[at + 3:].any() and resident.tokens_at(cfg, plain) == 4
    assert list(resident.state_init(cfg, plain, 100, [5, 6, 7])[:7]) == [0, 3, 100, 0, 5, 6, 7]
    assert [resident.grid(cfg, plain, s) for s in (0, 5)] == [48, 48]
    assert [resident.grid(cfg, acc, s) for s in (0, 5, 90)] == [48, 53, 138]
    acc.check(cfg)
    for bad in ({"acc": 3}, {"grid": -1}, {"kv_pre": 9}, {"touch": 16}, {"touch": -1}):
        with pytest.raises(ValueError, match="hpre and hq 0 or 1, acc 0..2"):
            resident.ResidentTuning(wg=1024, fb=32, **bad).check(cfg)
    with pytest.raises(ValueError, match="255 contributors"):           # the low words' sum could overflow
        resident.ResidentTuning(wg=1024, fb=32, acc=1).check(SimpleNamespace(**{**vars(cfg), "ffn": 32 * 255}))


def test_after_first_rate_counts_what_came_after_the_first_delivery():
    from app.llm.generate import after_first
    assert after_first(3, 2.0) == 1500.0                   # 3 tokens in the 2 ms after the first delivery
    assert after_first(0, 5.0) is None                     # a one-token (or one-block) answer has no such rate
    assert after_first(4, 0.0) is None
