"""Fetch the GGUF (with progress), check its sha256, parse it, and upload the weights to the GPU.

Weights stay quantized: every tensor's bytes are copied from the fetched file to a GPU buffer as
they are (Q4_1 20-byte blocks, Q8_0 34-byte blocks, F32 norms); the WGSL kernels dequantize.
GPU buffers (each tensor at a 256-byte aligned offset, so any tensor can be bound on its own):
  token_embd  Q8_0 embedding (also the tied output head)
  layers      every layer's Q4_1 matrices, layer by layer, in the order q, k, v, o, gate, up, down —
              q|k|v and gate|up are contiguous with equal row length, so a fused kernel can bind them
              as ONE matrix, and the resident plan binds the whole buffer once (layers at a fixed stride)
  norms       every F32 norm weight (attn_norm, ffn_norm per layer, output_norm)
The sha256 is checked against manifest.json next to the model file (file → sha256); a model with no
manifest entry is used unverified and says so.  Pure parts: weight_layout, manifest_sha256.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .gguf import (GGML_F32, GGML_Q4_1, GGML_Q8_0, OUTPUT, OUTPUT_NORM, TOKEN_EMBD, GGUFError,
                   tensor_name)

ALIGN = 256
LAYER_MATRICES = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
LAYER_NORMS = ("attn_norm", "ffn_norm")
DEFAULT_URL = "models/SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelFileError(Exception):
    """The model file is missing, has the wrong hash or cannot be used; the message says which."""


@dataclass(frozen=True)
class WeightRef:
    buffer: str        # key of the GPU buffer holding it
    offset: int        # byte offset inside that buffer (multiple of ALIGN)
    size: int          # bytes
    shape: tuple       # numpy order (rows, cols)
    type_name: str
    file_offset: int   # where its bytes start in the GGUF file


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def weight_layout(tensors: dict, n_layers: int) -> tuple[dict, dict]:
    """(refs: tensor name → WeightRef, buffer sizes: key → bytes) for a llama GGUF's tensor table.

    Raises GGUFError when a tensor has a type our kernels cannot read."""
    want = {TOKEN_EMBD: ("token_embd", GGML_Q8_0), OUTPUT_NORM: ("norms", GGML_F32)}
    if OUTPUT in tensors:
        want[OUTPUT] = ("output", GGML_Q8_0)
    for i in range(n_layers):
        want.update({tensor_name(i, p): ("layers", GGML_Q4_1) for p in LAYER_MATRICES})
        want.update({tensor_name(i, p): ("norms", GGML_F32) for p in LAYER_NORMS})
    order = sorted(want, key=lambda n: (_buffer_rank(want[n][0]), _rank(n)))
    refs, sizes = {}, {}
    for name in order:
        key, gtype = want[name]
        if name not in tensors:
            raise GGUFError(f"tensor {name!r} is missing from the model file")
        t = tensors[name]
        if t.ggml_type != gtype:
            raise GGUFError(f"tensor {name!r} is {t.type_name}; these kernels need "
                            f"{'Q8_0' if gtype == GGML_Q8_0 else 'Q4_1' if gtype == GGML_Q4_1 else 'F32'}")
        off = sizes.get(key, 0)
        refs[name] = WeightRef(key, off, t.nbytes, tuple(t.shape), t.type_name, t.offset)
        sizes[key] = _align(off + t.nbytes)
    return refs, sizes


def _buffer_rank(key: str) -> tuple:
    """Buffers in upload order: token_embd, output, layers, norms."""
    return ({"token_embd": 0, "output": 1, "layers": 2}.get(key, 3), 0)


def _rank(name: str) -> tuple:
    """Order inside a buffer: by layer, then q, k, v, o, gate, up, down (norms: attn, ffn), output_norm last."""
    if name.startswith("blk."):
        _, layer, part, _ = name.split(".")
        parts = LAYER_MATRICES + LAYER_NORMS
        return (int(layer), parts.index(part))
    return (1 << 30, 0)


def manifest_sha256(manifest_text: str | None, file_name: str) -> str | None:
    """Expected sha256 for file_name from a manifest.json ({file, sha256} or a list of them)."""
    if not manifest_text:
        return None
    try:
        doc = json.loads(manifest_text)
    except ValueError:
        return None
    for entry in doc if isinstance(doc, list) else [doc]:
        if isinstance(entry, dict) and entry.get("file") == file_name:
            return str(entry.get("sha256", "")).lower() or None
    return None


# ------------------------------------------------------------------------------------ browser part
async def fetch_model(url: str, on_progress) -> tuple[object, dict]:
    """(ArrayBuffer, info) for the model at url; on_progress(fraction, message) while it streams."""
    import js  # type: ignore
    from pyodide.ffi import create_proxy  # type: ignore
    name = url.rsplit("/", 1)[-1]

    def progress(loaded, total):
        mb = loaded / 1e6
        on_progress(loaded / total if total else None,
                    f"downloading {name}: {mb:.1f} of {total / 1e6:.1f} MB" if total else f"downloading {name}: {mb:.1f} MB")
    proxy = create_proxy(progress)
    try:
        buf = await js.dl.fetchWithProgress(url, proxy)
    except Exception as e:  # noqa: BLE001 - a JS Error: "HTTP 404 for …" or a network failure
        msg = str(e).removeprefix("Error: ")
        if "HTTP 404" in msg:
            raise ModelFileError(f"model file not found (HTTP 404): {url}") from None
        raise ModelFileError(f"could not download the model file {url}: {msg}") from None
    finally:
        proxy.destroy()
    on_progress(None, f"checking the sha256 of {name}")
    sha = str(await js.dl.sha256Hex(buf))
    expected = manifest_sha256(await _fetch_text(url.rsplit("/", 1)[0] + "/manifest.json"), name)
    if expected is not None and sha != expected:
        raise ModelFileError(f"model file {name} has the wrong sha256: got {sha}, manifest.json says {expected} "
                             "(damaged or replaced file; rebuild with `python build.py build`)")
    return buf, {"url": url, "file": name, "bytes": int(buf.byteLength), "sha256": sha,
                 "sha256_verified": expected is not None}


async def _fetch_text(url: str) -> str | None:
    import js  # type: ignore
    try:
        r = await js.fetch(url)
        return str(await r.text()) if r.ok else None
    except Exception:  # noqa: BLE001 - no manifest: the model is used unverified
        return None


async def upload_weights(dev, js_buf, refs: dict, sizes: dict, on_progress, buffers: dict) -> dict:
    """Create one GPU buffer per key in `buffers` (so a caller can free them after a failure) and copy
    each tensor's bytes from the fetched file into it."""
    from app.gpu import COPY_DST, STORAGE
    keys = list(sizes)
    for n, key in enumerate(keys):
        on_progress(n / len(keys), f"uploading weights to the GPU: {key}")
        buffers[key] = await dev.checked(f"creating the GPU buffer for weights {key} ({sizes[key] / 1e6:.1f} MB)",
                                         dev.create_buffer, sizes[key], STORAGE | COPY_DST, f"weights {key}")
        for ref in refs.values():
            if ref.buffer == key:
                dev.queue.writeBuffer(buffers[key], ref.offset, js_buf, ref.file_offset, ref.size)
        await dev.on_submitted_work_done()  # let the upload finish before the next chunk piles up
    return buffers
