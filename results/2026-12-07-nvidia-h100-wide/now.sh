#!/usr/bin/env bash
# Device-side command for the sixteenth session's first call: wide.sh (any card), ahead.sh, then, on an H200 only,
# h200.sh (the issue-6 rates at the default K = 4).
bash results/2026-12-07-nvidia-h100-wide/wide.sh
bash results/2026-12-07-nvidia-h100-wide/ahead.sh
if grep -q H200 "$OUT/res/gpu.txt"; then bash results/pending/h200.sh; fi
