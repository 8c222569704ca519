#!/usr/bin/env bash
# Device-side command of the first call (sent inline; saved here as sent, split into lines): a warm-up, then the
# amortize suite and the llm suite with their defaults.
source .gpu/device.sh && source results/2026-12-05-nvidia-h200-dn/common.sh && source results/2026-12-07-nvidia-h100-safety/flags.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/gpu.txt
go w0 "" --param plans=resident --param drivers=js; pack
timeout 300 "${B[@]}" --json $R/amortize.json --suite amortize > $R/amortize.txt 2>&1
python3 results/summarize.py $R/amortize.json >> $R/summary.txt; echo "amortize $SECONDS s" >> $R/times.txt; pack
timeout 90 "${B[@]}" --json $R/llm.json --suite llm --plan resident --driver js --max-new-tokens 32 > $R/llm.txt 2>&1
python3 results/summarize.py $R/llm.json >> $R/summary.txt; echo "llm $SECONDS s" >> $R/times.txt; pack
