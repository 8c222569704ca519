#!/usr/bin/env bash
# Device-side command of this folder (one call): poke (empty submits while the run's last readback is awaited)
# against none, interleaved, 128 tokens, JS, K = 8; the ninth session's defaults against the eighth's
# ({"cm": 0, "head_rows": 64}); persist 1-3 again (the tenth session's 2-pre files were lost); then both plans
# with both drivers, without and with poke.
source results/2026-12-05-nvidia-h200-dn/common.sh
P=(--param plans=resident --param drivers=js)
g() { go "$@"; tar -C "$OUT" -czf "$OUT/res.tgz" res; }
g w0 "" "${P[@]}"
for i in 1 2 3; do
  g base$i "" "${P[@]}"
  g poke1_$i "" "${P[@]}" --param poke=1
  g poke100_$i "" "${P[@]}" --param poke=100
  g old$i '{"cm": 0, "head_rows": 64}' "${P[@]}"
done
for i in 1 2 3; do g p${i} "{\"persist\": $i}" "${P[@]}"; done
g long "" --param plans=resident,gpu_loop --param drivers=js,python
g longpoke1 "" --param plans=resident,gpu_loop --param drivers=js,python --param poke=1
g longpoke100 "" --param plans=resident,gpu_loop --param drivers=js,python --param poke=100
