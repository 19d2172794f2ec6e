#!/usr/bin/env bash
# Timing fidelity (ncu and repeated evaluations), the MCP loop in every language through the
# ledger's queue and a GPU worker, and the server's start-up on an idle host. Results under $OUT.
set -uo pipefail
source benchmarks/gpu/setup_device.sh
# Can Nsight Compute profile here at all? A plain CUDA binary first, then Python.
mkdir -p /tmp/ncu && cat > /tmp/ncu/add.cu <<'CU'
#include <cstdio>
__global__ void add(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.f; }
int main() { float *x; cudaMalloc(&x, 1 << 24); add<<<4096, 1024>>>(x, 1 << 22); cudaDeviceSynchronize(); printf("ok\n"); }
CU
nvcc -arch=sm_90a -o /tmp/ncu/add /tmp/ncu/add.cu 2>&1 | tail -3
{ ncu --version; ncu --clock-control none --metrics gpu__time_duration.sum /tmp/ncu/add;
  ncu --clock-control none --target-processes all --metrics gpu__time_duration.sum \
    python3 -c "import torch; x = torch.ones(1 << 22, device='cuda'); (x + 1).sum().item()"; } > "$OUT/ncu_probe.txt" 2>&1
tail -n 30 "$OUT/ncu_probe.txt"
timeout 200 python3 benchmarks/timing/fidelity.py --out "$OUT/fidelity.json" --problem qwen3_8b_rmsnorm \
  --solution benchmarks/solutions/qwen3_8b_rmsnorm/cuda_cpp.json --repeats 5 2>&1 | tail -n 8
timeout 240 python3 benchmarks/gpu/mcp_loop.py --out "$OUT/mcp_loop.json" --workloads 2 2>&1 | tail -n 30
timeout 60 python3 benchmarks/server/bench_startup.py --starts 7 --calls 50 --out "$OUT/server_h200.json" 2>&1 | tail -n 6
