"""Tests for app.llm.gguf, using llama.cpp's `gguf` PyPI package as the oracle."""
import os
import struct
from pathlib import Path

import numpy as np
import pytest

from app.llm.gguf import (GGML_F16, GGML_F32, GGML_Q4_1, GGML_Q8_0, GGUFError, GGUFFile,
                          TYPE_NAMES, load_config, tensor_name)

gguf = pytest.importorskip("gguf")

REPO = Path(__file__).resolve().parents[2]
MODEL = Path(os.environ.get("DISPATCHLAB_MODEL",
                            REPO / ".cache/model/SmolLM2-135M-Instruct.Q4_1.gguf"))


@pytest.fixture(scope="module")
def model_bytes():
    if not MODEL.is_file():
        pytest.skip(f"model file not found at {MODEL} (set DISPATCHLAB_MODEL)")
    return MODEL.read_bytes()


@pytest.fixture(scope="module")
def g(model_bytes):
    return GGUFFile(model_bytes)


@pytest.fixture(scope="module")
def oracle(model_bytes):
    return gguf.GGUFReader(MODEL)


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v.item() if hasattr(v, "item") else v


# ---------------------------------------------------------------- real model
def test_header(g, oracle):
    assert g.version == 3
    assert g.alignment == 32
    assert g.data_offset == oracle.data_offset
    assert g.data_offset % g.alignment == 0


def test_metadata_matches_oracle(g, oracle):
    expected = {k: f for k, f in oracle.fields.items() if not k.startswith("GGUF.")}
    assert list(g.metadata) == list(expected)
    for key, field in expected.items():
        assert _plain(field.contents()) == g.metadata[key], key
    assert isinstance(g.metadata["tokenizer.ggml.tokens"][0], str)
    assert g.metadata["general.languages"] == ["en"]


def test_tensor_table_matches_oracle(g, oracle):
    assert list(g.tensors) == [t.name for t in oracle.tensors]
    for t in oracle.tensors:
        info = g.tensors[t.name]
        assert info.shape == tuple(int(d) for d in reversed(t.shape)), t.name
        assert info.ggml_type == int(t.tensor_type), t.name
        assert info.offset == t.data_offset, t.name
        assert info.nbytes == t.n_bytes, t.name


def test_tensor_types_present(g):
    types = {TYPE_NAMES[t.ggml_type] for t in g.tensors.values()}
    assert types == {"F32", "Q4_1", "Q8_0"}
    assert g.tensors["token_embd.weight"].type_name == "Q8_0"
    assert "output.weight" not in g.tensors  # tied embeddings


@pytest.mark.parametrize("name", [
    "output_norm.weight", "blk.0.attn_norm.weight", "blk.29.ffn_norm.weight",  # F32
    "blk.0.attn_q.weight", "blk.5.attn_k.weight", "blk.29.ffn_down.weight",    # Q4_1
    "blk.12.ffn_gate.weight", "blk.3.attn_output.weight",
    "token_embd.weight",                                                      # Q8_0
])
def test_dequantize_matches_oracle(g, oracle, name):
    t = next(t for t in oracle.tensors if t.name == name)
    expected = gguf.quants.dequantize(t.data, t.tensor_type)
    got = g.dequantize(name)
    assert got.dtype == np.float32
    assert got.shape == g.tensors[name].shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    assert bytes(g.raw(name)) == t.data.tobytes()


def test_dequantize_rows(g):
    full = g.dequantize("token_embd.weight")
    np.testing.assert_array_equal(g.dequantize_rows("token_embd.weight", 100, 103), full[100:103])
    with pytest.raises(IndexError, match="token_embd"):
        g.dequantize_rows("token_embd.weight", 0, 49153)


def test_raw_is_zero_copy_view(g):
    raw = g.raw("blk.0.attn_q.weight")
    assert isinstance(raw, memoryview) and raw.readonly
    assert len(raw) == g.tensors["blk.0.attn_q.weight"].nbytes


def test_unknown_tensor_name(g):
    with pytest.raises(KeyError, match="output.weight"):
        g.dequantize("output.weight")


def test_load_config(g):
    c = load_config(g)
    assert (c.arch, c.n_layers, c.d_model, c.n_heads, c.n_kv_heads) == ("llama", 30, 576, 9, 3)
    assert (c.head_dim, c.ffn, c.vocab, c.ctx, c.rope_dim) == (64, 1536, 49152, 8192, 64)
    assert c.rope_base == 100000.0
    assert c.rms_eps == pytest.approx(1e-5, rel=1e-6)
    assert (c.bos_id, c.eos_id, c.add_bos) == (1, 2, False)
    assert c.chat_template.startswith("{% for message in messages %}")
    assert "<|im_start|>" in c.chat_template


def test_tensor_name():
    assert tensor_name(3, "ffn_up") == "blk.3.ffn_up.weight"
    assert tensor_name(0, "attn_output") == "blk.0.attn_output.weight"
    with pytest.raises(ValueError, match="attn_qkv"):
        tensor_name(0, "attn_qkv")


def test_truncated_real_file(g, model_bytes):
    last = max(g.tensors.values(), key=lambda t: t.offset)
    size = len(model_bytes) - 100
    with pytest.raises(GGUFError) as e:
        GGUFFile(memoryview(model_bytes)[:size])
    assert str(e.value) == (f"truncated file: tensor {last.name!r} needs bytes "
                            f"{last.offset}..{last.offset + last.nbytes} but file has {size}")


# ------------------------------------------------- synthetic files (writer)
def _write(tmp_path, tensors, arch="llama", **kv):
    path = tmp_path / "t.gguf"
    w = gguf.GGUFWriter(path, arch)
    for key, value in kv.items():
        w.add_key_value(key, value[0], value[1])
    for name, arr, qtype in tensors:
        if arr.dtype == np.uint8:
            w.add_tensor(name, arr, raw_dtype=qtype)
        elif qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, gguf.quants.quantize(arr, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def test_written_file_all_types(tmp_path):
    rng = np.random.default_rng(0)
    Q = gguf.GGMLQuantizationType
    tensors = [("a", rng.standard_normal((3, 5)).astype(np.float32), Q.F32),
               ("b", rng.standard_normal((2, 64)).astype(np.float16), Q.F16),
               ("c", rng.standard_normal((4, 64)).astype(np.float32), Q.Q8_0),
               ("d", rng.standard_normal((4, 96)).astype(np.float32), Q.Q4_1)]
    VT = gguf.GGUFValueType
    data = _write(tmp_path, tensors, **{"x.i8": (-3, VT.INT8), "x.f64": (0.25, VT.FLOAT64),
                                        "x.b": (True, VT.BOOL), "x.arr": ([1, 2, 3], VT.ARRAY)})
    g = GGUFFile(bytearray(data))
    assert g.metadata["x.i8"] == -3 and g.metadata["x.f64"] == 0.25 and g.metadata["x.b"] is True
    assert g.metadata["x.arr"] == [1, 2, 3]
    assert [g.tensors[n].ggml_type for n in "abcd"] == [GGML_F32, GGML_F16, GGML_Q8_0, GGML_Q4_1]
    np.testing.assert_array_equal(g.dequantize("a"), tensors[0][1])
    np.testing.assert_array_equal(g.dequantize("b"), tensors[1][1].astype(np.float32))
    for name, arr, qtype in tensors[2:]:
        expected = gguf.quants.dequantize(gguf.quants.quantize(arr, qtype), qtype)
        np.testing.assert_array_equal(g.dequantize(name), expected)
        np.testing.assert_allclose(g.dequantize(name), arr, atol=0.3)


def test_written_file_unsupported_type(tmp_path):
    raw = np.zeros((1, 144), np.uint8)  # one Q4_K block (256 weights); the oracle cannot quantize Q4_K
    data = _write(tmp_path, [("blk.0.ffn_up.weight", raw, gguf.GGMLQuantizationType.Q4_K)])
    with pytest.raises(GGUFError, match=r"unsupported tensor type 12 \(Q4_K\) for tensor "
                                        r"'blk\.0\.ffn_up\.weight'; supported: F32, F16, Q8_0, Q4_1"):
        GGUFFile(data)


def test_load_config_rejects_other_arch(tmp_path):
    data = _write(tmp_path, [], arch="gpt2")
    with pytest.raises(GGUFError, match="unsupported architecture 'gpt2'"):
        load_config(GGUFFile(data))


def test_load_config_missing_key(tmp_path):
    data = _write(tmp_path, [])
    with pytest.raises(GGUFError, match="missing metadata key 'llama.embedding_length'"):
        load_config(GGUFFile(data))


# ------------------------------------------------ synthetic files (struct)
def _s(text):
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _build(tensors=(), kvs=(), version=3, magic=b"GGUF", alignment=32, pad_data=True):
    """tensors: (name, ne, ggml_type, rel_offset, payload bytes). Payloads are placed at offsets."""
    out = magic + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, raw in kvs:
        out += _s(key) + struct.pack("<I", vtype) + raw
    for name, ne, gtype, rel, _ in tensors:
        out += _s(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        out += struct.pack("<IQ", gtype, rel)
    out += b"\0" * (-len(out) % alignment)
    data = bytearray(out)
    for _, _, _, rel, payload in tensors:
        end = len(out) + rel + len(payload)
        data.extend(b"\0" * max(0, end - len(data)))
        data[len(out) + rel:end] = payload
    return bytes(data)


def _q4_1_block(d, m, nibbles):
    qs = bytes((nibbles[j] & 15) | ((nibbles[j + 16] & 15) << 4) for j in range(16))
    return np.array([d, m], "<f2").tobytes() + qs


def test_q4_1_layout_known_answer():
    nibbles = list(range(16)) + list(range(15, -1, -1))
    data = _build([("w", (32, 1), GGML_Q4_1, 0, _q4_1_block(0.5, -1.0, nibbles))])
    got = GGUFFile(data).dequantize("w")
    assert got.shape == (1, 32)
    np.testing.assert_array_equal(got[0], 0.5 * np.array(nibbles, np.float32) - 1.0)


def test_q8_0_layout_known_answer():
    q = np.arange(-16, 16, dtype=np.int8)
    block = np.array([0.25], "<f2").tobytes() + q.tobytes()
    data = _build([("e", (32, 1), GGML_Q8_0, 0, block)])
    np.testing.assert_array_equal(GGUFFile(data).dequantize("e")[0], 0.25 * q.astype(np.float32))


def test_minimal_struct_file_and_metadata_types():
    kvs = [("a.str", 8, _s("héllo")), ("a.u64", 10, struct.pack("<Q", 2**40)),
           ("a.strs", 9, struct.pack("<IQ", 8, 2) + _s("x") + _s("")),
           ("a.nested", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 4, 2) + struct.pack("<2I", 7, 8)),
           ("general.alignment", 4, struct.pack("<I", 64))]
    data = _build([("t", (2,), GGML_F32, 0, struct.pack("<2f", 1.5, -2))], kvs, alignment=64)
    g = GGUFFile(data)
    assert g.metadata == {"a.str": "héllo", "a.u64": 2**40, "a.strs": ["x", ""],
                          "a.nested": [[7, 8]], "general.alignment": 64}
    assert g.alignment == 64 and g.data_offset % 64 == 0
    np.testing.assert_array_equal(g.dequantize("t"), [1.5, -2.0])


def test_bad_magic():
    with pytest.raises(GGUFError, match=r"bad magic b'GGML' at offset 0 \(expected b'GGUF'\)"):
        GGUFFile(_build(magic=b"GGML"))


@pytest.mark.parametrize("version", [1, 4, 0x03000000])
def test_bad_version(version):
    with pytest.raises(GGUFError, match=f"unsupported GGUF version {version} at offset 4"):
        GGUFFile(_build(version=version))


@pytest.mark.parametrize("cut", [0, 3, 10, 23, 30, 45])
def test_truncated_header(cut):
    data = _build([("t", (2,), GGML_F32, 0, b"\0" * 8)], [("k", 8, _s("value"))])
    with pytest.raises(GGUFError, match=r"truncated file|implausible counts"):
        GGUFFile(data[:cut])


def test_truncated_header_names_offset():
    data = _build([], [("key", 8, _s("a long string value"))])
    with pytest.raises(GGUFError, match=r"truncated file: metadata value 'key' needs bytes 47\.\.66 "
                                        r"but file has 60"):
        GGUFFile(data[:60])


def test_truncated_tensor_data():
    data = _build([("blk.3.ffn_up.weight", (32, 2), GGML_Q4_1, 0, b"\1" * 40)])
    start = len(data) - 40
    with pytest.raises(GGUFError, match=rf"truncated file: tensor 'blk\.3\.ffn_up\.weight' needs bytes "
                                        rf"{start}\.\.{start + 40} but file has {len(data) - 1}"):
        GGUFFile(data[:-1])


def test_unknown_tensor_type():
    with pytest.raises(GGUFError, match=r"unknown tensor type 99 for tensor 'w'"):
        GGUFFile(_build([("w", (4,), 99, 0, b"")]))


def test_unsupported_tensor_type_struct():
    with pytest.raises(GGUFError, match=r"unsupported tensor type 2 \(Q4_0\) for tensor 'w'"):
        GGUFFile(_build([("w", (32,), 2, 0, b"\0" * 18)]))


def test_misaligned_tensor_offset():
    with pytest.raises(GGUFError, match=r"tensor 'w': offset 4 is not a multiple of the alignment 32"):
        GGUFFile(_build([("w", (1,), GGML_F32, 4, b"\0" * 4)]))


def test_bad_row_length_for_block_type():
    with pytest.raises(GGUFError, match=r"tensor 'w': shape \(1, 30\) invalid for Q8_0"):
        GGUFFile(_build([("w", (30, 1), GGML_Q8_0, 0, b"\0" * 34)]))


def test_implausible_counts():
    data = b"GGUF" + struct.pack("<IQQ", 3, 10**12, 0)
    with pytest.raises(GGUFError, match="implausible counts at offset 8"):
        GGUFFile(data)


def test_implausible_array_length():
    kv = [("k", 9, struct.pack("<IQ", 8, 10**15))]
    with pytest.raises(GGUFError, match="implausible array length .* for metadata value 'k'"):
        GGUFFile(_build(kvs=kv))


def test_duplicate_tensor_and_bad_alignment():
    t = ("w", (1,), GGML_F32, 0, b"\0" * 4)
    with pytest.raises(GGUFError, match="duplicate tensor name 'w'"):
        GGUFFile(_build([t, t]))
    kv = [("general.alignment", 4, struct.pack("<I", 24))]
    with pytest.raises(GGUFError, match="power of two"):
        GGUFFile(_build(kvs=kv))


def test_bad_utf8_and_value_type():
    with pytest.raises(GGUFError, match="invalid utf-8 in metadata value 'k'"):
        GGUFFile(_build(kvs=[("k", 8, struct.pack("<Q", 2) + b"\xff\xfe")]))
    with pytest.raises(GGUFError, match="unknown metadata value type 13 for metadata value 'k'"):
        GGUFFile(_build(kvs=[("k", 13, b"")]))
    bad_list = struct.pack("<IQ", 8, 2) + _s("ok") + struct.pack("<Q", 1) + b"\xff"
    with pytest.raises(GGUFError, match=r"invalid utf-8 in metadata value 'k'\[1\]"):
        GGUFFile(_build(kvs=[("k", 9, bad_list)]))


def test_not_bytes():
    with pytest.raises(GGUFError, match="bytes-like"):
        GGUFFile("GGUF")
