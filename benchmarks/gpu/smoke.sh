#!/usr/bin/env bash
# First look on the H200: the engine end to end (judge, candidate, CUDA IPC, CUPTI, baseline, SOL).
set -uo pipefail
source benchmarks/gpu/setup_device.sh
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee $OUT/nvidia-smi.csv
python3 -c "import torch, triton, pydantic; print(torch.__version__, triton.__version__, pydantic.__version__, torch.cuda.get_device_name())"
python3 -c "from cupti import cupti; print('cupti', cupti.get_version())" 2>&1 | tail -1
python3 -c "import cutlass, cutlass.cute as cute; print('cutlass-dsl ok')" 2>&1 | tail -1
timeout 240 solforge eval tests/data/sol_execbench_rmsnorm --solution tests/data/sol_execbench_rmsnorm/solution_pytorch.json 2>&1 | tail -20
timeout 300 python3 benchmarks/catalogue/run_references.py --problems qwen3_8b_rmsnorm llama3_1_8b_qkv_proj_gemm deepseek_v3_fp8_act_quant --smallest 2 --out $OUT/refs_smoke.json 2>&1 | tail -20
cp -r /tmp/solforge-cache/baselines $OUT/ 2>/dev/null; true
