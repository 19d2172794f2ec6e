#!/usr/bin/env bash
# A short swarm run on the GPU: four scripted MCP agents (good, improving, cheating, bad) on four
# catalogue problems, the server and a GPU worker started by `solforge swarm run`, then the status
# and the HTML report of the run. Results under $OUT.
#   bash benchmarks/gpu/h200_swarm.sh [MINUTES]
set -uo pipefail
source benchmarks/gpu/setup_device.sh
minutes=${1:-4}
home=/tmp/solforge-swarm && rm -rf "$home" && mkdir -p "$home"
db="sqlite:///$home/ledger.db"
timeout $(( minutes * 60 + 240 )) solforge swarm run -q --db "$db" --dir "$home/agents" \
  --problem qwen3_8b_rmsnorm,llama3_1_8b_fused_add_rmsnorm,llama3_1_8b_rope,deepseek_v3_fp8_act_quant \
  --agents 4 --launcher command --time-limit-minutes "$minutes" --solved-score 0.5 \
  --command '{python} -m solforge.planner.swarm.scripted --behaviour good,improving,cheating,bad --rounds 2' \
  > "$OUT/swarm_run.log" 2>&1
echo "swarm run exit $?"; tail -n 15 "$OUT/swarm_run.log"
solforge swarm status --db "$db" --json > "$OUT/swarm_status.json"
solforge report --db "$db" --out "$OUT/swarm_report.html" --title "solforge swarm on one H200" \
  $(python3 -c "import json,sys; print('--run', json.load(open(sys.argv[1]))['run']['id'])" "$OUT/swarm_status.json")
ls -la "$OUT"
