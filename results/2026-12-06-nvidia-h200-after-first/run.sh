#!/usr/bin/env bash
# Device-side command of this folder (one call), with the defaults: both plans with both drivers on the long prompt
# (128 tokens, K = 8, twice) and the short one (30 tokens to EOS), then the compare suite. Every row now also
# records the decode rate after the first token (decode_after_first_tok_per_s), which the compare suite uses for
# every engine.
source results/2026-12-05-nvidia-h200-dn/common.sh
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" --param plans=resident --param drivers=js
g long1 "" --param plans=resident,gpu_loop --param drivers=js,python
g long2 "" --param plans=resident,gpu_loop --param drivers=js,python
g short "" --param plans=resident,gpu_loop --param drivers=js,python --prompt "The capital of France is"
timeout 300 "${B[@]}" --json "$R/compare.json" --suite compare --max-new-tokens 32 --runs 3 > "$R/compare.txt" 2>&1
python3 results/summarize.py "$R/compare.json" >> "$R/summary.txt"
echo "compare $SECONDS s" >> "$R/times.txt"; tar -C "$OUT" -czf "$OUT/res.tgz" res
