#!/usr/bin/env bash
# The project's GPU test suite on the lent GPU, in parallel shards (correctness, not timing, is
# under test here, so the shards may share the GPU). Writes junit XML and logs under $OUT.
#   bash benchmarks/gpu/h200_tests.sh [SHARDS] [PYTEST ARGS...]
set -uo pipefail
source benchmarks/gpu/setup_device.sh
shards=${1:-4}; shift || true
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/nvidia-smi.csv"
python3 -c "import torch, triton, sys; print(sys.version.split()[0], torch.__version__, triton.__version__, torch.cuda.get_device_name())" \
  | tee "$OUT/versions.txt"
python3 -m pytest -m gpu --collect-only -q "$@" 2>/dev/null | grep '::' > "$OUT/gpu_tests.txt"
echo "$(wc -l < "$OUT/gpu_tests.txt") GPU tests in $shards shards"
split -n "r/$shards" -d "$OUT/gpu_tests.txt" "$OUT/shard_"
pids=(); names=()
for f in "$OUT"/shard_*; do
  n=${f##*_}
  # shellcheck disable=SC2046
  timeout 520 python3 -m pytest -m gpu -q -p no:cacheprovider --junitxml "$OUT/junit_$n.xml" $(cat "$f") \
    > "$OUT/pytest_$n.log" 2>&1 &
  pids+=($!); names+=("$n")
done
# A shard that runs past its timeout ends without pytest's summary: say so, with how far it got.
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?; n=${names[$i]}
  echo "== shard $n: rc $rc"
  if [ "$rc" = 124 ]; then
    done_tests=$(grep -E '^[.FEsxX]+ *(\[ *[0-9]+%\])?$' "$OUT/pytest_$n.log" | tr -cd '.FEsxX' | wc -c)
    echo "   killed at 520 s after $done_tests of $(wc -l < "$OUT/shard_$n") tests (pytest's progress dots):" \
      "rerun the tests past that point in its list, shard_$n in gpu_tests.tgz"
  fi
  tail -n 25 "$OUT/pytest_$n.log" | grep -E "passed|failed|error|FAILED|ERROR"
done
# Few files come back from the machine: pack the logs and reports into one archive.
tar -czf "$OUT/gpu_tests.tgz" -C "$OUT" $(cd "$OUT" && ls junit_*.xml pytest_*.log shard_* gpu_tests.txt) && \
  rm -f "$OUT"/junit_*.xml "$OUT"/pytest_*.log "$OUT"/shard_*
