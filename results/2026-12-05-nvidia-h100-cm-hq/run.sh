#!/usr/bin/env bash
# Device-side command of 1-ab (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h100-cm-hq/run.sh
# On top of the defaults (dn 3), interleaved with them, 2 rounds, 128 tokens, JS: hq 1 (the plan's copy of the
# embedding, head items word-interleaved), cm 7 / 3 / 4 (the plan's copy of the layer matrices), sgp 1 (two attention
# positions per slot an iteration), copy_apart=1 (the readback copy submitted on its own, the old way), hq + sgp,
# cm 7 + hq + sgp, hq with 128 and 256 head rows.  Then both plans with both drivers, the default and all three new
# knobs.  res.tgz is rewritten after every run, so a cut-off call still brings back what it measured.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g def$i "" "${P[@]}"
  g hq$i '{"hq": 1}' "${P[@]}"
  g cm7_$i '{"cm": 7}' "${P[@]}"
  g sgp$i '{"sgp": 1}' "${P[@]}"
  g apart$i "" "${P[@]}" --param copy_apart=1
  g hqsgp$i '{"hq": 1, "sgp": 1}' "${P[@]}"
  g all$i '{"cm": 7, "hq": 1, "sgp": 1}' "${P[@]}"
  g cm3_$i '{"cm": 3}' "${P[@]}"
  g cm4_$i '{"cm": 4}' "${P[@]}"
  g hqr128_$i '{"hq": 1, "head_rows": 128}' "${P[@]}"
  g hqr256_$i '{"hq": 1, "head_rows": 256}' "${P[@]}"
done
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
g long "" "${Q[@]}"
g longall '{"cm": 7, "hq": 1, "sgp": 1}' "${Q[@]}"
