#!/usr/bin/env bash
# Device-side command of the second call, on the same warm machine right after a.sh (sent inline; saved here as sent):
# the compare suite and the dispatch suite with their defaults.
source .gpu/device.sh && source results/2026-12-05-nvidia-h200-dn/common.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/gpu.txt
pack() { tar -C "$OUT" -czf "$OUT/res.tgz" res; }
timeout 200 "${B[@]}" --json $R/compare.json --suite compare > $R/compare.txt 2>&1
python3 results/summarize.py $R/compare.json >> $R/summary.txt; echo "compare $SECONDS s" >> $R/times.txt; pack
timeout 300 "${B[@]}" --json $R/dispatch.json --suite dispatch > $R/dispatch.txt 2>&1
echo "dispatch $SECONDS s" >> $R/times.txt; pack
