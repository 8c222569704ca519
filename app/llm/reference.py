"""Numpy reference forward pass for llama-architecture GGUF models (float32).

This is the ground truth the WebGPU kernels are compared against, so it
follows llama.cpp's "llama" graph exactly:
  x = token_embd[token]
  per layer:  h = rmsnorm(x) * attn_norm
              q, k, v = Wq h, Wk h, Wv h ; RoPE (NORM mode) on q, k ; KV cache
              x += Wo attention(q, K, V)          (grouped-query attention)
              h = rmsnorm(x) * ffn_norm
              x += Wdown(silu(Wgate h) * Wup h)
  logits = Woutput (rmsnorm(x) * output_norm)     (Woutput = token_embd if tied)
"""
from __future__ import annotations

import numpy as np

from .gguf import OUTPUT, OUTPUT_NORM, TOKEN_EMBD, GGUFFile, ModelConfig, tensor_name

F32 = np.float32


def rmsnorm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * w, over the last axis."""
    x = np.asarray(x, F32)
    ms = np.mean(x * x, axis=-1, keepdims=True, dtype=F32)
    return (x * (F32(1.0) / np.sqrt(ms + F32(eps)))) * w


def rope_tables(pos: int, base: float, rope_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin of theta_i = pos * base^(-2i/rope_dim), i < rope_dim/2, as float32."""
    inv_freq = float(base) ** (-np.arange(0, rope_dim, 2, dtype=np.float64) / rope_dim)
    theta = pos * inv_freq
    return np.cos(theta).astype(F32), np.sin(theta).astype(F32)


def rope(x: np.ndarray, pos: int, base: float, rope_dim: int | None = None) -> np.ndarray:
    """llama.cpp NORM-mode RoPE on x of shape (n_heads, head_dim).

    Rotates ADJACENT pairs (x[2i], x[2i+1]) of the first rope_dim dims;
    the rest pass through unchanged.
    """
    x = np.asarray(x, F32)
    rope_dim = x.shape[-1] if rope_dim is None else rope_dim
    cos, sin = rope_tables(pos, base, rope_dim)
    out = x.copy()
    x0, x1 = x[..., 0:rope_dim:2], x[..., 1:rope_dim:2]
    out[..., 0:rope_dim:2] = x0 * cos - x1 * sin
    out[..., 1:rope_dim:2] = x0 * sin + x1 * cos
    return out


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def silu(x: np.ndarray) -> np.ndarray:
    return x / (F32(1.0) + np.exp(-x))


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Causal single-query grouped-query attention.

    q: (n_heads, head_dim); k, v: (T, n_kv_heads, head_dim) = cached positions
    0..T-1 (all visible). Query head h reads kv head h // (n_heads // n_kv_heads).
    Returns (n_heads, head_dim).
    """
    n_heads, head_dim = q.shape
    n_kv = k.shape[1]
    qg = q.reshape(n_kv, n_heads // n_kv, head_dim)
    scores = np.einsum("kgd,tkd->kgt", qg, k) * F32(1.0 / np.sqrt(head_dim))
    p = softmax(scores.astype(F32), axis=-1)
    return np.einsum("kgt,tkd->kgd", p, v).reshape(n_heads, head_dim).astype(F32)


class Reference:
    """Token-at-a-time llama forward pass with a KV cache.

    cache_weights=True dequantizes every weight once to float32 (~650 MB for
    SmolLM2-135M); False dequantizes each layer on every step (slow, small).
    """

    def __init__(self, g: GGUFFile, cfg: ModelConfig, max_ctx: int, cache_weights: bool = True):
        if not 0 < max_ctx <= cfg.ctx:
            raise ValueError(f"max_ctx must be in 1..{cfg.ctx}, got {max_ctx}")
        self.g, self.cfg, self.max_ctx = g, cfg, max_ctx
        self.embed = g.dequantize(TOKEN_EMBD)
        self.output = g.dequantize(OUTPUT) if OUTPUT in g.tensors else self.embed
        self.output_norm = g.dequantize(OUTPUT_NORM)
        self._layers = [self._load_layer(i) for i in range(cfg.n_layers)] if cache_weights else None
        shape = (cfg.n_layers, max_ctx, cfg.n_kv_heads, cfg.head_dim)
        self.k_cache = np.zeros(shape, F32)
        self.v_cache = np.zeros(shape, F32)
        self.length = 0

    def _load_layer(self, i: int) -> dict:
        d = {p: self.g.dequantize(tensor_name(i, p)) for p in
             ("attn_norm", "attn_output", "ffn_norm", "ffn_down")}
        d["qkv"] = np.concatenate([self.g.dequantize(tensor_name(i, p))
                                   for p in ("attn_q", "attn_k", "attn_v")])
        d["gate_up"] = np.concatenate([self.g.dequantize(tensor_name(i, p))
                                       for p in ("ffn_gate", "ffn_up")])
        return d

    def layer(self, i: int) -> dict:
        return self._layers[i] if self._layers is not None else self._load_layer(i)

    def reset(self) -> None:
        self.length = 0

    def forward(self, token: int, pos: int) -> np.ndarray:
        """Logits (vocab,) float32 after feeding `token` at position `pos`.

        pos may be at most the current cache length (pos < length rewinds and
        overwrites); positions after pos are discarded.
        """
        c = self.cfg
        if not 0 <= token < c.vocab:
            raise ValueError(f"token id {token} out of range 0..{c.vocab - 1}")
        if not 0 <= pos <= min(self.length, self.max_ctx - 1):
            raise ValueError(f"position {pos} invalid: KV cache holds {self.length} of "
                             f"{self.max_ctx} positions")
        x = self.embed[token].copy()
        for i in range(c.n_layers):
            x = self._block(i, x, pos)
        self.length = pos + 1
        return self.output @ rmsnorm(x, self.output_norm, c.rms_eps)

    def _block(self, i: int, x: np.ndarray, pos: int) -> np.ndarray:
        c, w = self.cfg, self.layer(i)
        q_dim, kv_dim = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
        qkv = w["qkv"] @ rmsnorm(x, w["attn_norm"], c.rms_eps)
        q = rope(qkv[:q_dim].reshape(c.n_heads, c.head_dim), pos, c.rope_base, c.rope_dim)
        k = rope(qkv[q_dim:q_dim + kv_dim].reshape(c.n_kv_heads, c.head_dim),
                 pos, c.rope_base, c.rope_dim)
        self.k_cache[i, pos] = k
        self.v_cache[i, pos] = qkv[q_dim + kv_dim:].reshape(c.n_kv_heads, c.head_dim)
        att = attention(q, self.k_cache[i, :pos + 1], self.v_cache[i, :pos + 1])
        x = x + w["attn_output"] @ att.reshape(-1)
        gu = w["gate_up"] @ rmsnorm(x, w["ffn_norm"], c.rms_eps)
        return x + w["ffn_down"] @ (silu(gu[:c.ffn]) * gu[c.ffn:])


def logits_trace(ref: Reference, ids: list[int]) -> np.ndarray:
    """Reset, feed ids at positions 0..n-1; return (n, vocab) logits of every step."""
    ref.reset()
    return np.stack([ref.forward(t, p) for p, t in enumerate(ids)])


def greedy(ref: Reference, prompt_ids: list[int], n_new: int, eos_id: int | None = None) -> list[int]:
    """Reset, feed the prompt, then generate up to n_new tokens by argmax.

    Returns only the new ids. If eos_id is generated it is included as the
    last id and generation stops.
    """
    if not prompt_ids:
        raise ValueError("greedy() needs at least one prompt token")
    if len(prompt_ids) + n_new > ref.max_ctx + 1:
        raise ValueError(f"prompt ({len(prompt_ids)}) + n_new ({n_new}) exceeds max_ctx {ref.max_ctx}")
    ref.reset()
    for pos, tok in enumerate(prompt_ids):
        logits = ref.forward(tok, pos)
    out: list[int] = []
    pos = len(prompt_ids)
    while len(out) < n_new:
        tok = int(np.argmax(logits))
        out.append(tok)
        if tok == eos_id or len(out) == n_new:
            break
        logits = ref.forward(tok, pos)
        pos += 1
    return out
