#!/usr/bin/env bash
# Timing fidelity (ncu and repeated evaluations) and the MCP loop in every language through the
# ledger's queue and a GPU worker. Every step logs to its own file under $OUT, so a step cut short
# by the time limit still leaves what it printed.
set -uo pipefail
source benchmarks/gpu/setup_device.sh
timeout 240 python3 benchmarks/timing/fidelity.py --out "$OUT/fidelity.json" --problem qwen3_8b_rmsnorm \
  --solution benchmarks/solutions/qwen3_8b_rmsnorm/cuda_cpp.json --repeats 5 > "$OUT/fidelity.log" 2>&1
tail -n 8 "$OUT/fidelity.log"
timeout 300 python3 benchmarks/gpu/mcp_loop.py --out "$OUT/mcp_loop.json" --workloads 2 > "$OUT/mcp_loop.log" 2>&1
tail -n 30 "$OUT/mcp_loop.log"
