#!/usr/bin/env bash
# Device-side command (one call): the resident kernel's knobs re-checked on top of today's defaults (cm 1 and 128
# head rows, the ninth session's, changed the down projection's loads after wg, fb, kv_pre, touch and split were
# last swept). 128 tokens of "Once upon a time", K = 8, JS, 3 runs per config, two interleaved rounds with the
# defaults ("base") run at the start of each round and again at its end. Every row's JSON records the tuning that
# ran ("tuning"). Then the 30-token answer at the new default K = 4 with both drivers, for whichever card this is.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
g w0 "" "${P[@]}"
for r in 1 2; do
  g base_a$r "" "${P[@]}"
  g fb32_$r '{"fb": 32, "wo_parts": 5}' "${P[@]}"
  g wg256_$r '{"wg": 256}' "${P[@]}"
  g wg1024_$r '{"wg": 1024}' "${P[@]}"
  g kv2_$r '{"kv_pre": 2}' "${P[@]}"
  g kv6_$r '{"kv_pre": 6}' "${P[@]}"
  g touch0_$r '{"touch": 0}' "${P[@]}"
  g split0_$r '{"split": 0}' "${P[@]}"
  g rd1_$r '{"rd": 1}' "${P[@]}"
  g fold1_$r '{"fold": 1}' "${P[@]}"
  g hpre1_$r '{"hpre": 1}' "${P[@]}"
  g hr256_$r '{"head_rows": 256}' "${P[@]}"
  g base_b$r "" "${P[@]}"
done
for r in 1 2; do
  g short4_$r "" --param plans=resident --param drivers=js,python --k 4 --prompt "The capital of France is"
done
