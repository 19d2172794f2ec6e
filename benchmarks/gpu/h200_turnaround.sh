#!/usr/bin/env bash
# The warm-evaluation issue on the GPU, by steps (each fits a 10-minute command):
#   tests       the GPU tests of the warm judge and the baselines (a clean cache: compiled and eager
#               baselines on every workload of a 16-workload problem), then the exploit corpus
#   turnaround  benchmarks/timing/turnaround.py in all four languages -> $OUT/turnaround.json and .md
#   fidelity    solforge's timer against ncu --clock-control none for ~10 us, 100 us and 1 ms kernels, and the
#               same kernels with one part of the method changed (--variants: flush, addresses, timer)
#   drift       drift_probe.py: placement, process and host CPU as causes of medians moving between evaluations,
#               and what a timed call's host time is made of
#   pch         the precompiled torch header: a changed cuda_cpp source built with and without it
#   corpus      the exploit corpus's GPU cases, the new ones first (persisting L2, launch-once, GOT walking)
#   defences    benchmarks/trust/bench_defences.py on warm judges: what the defences cost on the warm path
#   baseline    probe_baseline_compile.py: a torch.compile baseline's cost per shape compiled in the process (as
#               the judge's confined baseline processes must) and with inductor's worker pool, on two catalogue
#               problems (PROBE_LABELS=cold,warm,dynamic for the shared-cache and dynamic-shape runs)
#   counts      the catalogue's speed-of-light counts for this machine's torch, into problems/baselines/ (a
#               later turnaround step in the same call reads them: first_eval_s without the reference's trace)
#               and $OUT/sol_counts.jsonl, to commit
#   loop        benchmarks/gpu/mcp_loop.py: the whole agent loop through the MCP server in all four languages, every
#               language submitted and ranked, then get_leaderboard -> $OUT/mcp_loop.json
#   quick       the GPU test added since the last run (a first evaluation with the shipped table measures no
#               baseline)
#   cute        where the CuTe DSL and Triton rmsnorms' first calls spend their time (probe_host_cost.py, then
#               one CuTe DSL workload through the judge with the defences off and on)
#   profile     profile_kernel (issue 17): profile_languages.py (solforge profile in four languages, a page of
#               one kernel's sections), the CUPTI fallback, then the GPU tests of profiling
#   catalogue   benchmarks/catalogue/run_references.py on every workload of the catalogue, resumed from the
#               committed progress: references on the GPU, baselines into the shipped table, catalogue_<gpu>.csv;
#               PRECOMPILE_JOBS=8 PRECOMPILE_CHUNK=24: each chunk's compiled baselines built 8 at a time first (off
#               by default: no net gain on the H100, 2026-12-05, see benchmarks/results/h100-2026-12-05/);
#               CATALOGUE_DEADLINE_S=280 starts problems for 280 s instead of 510 (a session's last device minutes)
#   gaps        launch_gaps_probe.py: eager PyTorch's two levels split into the first dispatch, the kernels and the
#               gaps between them, with each process's CPU and its clock, and the GPU's SM clock
#   interference  probe_interference.py: does NVML show another process using the GPU during a timed loop
#               (a lane loading a solution beside the other lane's timing)?
# Every step logs to its own file under $OUT, so a step cut short still leaves what it printed.
# Several steps in one call, comma-separated (drift,fidelity,cute): one machine start, no idle gap.
set -uo pipefail
steps=${1:?usage: h200_turnaround.sh STEP[,STEP...] [turnaround.py arguments]  (steps: tests turnaround fidelity drift gaps catalogue pch corpus defences baseline counts loop quick cute interference profile)}
source benchmarks/gpu/setup_device.sh
for step in ${steps//,/ }; do
echo "== $step ($(date +%T))"
case "$step" in
  tests)
    timeout 560 python3 -m pytest -q -m gpu tests/integration/sandbox/test_warm_judge_gpu.py tests/integration/exploits/test_bad_input.py \
      tests/integration/sandbox/test_shipped_table_gpu.py \
      -p no:cacheprovider > "$OUT/gpu_tests.log" 2>&1
    tail -n 25 "$OUT/gpu_tests.log" ;;
  turnaround)
    timeout 580 python3 benchmarks/timing/turnaround.py --out "$OUT/turnaround.json" "${@:2}" > "$OUT/turnaround.log" 2>&1
    tail -n 12 "$OUT/turnaround.log"; cat "$OUT/turnaround.md" 2>/dev/null ;;
  fidelity)
    timeout 500 python3 benchmarks/timing/fidelity.py --variants --out "$OUT/fidelity.json" > "$OUT/fidelity.log" 2>&1
    tail -n 8 "$OUT/fidelity.log" ;;
  drift)
    timeout 500 python3 benchmarks/timing/drift_probe.py --processes 4 --pin $(( $(nproc) - 1 )) \
      --out "$OUT/drift_probe.json" > "$OUT/drift_probe.log" 2>&1
    tail -n 24 "$OUT/drift_probe.log" ;;
  pch)
    timeout 500 python3 benchmarks/build/bench_pch.py --out "$OUT/build_pch.json" > "$OUT/build_pch.log" 2>&1
    tail -n 3 "$OUT/build_pch.log" ;;
  corpus)
    timeout 250 python3 -m pytest -q -m gpu tests/integration/exploits/test_exploit_corpus.py -p no:cacheprovider \
      -k "persisting_l2 or launch_once or got_patch or low_precision_accumulate" > "$OUT/corpus_new.log" 2>&1
    tail -n 15 "$OUT/corpus_new.log"
    timeout 320 python3 -m pytest -q -m gpu tests/integration/exploits/test_exploit_corpus.py -p no:cacheprovider \
      > "$OUT/corpus_all.log" 2>&1
    tail -n 25 "$OUT/corpus_all.log" ;;
  defences)
    timeout 560 python3 benchmarks/trust/bench_defences.py --device cuda --warm --pause-s 4 --rounds 3 --iterations 50 \
      --out "$OUT/defences_warm.json" > "$OUT/defences_warm.log" 2>&1
    tail -n 5 "$OUT/defences_warm.log" ;;
  baseline)
    for problem in convnext_tiny_convnext_block deepseek_r1_rmsnorm; do
      timeout 250 python3 benchmarks/gpu/probe_baseline_compile.py --labels "${PROBE_LABELS:-cold,pool}" \
        --problem "$problem" --out "$OUT/baseline_compile_$problem.json" > "$OUT/baseline_compile_$problem.log" 2>&1
      grep -v '^ ' "$OUT/baseline_compile_$problem.log" | tail -n 4
    done ;;
  counts)
    timeout 500 python3 benchmarks/catalogue/count_tables.py --jobs 15 > "$OUT/count_tables.log" 2>&1
    cp problems/baselines/sol_counts.jsonl "$OUT/sol_counts.jsonl"
    head -n 3 "$OUT/count_tables.log" ;;
  loop)
    timeout 330 python3 benchmarks/gpu/mcp_loop.py --workloads 2 --out "$OUT/mcp_loop.json" > "$OUT/mcp_loop.log" 2>&1
    tail -n 3 "$OUT/mcp_loop.log" ;;
  quick)
    timeout 200 python3 -m pytest -q -m gpu tests/integration/sandbox/test_shipped_table_gpu.py \
      -p no:cacheprovider > "$OUT/quick_tests.log" 2>&1
    tail -n 6 "$OUT/quick_tests.log" ;;
  profile)
    timeout 300 python3 benchmarks/gpu/profile_languages.py --out "$OUT/profile.json" > "$OUT/profile.log" 2>&1
    tail -n 5 "$OUT/profile.log"
    timeout 120 python3 benchmarks/gpu/profile_languages.py --tool cupti --languages pytorch triton \
      --out "$OUT/profile_cupti.json" > "$OUT/profile_cupti.log" 2>&1
    tail -n 3 "$OUT/profile_cupti.log"
    timeout 200 python3 -m pytest -q -m gpu tests/integration/sandbox/test_profiling_gpu.py -p no:cacheprovider \
      > "$OUT/profile_tests.log" 2>&1
    tail -n 4 "$OUT/profile_tests.log" ;;
  catalogue)
    # Issue 15, resumable across sessions: starts from the committed progress and table of this machine's GPU
    # model (the H200's, or the H100's when an H100 is lent: tables are per model), stops starting problems at
    # 510 s (the longest problem so far took 148.0 s, on the H200; the files are rewritten atomically after each
    # problem, so a call cut at its limit loses only the problem in hand); copy the three files from $OUT into the
    # working tree before the next call, which resumes from them (benchmarks/results/catalogue_<gpu>_runs.json,
    # catalogue_<gpu>.csv, problems/baselines/<table>.jsonl).
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
    tag=$(python3 -c "import sys; from solforge.sandbox.sol.hardware import match_spec; m = match_spec(sys.argv[1]); print(m.key.lower().split('-')[0] if m else 'gpu')" "$gpu")
    table=$(python3 -c "import sys; from solforge.sandbox.baseline import table_name; print(table_name(sys.argv[1]))" "$gpu")
    echo "catalogue on $gpu: catalogue_${tag}_runs.json, $table"
    cp "benchmarks/results/catalogue_${tag}_runs.json" "$OUT/" 2>/dev/null
    cp "problems/baselines/$table" "$OUT/$table" 2>/dev/null
    # CATALOGUE_DEADLINE_S shortens a call for the session's last device minutes (the call's limit: it + 70 s).
    # The other GPU's run gives each problem an expected time, so one that would not end by that limit waits for
    # the next call and shorter ones after it still start (a 148 s problem started at about 380 s on the H200,
    # 2026-12-07).
    deadline=${CATALOGUE_DEADLINE_S:-510}
    other=benchmarks/results/catalogue_h100_runs.json
    [ "$tag" = h100 ] && other=benchmarks/results/catalogue_h200_runs.json
    expected=()
    [ -f "$other" ] && expected=(--expected-from "$other" --finish-by-s $((deadline + 60)))
    timeout $((deadline + 70)) python3 benchmarks/catalogue/run_references.py --device cuda --deadline-s "$deadline" \
      "${expected[@]}" \
      --precompile-jobs "${PRECOMPILE_JOBS:-0}" --precompile-chunk "${PRECOMPILE_CHUNK:-24}" \
      --out "$OUT/catalogue_${tag}_runs.json" --table "$OUT/$table" --csv "$OUT/catalogue_${tag}.csv" \
      --cache-dir /tmp/solforge-catalogue-cache > "$OUT/catalogue.log" 2>&1
    tail -n 6 "$OUT/catalogue.log" ;;
  gaps)
    timeout 300 python3 benchmarks/timing/launch_gaps_probe.py --processes 4 --schedules auto spin blocking --out "$OUT/launch_gaps.json" > "$OUT/launch_gaps.log" 2>&1
    tail -n 8 "$OUT/launch_gaps.log" ;;
  interference)
    timeout 120 python3 benchmarks/gpu/probe_interference.py --out "$OUT/interference.json" > "$OUT/interference.log" 2>&1
    tail -n 4 "$OUT/interference.log" ;;
  cute)
    # Why the CuTe DSL rmsnorm's correctness checks take 2-3.4 s of a 5 s warm call (2026-12-03): its host
    # time per call in-process (fresh tensors, the same tensors, with the audit hook), against PyTorch's,
    # then one workload through the judge with the defences off and on (the phases say where it went).
    # The CuTe DSL twice with the same caches: does a second process keep its 3 s first call?
    export CUDA_CACHE_PATH=/tmp/solforge-probe-cache/cuda CUTE_DSL_CACHE_DIR=/tmp/solforge-probe-cache/cute_dsl
    rm -rf /tmp/solforge-probe-cache
    # Then with a trivial kernel of the probe's own compiled and called first: a cost of the DSL's runtime,
    # which a spare could pay before any solution is imported, or of the solution's own kernel?
    # Triton's warm check still spends 0.8 s in first calls per shape (2026-12-03, fourth run): profiled too.
    for run in cute_dsl cute_dsl_again cute_dsl_prewarm triton pytorch; do
      extra=(); [ "$run" = cute_dsl_prewarm ] && extra=(--prewarm)
      solution=${run%_again}; solution=${solution%_prewarm}
      timeout 120 python3 benchmarks/gpu/probe_host_cost.py benchmarks/solutions/qwen3_8b_rmsnorm/$solution.json \
        "${extra[@]}" --out "$OUT/host_cost_$run.json" > "$OUT/host_cost_$run.log" 2>&1
      tail -n 1 "$OUT/host_cost_$run.log"
    done
    unset CUDA_CACHE_PATH CUTE_DSL_CACHE_DIR
    timeout 200 python3 benchmarks/gpu/probe_one.py benchmarks/solutions/qwen3_8b_rmsnorm/cute_dsl.json --modes off on \
      --timeout-s 60 > "$OUT/cute_judge.log" 2>&1
    grep "^== defences" "$OUT/cute_judge.log" ;;
  *) echo "unknown step $step" >&2; exit 2 ;;
esac
done
