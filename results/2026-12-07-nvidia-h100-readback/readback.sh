#!/usr/bin/env bash
# Device-side command (one call, any GPU): the dispatch suite (quick ladder) with 40 readback-latency trials per
# strategy (app/bench/readback.py); the LLM loop's own readbacks on the same machine (128 tokens, K = 8, JS, with
# and without poke=50); then, on an H200 only, ../pending/h200.sh; then the dispatch suite once more.
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
d() { timeout 150 "${B[@]}" --json "$R/$1.json" --suite dispatch --quick --param readback_reps=40 > "$R/$1.txt" 2>&1
      echo "$1 $SECONDS s" >> "$R/times.txt"; pack; }
d dispatch1
go llm "" --param plans=resident --param drivers=js; pack
go llmpoke "" --param plans=resident --param drivers=js --param poke=50; pack
bash results/pending/h200.sh
d dispatch2
