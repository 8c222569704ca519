#!/usr/bin/env bash
# As it ran, from results/pending/, with the cm 8/16 code of commits e6e868c, 0b0cb59 and f47a4aa (since removed).
# resident_before_cm8.wgsl was `git show 6f03a27:wgsl/resident.wgsl`, which is wgsl/resident.wgsl again.
# Device-side command (sixteenth session): cm bit 8 (q|k|v and gate|up in 16-byte pieces, three 16-byte loads an
# item instead of ten 4-byte ones; cm 9) and bits 8 and 16 (the column-major down projection too, two 16-byte loads a
# block instead of five 4-byte ones; cm 25) against the defaults (cm 1), and the defaults against the kernel before this
# change (resident_before_cm8.wgsl, code 6f03a27: W an array of vec2 instead of vec4, which the default path reads
# one word at a time either way).  128 tokens of "Once upon a time", K = 8, resident, JS, 3 runs each, three
# interleaved rounds with the recipe's flags; then cm 1, 9 and 25 with disable_robustness, two rounds (does the
# layout's effect depend on the checks, as hq's does?).  Then, on an H200 only, h200.sh (the issue-6 rates, K = 4).
source results/2026-12-05-nvidia-h200-dn/common.sh
source results/2026-12-07-nvidia-h100-safety/flags.sh
NEW=$(mktemp); cp wgsl/resident.wgsl "$NEW"
old() { cp results/pending/resident_before_cm8.wgsl "$DIST/wgsl/resident.wgsl"; }
new() { cp "$NEW" "$DIST/wgsl/resident.wgsl"; }
P=(--param plans=resident --param drivers=js)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$R/gpu.txt"
new; go w0 "" "${P[@]}"
for r in 1 2 3; do
  old; go old_$r "" "${P[@]}"; pack
  new; go cm1_$r "" "${P[@]}"; pack
  go cm9_$r '{"cm": 9}' "${P[@]}"; pack
  go cm25_$r '{"cm": 25}' "${P[@]}"; pack
done
ROB=$(mk disable_robustness)
B=(python3 build.py bench --browser "$CHROMIUM" --browser-flags "$ROB" --dist "$DIST")
for r in 1 2; do
  go rcm1_$r "" "${P[@]}"; pack
  go rcm9_$r '{"cm": 9}' "${P[@]}"; pack
  go rcm25_$r '{"cm": 25}' "${P[@]}"; pack
done
if grep -q H200 "$R/gpu.txt"; then bash results/pending/h200.sh; fi
