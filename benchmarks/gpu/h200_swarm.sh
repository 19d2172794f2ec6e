#!/usr/bin/env bash
# A swarm on the GPU: scripted MCP agents (good, improving, cheating, bad; pytorch, triton, cuda_cpp, cute_dsl,
# from the hand-written solutions in benchmarks/solutions) on the three catalogue problems that have them, shared
# so that every agent works (the 2026-12-03 run without sharing held 12 of 16 agents all along),
# the server and a GPU worker started by `solforge swarm run`; then its status, its HTML report and
# swarm.json (benchmarks/gpu/swarm_summary.py: lease utilisation, queue waits, evaluations per GPU-hour,
# cheats ranked). Results under $OUT. --solved-score 0.99: the hand-written solutions score about 0.5, and with 0.5
# the run of 2026-12-03 stopped after 8.3 of its 10 minutes ("every problem is done").
#   bash benchmarks/gpu/h200_swarm.sh run MINUTES AGENTS      one call (MINUTES up to about 5)
# A device call lasts 10 minutes at most, so a longer run spans two calls on the warm machine:
#   bash benchmarks/gpu/h200_swarm.sh start 10 16             starts it in the background, waits 9 minutes
#   bash benchmarks/gpu/h200_swarm.sh finish                  waits for the end, writes the results
set -uo pipefail
source benchmarks/gpu/setup_device.sh
mode=${1:-run}
minutes=${2:-4}
agents=${3:-4}
behaviours=good,improving,cheating,bad
languages=pytorch,triton,cuda_cpp,cute_dsl  # with 16 agents, every behaviour in every language once
home=/tmp/solforge-swarm
db="sqlite:///$home/ledger.db"

start() {
  rm -rf "$home" && mkdir -p "$home"
  setsid nohup timeout $(( minutes * 60 + 300 )) solforge swarm run -q --db "$db" --dir "$home/agents" \
    --problem qwen3_8b_rmsnorm,llama3_1_8b_fused_add_rmsnorm,deepseek_v3_fp8_act_quant \
    --agents "$agents" --max-agents-per-problem $(( (agents + 2) / 3 )) \
    --launcher command --time-limit-minutes "$minutes" --solved-score 0.99 \
    --command "{python} -m solforge.planner.swarm.scripted --behaviour $behaviours --language $languages --solutions $PWD/benchmarks/solutions --rounds 2" \
    > "$home/swarm_run.log" 2>&1 &
  echo $! > "$home/pid"
  echo "swarm started: $agents agents, $minutes minutes, pid $(cat "$home/pid")"
}

wait_for_end() {  # up to $1 seconds
  local pid; pid=$(cat "$home/pid")
  for _ in $(seq "$1"); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  return 1
}

finish() {
  wait_for_end 540 || { echo "the swarm is still running"; tail -n 5 "$home/swarm_run.log"; return 1; }
  cp "$home/swarm_run.log" "$OUT/"; tail -n 15 "$OUT/swarm_run.log"
  solforge swarm status --db "$db" --json > "$OUT/swarm_status.json"
  run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run']['id'])" "$OUT/swarm_status.json")
  solforge report --db "$db" --out "$OUT/report.html" --title "solforge swarm on one H200" --run "$run"
  python3 benchmarks/gpu/swarm_summary.py --db "$db" --run "$run" --behaviour "$behaviours" --out "$OUT/swarm.json"
  ls -la "$OUT"
}

case "$mode" in
  run) start && finish ;;
  start) start; wait_for_end 530; tail -n 3 "$home/swarm_run.log" ;;
  finish) finish ;;
  *) echo "usage: h200_swarm.sh run|start|finish [MINUTES] [AGENTS]" >&2; exit 2 ;;
esac
