#!/usr/bin/env bash
# Issue 18 on one host with several GPUs (nvidia-h200-x2/x4, nvidia-h100-x2/x4). Stage the wheels with
#   ../shared/device/stage-wheels.sh --cute pgserver==0.1.4 psycopg==3.3.9 psycopg-binary==3.3.9
# (PostgreSQL 16's server binaries come in the pgserver wheel; psycopg is the ledger's driver). With them .whl
# passes the 64 MiB a call carries: move them to .whl4 (git-ignored through .git/info/exclude), carry it once and
# install them with `python3 -m pip install -q --no-deps --no-index --target /tmp/site .whl4/*.whl`. Then one
# call each:
#   bash benchmarks/gpu/multigpu.sh start N MINUTES [AGENTS_PER_GPU]     `solforge swarm run --gpus 0,..,N-1`: one
#        worker with a slot and warm judges per GPU, on a SQLite ledger that every run of this machine shares
#   bash benchmarks/gpu/multigpu.sh start-pg N MINUTES [AGENTS_PER_GPU]  the same with --no-workers and one
#        `solforge worker --gpus i` per GPU, on a local PostgreSQL ledger, as several hosts would run it
#   bash benchmarks/gpu/multigpu.sh finish                                waits for the run; $OUT/<label>/: swarm.json
#        (per-GPU utilisation, evaluations, overlapping leases), audit.json (NVML: every process on a GPU pinned
#        to it), report.html, run.tar.gz (the logs, the ledger's status, the GPUs): four files, since a device
#        call returns eight
#   bash benchmarks/gpu/multigpu.sh report                                `solforge report --scaling` of the SQLite
#        ledger: evaluations per hour on 1, 2 and 4 GPUs
# `start` waits up to 530 s (a call lasts 10 minutes at most), so a 10-minute run is `start` then `finish`.
# SLOTS=cpu runs the same on CPU slots (a dry run on a machine without a GPU; start-pg with N=1 only).
# Agents are scripted (good, improving, cheating, bad; four languages) on the problems with hand-written solutions.
set -uo pipefail
[ -f benchmarks/gpu/setup_device.sh ] && [ -z "${SOLFORGE_NO_SETUP:-}" ] && source benchmarks/gpu/setup_device.sh
mode=${1:?usage: multigpu.sh start|start-pg|finish|report [N MINUTES AGENTS_PER_GPU]}
n=${2:-2}
minutes=${3:-10}
per_gpu=${4:-8}
home=/tmp/solforge-multigpu
state=$home/current
behaviours=good,improving,cheating,bad
languages=pytorch,triton,cuda_cpp,cute_dsl
problems=qwen3_8b_rmsnorm,llama3_1_8b_fused_add_rmsnorm,deepseek_v3_fp8_act_quant
OUT=${OUT:-$home/out}
mkdir -p "$home" "$OUT"

slots_args() {  # the local worker's slots: GPUs 0..n-1, or n CPU slots for a dry run
  if [ "${SLOTS:-gpu}" = cpu ]; then echo "--cpu-slots $n"; else echo "--gpus $(seq -s, 0 $((n - 1)))"; fi
}

swarm() {  # db, label, extra swarm arguments...
  local db=$1 label=$2; shift 2
  local agents=$(( n * per_gpu ))
  mkdir -p "$home/$label"
  setsid nohup timeout $(( minutes * 60 + 300 )) solforge swarm run -q --db "$db" --dir "$home/$label/agents" \
    --problem "$problems" --agents "$agents" --max-agents-per-problem $(( (agents + 2) / 3 )) \
    --launcher command --time-limit-minutes "$minutes" --solved-score 0.99 "$@" \
    --command "{python} -m solforge.planner.swarm.scripted --behaviour $behaviours --language $languages --solutions $PWD/benchmarks/solutions --rounds 2" \
    > "$home/$label/swarm_run.log" 2>&1 &
  echo "$!" > "$home/$label/swarm.pid"
  setsid nohup python3 -m solforge.planner.workers.gpu_audit --seconds $(( minutes * 60 + 600 )) \
    --out "$home/$label/audit.json" > "$home/$label/audit.log" 2>&1 &
  echo "$!" > "$home/$label/audit.pid"
  printf '%s\n%s\n' "$label" "$db" > "$state"
  echo "$label: $agents agents on $n slot(s) for $minutes minutes, ledger $db"
}

start() {
  rm -f "$state"  # a failed start leaves nothing for finish to mistake for this run
  swarm "sqlite:///$home/ledger.db" "serve-$n-${SLOTS:-gpu}" $(slots_args)
}

start_pg() {
  local label="workers-$n-${SLOTS:-gpu}"
  rm -f "$state"
  mkdir -p "$home/$label"
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  rm -f "$home/pg.url"
  setsid nohup python3 benchmarks/gpu/local_postgres.py --url-file "$home/pg.url" \
    > "$home/$label/postgres.log" 2>&1 &
  echo "$!" > "$home/$label/postgres.pid"
  for _ in $(seq 60); do [ -s "$home/pg.url" ] && break; sleep 1; done
  [ -s "$home/pg.url" ] || { echo "PostgreSQL did not start"; cat "$home/$label/postgres.log"; return 1; }
  local db; db=$(cat "$home/pg.url")
  swarm "$db" "$label" --no-workers
  sleep 15  # the swarm migrates the ledger first; a worker needs its tables
  local i
  for i in $(seq 0 $((n - 1))); do
    local gpus=(--gpus "$i"); [ "${SLOTS:-gpu}" = cpu ] && gpus=()
    setsid nohup solforge worker --db "$db" "${gpus[@]}" > "$home/$label/worker_$i.log" 2>&1 &
    echo "$!" >> "$home/$label/workers.pid"
  done
}

wait_for_end() {  # up to $1 seconds
  local pid; pid=$(cat "$home/$(head -n 1 "$state")/swarm.pid")
  for _ in $(seq "$1"); do kill -0 "$pid" 2>/dev/null || return 0; sleep 1; done
  return 1
}

stop_pids() {  # pid file: SIGTERM, then wait up to 30 s for each
  [ -f "$1" ] || return 0
  local pid
  for pid in $(cat "$1"); do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null; done
  for pid in $(cat "$1"); do for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done; done
}

finish() {
  [ -s "$state" ] || { echo "no run was started (see the start step's output)"; return 1; }
  local label db
  label=$(head -n 1 "$state"); db=$(sed -n 2p "$state")
  local dir=$home/$label out=$OUT/$label
  wait_for_end 540 || { echo "the swarm is still running"; tail -n 5 "$dir/swarm_run.log"; return 1; }
  stop_pids "$dir/workers.pid"
  stop_pids "$dir/audit.pid"
  mkdir -p "$out"
  cp "$dir/audit.json" "$out/" 2>/dev/null
  solforge swarm status --db "$db" --json > "$dir/swarm_status.json"
  local run; run=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run']['id'])" "$dir/swarm_status.json")
  solforge report --db "$db" --out "$out/report.html" --title "solforge swarm, $label" --run "$run" --catalogue none
  python3 benchmarks/gpu/swarm_summary.py --db "$db" --run "$run" --behaviour "$behaviours" --out "$out/swarm.json"
  stop_pids "$dir/postgres.pid"
  nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv > "$dir/gpus.csv" 2>/dev/null
  # The device tool returns 8 files a call: the logs, the ledger's status and the GPU list travel as one archive.
  tar -czf "$out/run.tar.gz" -C "$dir" --exclude agents --exclude '*.pid' .
  python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
summary = json.loads((out / "swarm.json").read_text())
audit = json.loads((out / "audit.json").read_text()) if (out / "audit.json").is_file() else None
print(f"{summary['agents']} agents, {summary['slots']} slot(s), {summary['minutes']} min: lease utilisation "
      f"{summary['lease_utilisation']}, {summary['evaluations']} evaluations ({summary['evaluations_per_gpu_hour']} per "
      f"GPU-hour), queue wait p95 {summary['queue_wait_p95_s']} s, overlapping leases {summary['overlapping_leases']}, "
      f"cheats ranked {summary['cheats_ranked']}")
for slot in summary["by_slot"]:
    print(f"  {slot['slot']}: utilisation {slot['lease_utilisation']}, {slot['evaluations']} evaluations, "
          f"overlaps {slot['overlapping_leases']}")
if audit is not None:
    print(f"audit: {audit['samples']} samples, processes per GPU {[len(v) for v in audit['gpus'].values()]}, "
          f"{len(audit['violations'])} violation(s), {len(audit['unreadable'])} unreadable")
PY
}

case "$mode" in
  start) start && { wait_for_end 530; tail -n 3 "$home/$(head -n 1 "$state")/swarm_run.log"; } ;;
  start-pg) start_pg && { wait_for_end 500; tail -n 3 "$home/$(head -n 1 "$state")/swarm_run.log"; } ;;
  finish) finish ;;
  report) solforge report --db "sqlite:///$home/ledger.db" --out "$OUT/scaling.html" --title "solforge on $(nvidia-smi -L 2>/dev/null | wc -l) GPUs" --scaling --catalogue none ;;
  *) echo "usage: multigpu.sh start|start-pg|finish|report [N MINUTES AGENTS_PER_GPU]" >&2; exit 2 ;;
esac
