#!/usr/bin/env bash
# The project's GPU test suite on the lent GPU, in parallel shards (correctness, not timing, is
# under test here, so the shards may share the GPU). Writes junit XML and logs under $OUT.
#   bash benchmarks/gpu/h200_tests.sh [SHARDS] [PYTEST ARGS...]
#   bash benchmarks/gpu/h200_tests.sh rest
# Each shard gets SHARD_TIMEOUT_S (520 by default, inside a 600 s device call). The tests a killed
# shard never reached go to $OUT/rest.txt and /tmp/solforge-gpu-tests-rest.txt, which outlives the
# call on a warm machine, so the next call (`rest`) can run just those.
set -uo pipefail
source benchmarks/gpu/setup_device.sh
rest=/tmp/solforge-gpu-tests-rest.txt
if [ "${1:-}" = rest ]; then
  # An empty list must not reach pytest: with no paths it would run the whole GPU suite.
  if [ ! -s "$rest" ]; then echo "no tests left over: $rest is empty or missing"; exit 0; fi
  echo "$(wc -l < "$rest") tests left over from cut shards"
  # shellcheck disable=SC2046
  python3 -m pytest -m gpu -q -p no:cacheprovider -rA --junitxml "$OUT/junit_rest.xml" $(cat "$rest") \
    > "$OUT/rest.log" 2>&1
  rc=$?; tail -n 25 "$OUT/rest.log" | grep -E "passed|failed|error|skipped|FAILED|ERROR"; exit "$rc"
fi
shards=${1:-4}; shift || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" \
  | tee "$OUT/versions.txt"
python3 -m pytest -m gpu --collect-only -q "$@" 2>/dev/null | grep '::' > "$OUT/gpu_tests.txt"
echo "$(wc -l < "$OUT/gpu_tests.txt") GPU tests in $shards shards"
split -n "r/$shards" -d "$OUT/gpu_tests.txt" "$OUT/shard_"
limit=${SHARD_TIMEOUT_S:-520}
: > "$rest"
pids=(); names=()
for f in "$OUT"/shard_*; do
  n=${f##*_}
  # shellcheck disable=SC2046
  timeout "$limit" python3 -m pytest -m gpu -q -p no:cacheprovider --junitxml "$OUT/junit_$n.xml" $(cat "$f") \
    > "$OUT/pytest_$n.log" 2>&1 &
  pids+=($!); names+=("$n")
done
# A shard that runs past its timeout ends without pytest's summary: say so, with how far it got.
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?; n=${names[$i]}
  echo "== shard $n: rc $rc"
  if [ "$rc" = 124 ]; then
    marks=$(grep -E '^[.FEsxX]+ *(\[ *[0-9]+%\])?$' "$OUT/pytest_$n.log" | tr -cd '.FEsxX')
    echo "   killed at $limit s after ${#marks} of $(wc -l < "$OUT/shard_$n") tests (pytest's progress marks)"
    # A killed shard prints no report: name its failures by their place in the shard's list.
    for ((k = 0; k < ${#marks}; k++)); do
      case ${marks:k:1} in F|E) echo "   ${marks:k:1} $(sed -n "$((k + 1))p" "$OUT/shard_$n")";; esac
    done
    tail -n "+$((${#marks} + 1))" "$OUT/shard_$n" >> "$rest"
  fi
  tail -n 25 "$OUT/pytest_$n.log" | grep -E "passed|failed|error|FAILED|ERROR"
done
if [ -s "$rest" ]; then
  cp "$rest" "$OUT/rest.txt"
  echo "$(wc -l < "$rest") tests never ran; on this machine, next call:" \
    "bash benchmarks/gpu/h200_tests.sh rest"
fi
# Few files come back from the machine: pack the logs and reports into one archive.
tar -czf "$OUT/gpu_tests.tgz" -C "$OUT" $(cd "$OUT" && ls junit_*.xml pytest_*.log shard_* gpu_tests.txt) && \
  rm -f "$OUT"/junit_*.xml "$OUT"/pytest_*.log "$OUT"/shard_*
