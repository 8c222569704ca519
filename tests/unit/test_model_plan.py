"""Pure parts of the WebGPU model: binding layouts read from the WGSL files, the weight layout, the
recorded per-token plan (with fake pipelines: counted dispatches, bind group arity against the kernels'
declared bindings, dynamic offsets, grid sizes), parameter checks and the "llm" report section."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from app import report
from app.llm import llm_report, reference
from app.llm.gguf import GGUFError, GGUFFile, TensorInfo, load_config
from app.llm.kernels import WGSL_DIR, Binding, layout_entries, parse_bindings, wgsl_source
from app.llm.loader import ALIGN, manifest_sha256, weight_layout
from app.llm.model import PLANS, Model, Tuning, dispatch_counts, record_forward
from app.llm.session import kernel_specs, rope_table
from app.llm.suite import parse_params
from app.plan import MODES

ROOT = Path(__file__).resolve().parents[2]
MODEL = Path(os.environ.get("DISPATCHLAB_MODEL", ROOT / ".cache/model/SmolLM2-135M-Instruct.Q4_1.gguf"))
MY_KERNELS = ("embed_q8_0", "rmsnorm", "matvec_q4_1", "matvec_q4_1_x8", "matvec_q8_0", "matvec_q8_0_x8", "rope",
              "kv_write", "attention", "silu_mul", "add", "argmax")


@pytest.fixture(scope="module")
def gguf():
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL} (set DISPATCHLAB_MODEL)")
    return GGUFFile(MODEL.read_bytes())


@pytest.fixture(scope="module")
def cfg(gguf):
    return load_config(gguf)


# ------------------------------------------------------------------------------------------ kernels
@pytest.mark.parametrize("name", MY_KERNELS)
def test_every_kernel_has_header_and_parsable_bindings(name):
    code = wgsl_source(f"{name}.wgsl")
    assert code.startswith(f"// {name}.wgsl"), "header comment first"
    header = code[:code.index("\n\n", code.index("Overrides"))]
    for word in ("Bindings", "Dispatch", "Overrides"):
        assert word in header, f"{name}: header lacks {word}"
    bindings = parse_bindings(code)
    assert bindings and [b.index for b in bindings] == list(range(len(bindings)))
    dynamic = [b for b in bindings if b.kind == "uniform_dynamic"]
    assert len(dynamic) <= 1 and (not dynamic or dynamic[0].index == 0)


FINITE_LOOP_KERNELS = tuple(sorted(p.stem for p in WGSL_DIR.glob("*.wgsl")))   # every kernel, new ones included
assert len(FINITE_LOOP_KERNELS) >= 24, f"kernels not found in {WGSL_DIR}"
_FINITE_FOR = re.compile(r"for \(var (\w+) = [^;]+; \1 (?:<|<=) ([^;]+); \1\+\+\)")
_CONST_BOUND = re.compile(r"(?:\d+u|[A-Z][A-Z0-9_]*|countLeadingZeros|max|min|[\s()+\-*/,])+")


def finite_loop_violations(code: str) -> list:
    """Loops that Chromium's shader compiler (Tint) cannot prove finite, so that it adds an iteration counter
    and an exit test to each (the header of wgsl/resident.wgsl): any `loop`/`while`, and any `for` not of the
    form `for (var k = …; k < C; k++)` with C built from literals and UPPERCASE overrides or constants."""
    code = "\n".join(line.split("//")[0] for line in code.splitlines())
    bad = [m.group(0) for m in re.finditer(r"\b(?:loop|while)\b\s*[{(]", code)]
    for line in code.splitlines():
        for head in re.findall(r"for \([^{]*\)\s*\{", line):
            m = _FINITE_FOR.match(head)
            if not m or not _CONST_BOUND.fullmatch(m.group(2)):
                bad.append(head)
    return bad


@pytest.mark.parametrize("name", FINITE_LOOP_KERNELS)
def test_every_loop_has_a_form_the_compiler_proves_finite(name):
    assert finite_loop_violations(wgsl_source(f"{name}.wgsl")) == []


def test_the_finite_loop_check_flags_what_gets_a_counter():
    """The forms measured to get Tint's counter (results/2026-12-07-nvidia-h100-loops: a stride, a shift, a bound
    held in a let, a function parameter) are flagged; the constant-bound forms with an early break are not."""
    for bad in ("for (var i = li; i < N; i += WG) {", "for (var o = 1u; o < SGL; o <<= 1u) {",
                "for (var p = 0u; p < per; p++) {", "for (var k = 0u; k < kmax; k++) {", "loop {", "while (x) {"):
        assert finite_loop_violations(bad), bad
    for good in ("for (var k_ = 0u; k_ < (D / 4u + WG - 1u) / WG; k_++) {", "for (var k = 0u; k < NO_END; k++) {",
                 "for (var e = 0u; e < SGL_LOG; e++) {", "for (var n = 0u; n <= SPIN; n++) {"):
        assert finite_loop_violations(good) == [], good


def test_parse_bindings_kinds_and_errors():
    code = """
    @group(0) @binding(0) var<uniform> step: Step;
    @group(0) @binding(1) var<storage, read> a: array<f32>;
    @group(0) @binding(2) var<storage, read_write> b: array<f32>;
    @group(0) @binding(3) var<uniform> dims: Dims;"""
    assert parse_bindings(code) == [Binding(0, "uniform_dynamic", "step"), Binding(1, "read", "a"),
                                    Binding(2, "read_write", "b"), Binding(3, "uniform", "dims")]
    entries = layout_entries(parse_bindings(code))
    assert entries[0]["buffer"] == {"type": "uniform", "hasDynamicOffset": True}
    assert entries[1]["buffer"] == {"type": "read-only-storage"} and entries[2]["buffer"] == {"type": "storage"}
    with pytest.raises(ValueError, match="without gaps"):
        parse_bindings("@group(0) @binding(1) var<storage, read> a: array<f32>;")


def test_position_dependent_kernels_take_the_step_slot():
    for name in ("embed_q8_0", "rope", "kv_write", "attention", "argmax"):
        assert parse_bindings(wgsl_source(f"{name}.wgsl"))[0].kind == "uniform_dynamic", name
    for name in ("rmsnorm", "matvec_q4_1", "matvec_q4_1_x8", "matvec_q8_0_x8", "silu_mul", "add"):
        assert all(b.kind != "uniform_dynamic" for b in parse_bindings(wgsl_source(f"{name}.wgsl"))), name


# ------------------------------------------------------------------------------------------ weights
def test_weight_layout_of_the_model(gguf, cfg):
    refs, sizes = weight_layout(gguf.tensors, cfg.n_layers)
    assert sum(sizes.values()) <= 110e6                       # the target for weights
    for r in refs.values():
        assert r.offset % ALIGN == 0 and r.offset + r.size <= sizes[r.buffer]
        assert r.size == gguf.tensors[next(n for n, x in refs.items() if x is r)].nbytes
    for i in range(cfg.n_layers):  # q|k|v and gate|up contiguous: fusable into one matrix each
        q, k, v = (refs[f"blk.{i}.attn_{p}.weight"] for p in "qkv")
        assert q.buffer == k.buffer == v.buffer == "layers"
        assert k.offset == q.offset + q.size and v.offset == k.offset + k.size
        g, u = refs[f"blk.{i}.ffn_gate.weight"], refs[f"blk.{i}.ffn_up.weight"]
        assert u.offset == g.offset + g.size
    assert refs["token_embd.weight"].type_name == "Q8_0"


def test_weight_layout_rejects_other_quantizations():
    t = {"token_embd.weight": TensorInfo("token_embd.weight", (8, 32), 8, 0, 272),
         "output_norm.weight": TensorInfo("output_norm.weight", (32,), 0, 0, 128)}
    weight_layout(t, 0)
    t["token_embd.weight"] = TensorInfo("token_embd.weight", (8, 32), 3, 0, 160)
    with pytest.raises(GGUFError, match="Q4_1; these kernels need Q8_0"):
        weight_layout(t, 0)
    t["token_embd.weight"] = TensorInfo("token_embd.weight", (8, 32), 8, 0, 272)
    with pytest.raises(GGUFError, match="'blk.0.attn_q.weight' is missing"):
        weight_layout(t, 1)


def test_manifest_sha256():
    doc = json.dumps({"file": "m.gguf", "sha256": "ABC"})
    assert manifest_sha256(doc, "m.gguf") == "abc"
    assert manifest_sha256(doc, "other.gguf") is None
    assert manifest_sha256("not json", "m.gguf") is None and manifest_sha256(None, "m.gguf") is None
    assert manifest_sha256(json.dumps([{"file": "a"}, {"file": "m.gguf", "sha256": "d"}]), "m.gguf") == "d"


def test_rope_table_matches_reference():
    table = rope_table(50, 100000.0, 64)
    for pos in (0, 1, 17, 49):
        cos, sin = reference.rope_tables(pos, 100000.0, 64)
        np.testing.assert_array_equal(table[pos, :, 0], cos)
        np.testing.assert_array_equal(table[pos, :, 1], sin)


# ------------------------------------------------------------------------------------------ the plan
class FakeKernel:
    def __init__(self, name, file, entry, consts):
        self.label, self.consts = name, consts
        self.pipeline = (file, entry, tuple(sorted(consts.items())))
        self.bindings = parse_bindings(wgsl_source(file))
        self.dynamic = self.bindings[0].kind == "uniform_dynamic"

    def bind(self, dev, entries, label=""):
        assert len(entries) == len(self.bindings), f"{self.label}: {len(entries)} entries for {len(self.bindings)}"
        return ("bindgroup", self.label, label)


def fake_model(gguf, cfg, tuning, ctx=32):
    refs, sizes = weight_layout(gguf.tensors, cfg.n_layers)
    m = Model(None, cfg, None, refs, {k: f"buf:{k}" for k in sizes}, {}, tuning)
    m.kernels = {n: FakeKernel(n, *spec) for n, spec in kernel_specs(cfg, tuning).items()}
    names = ("x", "xb", "xb2", "q", "qr", "k", "v", "hb", "hb2", "hb3", "logits", "parts", "tokens", "steps",
             "k_cache", "v_cache", "att", "rope")
    m.act = {n: f"buf:{n}" for n in names}
    m.ctx = ctx
    return m


def _covered(step, kernel, cfg) -> int:
    """Rows (or elements) the dispatched grid covers for a kernel."""
    c, x = kernel.consts, step.workgroups[0]
    if "ROWS" in c:
        return x * (8 * c["WG"] if "TPR" not in c else c["WG"] // c["TPR"])
    return x * c["WG"]


@pytest.mark.parametrize("tuning", [Tuning(), Tuning.for_adapter({"architecture": "nvidia", "isFallbackAdapter": False})])
def test_recorded_forward(gguf, cfg, tuning):
    m = fake_model(gguf, cfg, tuning)
    by_pipeline = {k.pipeline: k for k in m.kernels.values()}
    for slot in (0, 5):
        plan = record_forward(m, slot, True)
        assert len(plan) == dispatch_counts(cfg.n_layers, True) == 1 + 16 * cfg.n_layers + 4 == 485
        for s in plan.steps:
            k = by_pipeline[s.pipeline]
            assert (s.offsets == [slot * 256]) if k.dynamic else s.offsets is None, s.label
            rows = k.consts.get("ROWS")
            if rows:
                assert _covered(s, k, cfg) >= rows, s.label
            assert all(1 <= g <= 65535 for g in s.workgroups)
    prefill = record_forward(m, 0, False)
    assert len(prefill) == dispatch_counts(cfg.n_layers, False) == 481
    assert [s.label for s in plan.steps[:4]] == ["embed", "0.attn_norm", "0.q", "0.k"]
    assert [s.label for s in plan.steps[-4:]] == ["out_norm", "head", "argmax", "argmax"]


def test_plans_map_onto_replay_modes(gguf, cfg):
    assert {p: PLANS[p].mode for p in ("op_by_op", "token_encoder", "token_pass")} == \
        {"op_by_op": "sequential", "token_encoder": "one_encoder", "token_pass": "one_pass"}
    m = fake_model(gguf, cfg, Tuning())
    for name in ("op_by_op", "token_encoder", "token_pass"):
        spec = PLANS[name]
        assert spec.mode in MODES
        counts = m.plan(name).counts(spec.mode)
        assert counts["dispatches"] == spec.dispatches(cfg, True) == 485
        assert counts["submits"] == (485 if name == "op_by_op" else 1)
        assert counts["passes"] == (1 if name == "token_pass" else 485)
    assert m.plan("token_pass") is m.plan("token_pass")   # recorded once, then reused


# ------------------------------------------------------------------------------------------ params
def test_parse_params():
    p = parse_params({"prompt": "Hi", "chat": "1", "max_new_tokens": "5", "plan": "op_by_op", "driver": "js"})
    assert p == {"prompt": "Hi", "chat": True, "max_new": 5, "plan": "op_by_op", "driver": "js"}
    assert parse_params({})["plan"] == "token_pass" and parse_params({})["chat"] is False
    for bad, msg in (({"prompt": "  "}, "prompt is empty"), ({"max_new_tokens": "ten"}, "whole number"),
                     ({"max_new_tokens": "0"}, "between 1"), ({"plan": "warp"}, "unknown plan"),
                     ({"driver": "rust"}, "unknown driver")):
        with pytest.raises(ValueError, match=msg):
            parse_params(bad)


def test_check_request_messages(cfg):
    from app.llm.generate import check_request

    class M:
        pass
    m = M()
    m.cfg, m.ctx = cfg, 100
    check_request(m, [1, 2], 98)
    with pytest.raises(ValueError, match="prompt is empty"):
        check_request(m, [], 5)
    m.ctx = cfg.ctx
    with pytest.raises(ValueError, match="over the model's context length of 8192"):
        check_request(m, [1] * 8190, 5)


# ------------------------------------------------------------------------------------------ report
SECTION = {"model": "SmolLM2-135M-Instruct.Q4_1.gguf", "prompt_tokens": 5, "generated_token_ids": [7042, 30],
           "text": " Paris.", "ttft_ms": 812.5, "decode_tok_per_s": 3.1, "dispatches_per_token": 485.0,
           "expected_dispatches_per_token": 485, "submits_per_token": 2.0, "readbacks_per_token": 1.0,
           "gpu_ms_per_token": "unsupported", "plan": "token_pass", "mode": "one_pass", "driver": "python",
           "stopped": "max_new_tokens", "gpu_memory_mb": {"weights": 96.6, "total": 97.2}}


def test_llm_section_validates_prints_and_exports():
    doc = {**report.new_results({}), "llm": dict(SECTION)}
    report.validate(doc)
    text = report.format_tables(doc)
    for needle in ("decode tokens/s", "3.10", "dispatches/token", "485", "unsupported", "7042 30", "' Paris.'"):
        assert needle in text
    csv = report.to_csv(doc)
    assert "llm,decode_tok_per_s,3.1" in csv and "llm,text, Paris." in csv


@pytest.mark.parametrize("key,value,msg", [("generated_token_ids", [1, -2], "token ids"),
                                           ("gpu_ms_per_token", "n/a", "unsupported"),
                                           ("ttft_ms", "fast", "non-negative number"),
                                           ("prompt_tokens", 0, "positive integer")])
def test_llm_section_rejects_bad_values(key, value, msg):
    with pytest.raises(report.ResultsError, match=msg):
        llm_report.validate({**SECTION, key: value}, "llm")
    missing = dict(SECTION)
    del missing["text"]
    with pytest.raises(report.ResultsError, match="missing 'text'"):
        llm_report.validate(missing, "llm")


def test_wgsl_dir_is_the_repo_folder():
    assert WGSL_DIR == ROOT / "wgsl"
