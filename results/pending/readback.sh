#!/usr/bin/env bash
# Device-side command (one call, any GPU): the dispatch suite (quick ladder) with 40 readback-latency trials per
# strategy (app/bench/readback.py), twice, then the same with the readback section alone timed longer.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
for i in 1 2; do
  timeout 240 "${B[@]}" --json "$R/dispatch$i.json" --suite dispatch --quick --param readback_reps=40 > "$R/dispatch$i.txt" 2>&1
  echo "dispatch$i $SECONDS s" >> "$R/times.txt"; pack
done
# the LLM loop's own readbacks on the same machine: 128 tokens, K = 8, JS, with and without poke=50
go llm "" --param plans=resident --param drivers=js; pack
go llmpoke "" --param plans=resident --param drivers=js --param poke=50; pack
