#!/usr/bin/env bash
# Quiet measurements on the lent GPU (nothing else runs): the hand-written solutions on every
# workload, after building them all in parallel. Results under $OUT.
set -uo pipefail
source benchmarks/gpu/setup_device.sh
solforge calibrate --json > "$OUT/calibration.json" 2> "$OUT/calibrate.log"
timeout 540 python3 benchmarks/solutions/evaluate_all.py --prebuild 12 \
  --out "$OUT/handwritten_all.json" --traces "$OUT/handwritten_all_traces.jsonl" 2>&1 | tail -n 40
