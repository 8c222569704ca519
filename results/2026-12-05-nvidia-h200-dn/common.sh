# Sourced by the run scripts here (device side, from the repo root): the bench command, the 128-token amortize
# arguments and go NAME TUNING ARGS... (one bench run into $OUT/res/NAME.json, its summary line and its time).
# The same as ../2026-12-04-nvidia-h200-spread/common.sh.
source results/2026-12-04-nvidia-h200-spread/common.sh
