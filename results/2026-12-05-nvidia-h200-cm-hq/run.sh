#!/usr/bin/env bash
# Device-side command of 1-ab (../../../shared/gpu/README.md recipe):
#   source .gpu/device.sh && bash results/2026-12-05-nvidia-h200-cm-hq/run.sh
# On top of the defaults (dn 3): hq 1 (the plan's copy of the embedding, head items word-interleaved), cm 7, cm 7 with
# hq, cm 3, cm 4, hq with 128 and 256 head rows and
# sgp 1 (two attention positions per slot an iteration) and copy_apart=1 (the readback copy submitted on its
# own, the old way), interleaved with the default, 2 rounds; then both plans with both drivers, default and the
# best guess (cm 7 + hq).  res.tgz is rewritten after every run, so a cut-off call still brings back what it measured.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2; do
  g def$i "" "${P[@]}"
  g hq$i '{"hq": 1}' "${P[@]}"
  g cm7_$i '{"cm": 7}' "${P[@]}"
  g cm7hq$i '{"cm": 7, "hq": 1}' "${P[@]}"
  g cm3_$i '{"cm": 3}' "${P[@]}"
  g cm4_$i '{"cm": 4}' "${P[@]}"
  g hqr128_$i '{"hq": 1, "head_rows": 128}' "${P[@]}"
  g hqr256_$i '{"hq": 1, "head_rows": 256}' "${P[@]}"
  g sgp$i '{"sgp": 1}' "${P[@]}"
  g apart$i "" "${P[@]}" --param copy_apart=1
done
Q=(--param plans=resident,gpu_loop --param drivers=js,python)
g long "" "${Q[@]}"
g longcm7hq '{"cm": 7, "hq": 1}' "${Q[@]}"
