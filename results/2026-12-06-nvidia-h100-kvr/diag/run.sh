#!/usr/bin/env bash
# Device-side command (second call; ran on an H100, results in res/ here): where the attention's per-round cost lies. One run each, 128 tokens, resident,
# JS, K = 8; the per-block GPU times (block_timing_runs) against the position show the growth with the context.
# kv_pre 0: no K/V prefetch (every round loads in the loop); kv_pre 1; skip 4: no attention (tokens meaningless).
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g d_w0 "" "${P[@]}"
g d_base "" "${P[@]}"
g d_pre0 '{"kv_pre": 0}' "${P[@]}"
g d_pre1 '{"kv_pre": 1}' "${P[@]}"
g d_skip4 '{"skip": 4}' "${P[@]}"
g d_base2 "" "${P[@]}"
