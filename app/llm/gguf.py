"""Minimal GGUF reader (stdlib + numpy only; runs in CPython and Pyodide).

Format (little-endian, versions 2 and 3):
  header : b"GGUF", u32 version, u64 tensor_count, u64 kv_count
  kv     : string key, u32 value_type, value       (kv_count times)
  tensor : string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset
  data   : starts at the next multiple of `general.alignment` (default 32);
           tensor offsets are relative to it.
Strings are u64 length + utf-8 bytes. ggml `ne` lists the fastest-varying
dimension first, so numpy shape is reversed(ne).
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4

GGML_F32, GGML_F16, GGML_Q4_1, GGML_Q8_0 = 0, 1, 3, 8
TYPE_NAMES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
    9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K",
    15: "Q8_K", 16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S",
    20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16",
    26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0",
    35: "TQ2_0",
}
# ggml_type -> (weights per block, bytes per block)
BLOCK_SIZES = {GGML_F32: (1, 4), GGML_F16: (1, 2), GGML_Q4_1: (32, 20), GGML_Q8_0: (32, 34)}

# Metadata value types: id -> struct format (scalars); 8 = string, 9 = array.
_SCALAR_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f",
               7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

# GGUF tensor names (llama architecture).
TOKEN_EMBD = "token_embd.weight"
OUTPUT_NORM = "output_norm.weight"
OUTPUT = "output.weight"  # absent when embeddings are tied (SmolLM2)
LAYER_PARTS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
               "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")


def tensor_name(layer: int, part: str) -> str:
    """GGUF name of a per-layer weight, e.g. tensor_name(3, 'ffn_up') -> 'blk.3.ffn_up.weight'."""
    if part not in LAYER_PARTS:
        raise ValueError(f"unknown layer part {part!r}; expected one of {', '.join(LAYER_PARTS)}")
    return f"blk.{layer}.{part}.weight"


class GGUFError(ValueError):
    """Malformed, truncated or unsupported GGUF file."""


@dataclass
class TensorInfo:
    name: str
    shape: tuple  # numpy order, i.e. reversed ggml ne: (rows, cols)
    ggml_type: int
    offset: int  # absolute byte offset in the file
    nbytes: int

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.ggml_type, f"type{self.ggml_type}")


_U64 = struct.Struct("<Q")


def _element(what: str, i: int, indexed: bool) -> str:
    return f"{what}[{i}]" if indexed else what


class _Cursor:
    """Bounds-checked sequential reader over a memoryview."""

    def __init__(self, buf: memoryview):
        self.buf, self.pos = buf, 0

    def take(self, n: int, what: str) -> memoryview:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise GGUFError(f"truncated file: {what} needs bytes {self.pos}..{end} "
                            f"but file has {len(self.buf)}")
        view, self.pos = self.buf[self.pos:end], end
        return view

    def scalar(self, fmt: str, what: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        return self.strings(1, what, indexed=False)[0]

    def strings(self, n: int, what: str, indexed: bool = True) -> list:
        """n consecutive strings (tight loop: vocabularies hold ~50k of them)."""
        buf, size, pos, out = self.buf, len(self.buf), self.pos, []
        for i in range(n):
            if pos + 8 > size:
                self.pos = pos
                self.take(8, _element(what, i, indexed))
            end = pos + 8 + _U64.unpack_from(buf, pos)[0]
            if end > size:
                self.pos = pos + 8
                self.take(end - pos - 8, _element(what, i, indexed))
            try:
                out.append(str(buf[pos + 8:end], "utf-8"))
            except UnicodeDecodeError as e:
                raise GGUFError(f"invalid utf-8 in {_element(what, i, indexed)} "
                                f"at offset {pos + 8}: {e.reason}") from None
            pos = end
        self.pos = pos
        return out

    def remaining(self) -> int:
        return len(self.buf) - self.pos


class GGUFFile:
    """Parsed GGUF file. `data` is the whole file; it is kept as a memoryview (no copy)."""

    def __init__(self, data):
        try:
            buf = memoryview(data).cast("B")
        except TypeError as e:
            raise GGUFError(f"GGUF data must be a contiguous bytes-like object: {e}") from None
        self._buf = buf
        cur = _Cursor(buf)
        self._read_header(cur)
        self.metadata = {}
        for i in range(self._kv_count):
            key = cur.string(f"metadata key #{i}")
            self.metadata[key] = self._read_value(cur, f"metadata value {key!r}")
        self.alignment = self._read_alignment()
        infos = [self._read_tensor_info(cur, i) for i in range(self._tensor_count)]
        self.data_offset = -(-cur.pos // self.alignment) * self.alignment
        self.tensors = {}
        for name, shape, gtype, rel in infos:
            self.tensors[name] = self._place_tensor(name, shape, gtype, rel)

    # -- parsing -------------------------------------------------------------
    def _read_header(self, cur: _Cursor) -> None:
        magic = bytes(cur.take(4, "magic"))
        if magic != GGUF_MAGIC:
            raise GGUFError(f"bad magic {magic!r} at offset 0 (expected {GGUF_MAGIC!r})")
        self.version = cur.scalar("<I", "version")
        if self.version not in SUPPORTED_VERSIONS:
            raise GGUFError(f"unsupported GGUF version {self.version} at offset 4 "
                            f"(supported: 2, 3; big-endian files are not supported)")
        self._tensor_count = cur.scalar("<Q", "tensor_count")
        self._kv_count = cur.scalar("<Q", "kv_count")
        # Smallest tensor info is 32 bytes, smallest kv pair 13 bytes.
        if self._tensor_count * 32 + self._kv_count * 13 > cur.remaining():
            raise GGUFError(f"implausible counts at offset 8: {self._tensor_count} tensors and "
                            f"{self._kv_count} metadata keys cannot fit in a {len(self._buf)}-byte file")

    def _read_value(self, cur: _Cursor, what: str, vtype: int | None = None):
        if vtype is None:
            vtype = cur.scalar("<I", f"type of {what}")
        if vtype in _SCALAR_FMT:
            return cur.scalar(_SCALAR_FMT[vtype], what)
        if vtype == _STRING:
            return cur.string(what)
        if vtype == _ARRAY:
            return self._read_array(cur, what)
        raise GGUFError(f"unknown metadata value type {vtype} for {what} at offset {cur.pos - 4}")

    def _read_array(self, cur: _Cursor, what: str) -> list:
        etype = cur.scalar("<I", f"element type of {what}")
        start = cur.pos
        n = cur.scalar("<Q", f"length of {what}")
        if etype in _SCALAR_FMT:
            fmt = _SCALAR_FMT[etype]
            raw = cur.take(n * struct.calcsize(fmt), what)
            arr = np.frombuffer(raw, dtype=np.dtype(fmt.replace("?", "u1")))
            return arr.astype(bool).tolist() if etype == 7 else arr.tolist()
        if etype not in (_STRING, _ARRAY):
            raise GGUFError(f"unknown array element type {etype} for {what} at offset {start - 4}")
        if n * 8 > cur.remaining():  # each string / array element needs >= 8 bytes
            raise GGUFError(f"implausible array length {n} for {what} at offset {start}")
        if etype == _STRING:
            return cur.strings(n, what)
        return [self._read_value(cur, f"{what}[{i}]", etype) for i in range(n)]

    def _read_alignment(self) -> int:
        a = self.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
        if not isinstance(a, int) or isinstance(a, bool) or a <= 0 or a & (a - 1):
            raise GGUFError(f"general.alignment must be a positive power of two, got {a!r}")
        return a

    def _read_tensor_info(self, cur: _Cursor, i: int):
        name = cur.string(f"name of tensor #{i}")
        what = f"tensor {name!r} info"
        n_dims = cur.scalar("<I", what)
        if not 1 <= n_dims <= MAX_DIMS:
            raise GGUFError(f"tensor {name!r}: n_dims {n_dims} out of range 1..{MAX_DIMS}")
        ne = [cur.scalar("<Q", what) for _ in range(n_dims)]
        gtype = cur.scalar("<I", what)
        rel = cur.scalar("<Q", what)
        if gtype not in BLOCK_SIZES:
            kind = f"unsupported tensor type {gtype} ({TYPE_NAMES[gtype]})" if gtype in TYPE_NAMES \
                else f"unknown tensor type {gtype}"
            raise GGUFError(f"{kind} for tensor {name!r}; supported: F32, F16, Q8_0, Q4_1")
        return name, tuple(reversed(ne)), gtype, rel

    def _place_tensor(self, name: str, shape: tuple, gtype: int, rel: int) -> TensorInfo:
        if name in self.tensors:
            raise GGUFError(f"duplicate tensor name {name!r}")
        block, block_bytes = BLOCK_SIZES[gtype]
        if any(d == 0 for d in shape) or shape[-1] % block:
            raise GGUFError(f"tensor {name!r}: shape {shape} invalid for {TYPE_NAMES[gtype]} "
                            f"(row length must be a positive multiple of {block})")
        if rel % self.alignment:
            raise GGUFError(f"tensor {name!r}: offset {rel} is not a multiple of the alignment "
                            f"{self.alignment}")
        nbytes = math.prod(shape) // block * block_bytes
        start = self.data_offset + rel
        if start + nbytes > len(self._buf):
            raise GGUFError(f"truncated file: tensor {name!r} needs bytes {start}..{start + nbytes} "
                            f"but file has {len(self._buf)}")
        return TensorInfo(name, shape, gtype, start, nbytes)

    # -- tensor access -------------------------------------------------------
    def info(self, name: str) -> TensorInfo:
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"no tensor named {name!r} in GGUF file") from None

    def raw(self, name: str) -> memoryview:
        """The tensor's bytes exactly as stored in the file (read-only view, no copy)."""
        t = self.info(name)
        return self._buf[t.offset:t.offset + t.nbytes].toreadonly()

    def dequantize(self, name: str) -> np.ndarray:
        """Whole tensor as float32 with numpy shape."""
        t = self.info(name)
        return _dequantize(self._buf, t.ggml_type, t.offset, t.nbytes).reshape(t.shape)

    def dequantize_rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of a 2-D tensor as float32 (e.g. embedding lookups)."""
        t = self.info(name)
        if len(t.shape) != 2 or not 0 <= start <= stop <= t.shape[0]:
            raise IndexError(f"rows {start}..{stop} out of range for tensor {name!r} of shape {t.shape}")
        row_bytes = t.nbytes // t.shape[0]
        out = _dequantize(self._buf, t.ggml_type, t.offset + start * row_bytes, (stop - start) * row_bytes)
        return out.reshape(stop - start, t.shape[1])


def _f16_column(blocks: np.ndarray, col: int) -> np.ndarray:
    """Little-endian f16 stored at bytes col..col+1 of each block, as (n_blocks, 1) float32."""
    return np.ascontiguousarray(blocks[:, col:col + 2]).view("<f2").astype(np.float32)


def _dequantize(buf: memoryview, gtype: int, offset: int, nbytes: int) -> np.ndarray:
    raw = np.frombuffer(buf, dtype=np.uint8, count=nbytes, offset=offset)
    if gtype == GGML_F32:
        return raw.view("<f4").astype(np.float32)
    if gtype == GGML_F16:
        return raw.view("<f2").astype(np.float32)
    if gtype == GGML_Q8_0:  # block: f16 d, int8 q[32]; w = d * q
        blocks = raw.reshape(-1, 34)
        q = blocks[:, 2:].view(np.int8).astype(np.float32)
        return (q * _f16_column(blocks, 0)).reshape(-1)
    if gtype == GGML_Q4_1:  # block: f16 d, f16 m, u8 qs[16]; w = d * q + m
        blocks = raw.reshape(-1, 20)
        qs = blocks[:, 4:]
        q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
        return (_f16_column(blocks, 0) * q + _f16_column(blocks, 2)).reshape(-1)
    raise GGUFError(f"unsupported tensor type {gtype} ({TYPE_NAMES.get(gtype, '?')})")


@dataclass
class ModelConfig:
    arch: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    ctx: int
    rope_base: float
    rope_dim: int  # number of rotated dims per head (== head_dim for SmolLM2)
    rms_eps: float
    bos_id: int | None
    eos_id: int | None
    add_bos: bool
    chat_template: str | None


def _meta(md: dict, key: str, kind, default=...):
    if key not in md:
        if default is ...:
            raise GGUFError(f"missing metadata key {key!r}")
        return default
    value = md[key]
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise GGUFError(f"metadata key {key!r} should be {kind.__name__}, got {value!r}")
    return value


def load_config(g: GGUFFile) -> ModelConfig:
    """Model hyper-parameters read from GGUF metadata (llama architecture only)."""
    md = g.metadata
    arch = _meta(md, "general.architecture", str)
    if arch != "llama":
        raise GGUFError(f"unsupported architecture {arch!r} (only 'llama' is supported)")
    d_model = _meta(md, f"{arch}.embedding_length", int)
    n_heads = _meta(md, f"{arch}.attention.head_count", int)
    n_kv = _meta(md, f"{arch}.attention.head_count_kv", int, n_heads)
    head_dim = _meta(md, f"{arch}.attention.key_length", int, d_model // max(n_heads, 1))
    if n_heads <= 0 or n_kv <= 0 or n_heads % n_kv:
        raise GGUFError(f"bad head counts: {n_heads} query heads, {n_kv} kv heads")
    if TOKEN_EMBD in g.tensors:
        vocab = g.tensors[TOKEN_EMBD].shape[0]
    else:
        vocab = len(_meta(md, "tokenizer.ggml.tokens", list))
    return ModelConfig(
        arch=arch,
        n_layers=_meta(md, f"{arch}.block_count", int),
        d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim,
        ffn=_meta(md, f"{arch}.feed_forward_length", int),
        vocab=vocab,
        ctx=_meta(md, f"{arch}.context_length", int),
        rope_base=_meta(md, f"{arch}.rope.freq_base", float, 10000.0),  # llama.cpp's default
        rope_dim=_meta(md, f"{arch}.rope.dimension_count", int, head_dim),
        rms_eps=_meta(md, f"{arch}.attention.layer_norm_rms_epsilon", float),
        bos_id=_meta(md, "tokenizer.ggml.bos_token_id", int, None),
        eos_id=_meta(md, "tokenizer.ggml.eos_token_id", int, None),
        add_bos=_meta(md, "tokenizer.ggml.add_bos_token", bool, False),
        chat_template=_meta(md, "tokenizer.chat_template", str, None),
    )
