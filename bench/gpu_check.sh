#!/usr/bin/env bash
# GPU tests and benchmarks in one command, for the H200 machine:
#
#     OUT=/some/folder bash bench/gpu_check.sh
#
# Steps, each run even when an earlier one failed, each under its own time limit so that the whole fits in
# one 10-minute call (override the limits, or pass BENCH_ARGS="--quick" / "--only softmax", by environment):
#   1. python -m pytest -m gpu -q tests          -> $OUT/tests.log
#   2. python bench/run.py --out $OUT            -> $OUT/bench.json, bench.csv, bench.png; progress in bench.log
#   3. python bench/launch_overhead.py           -> $OUT/launch_overhead.json
#   4. python bench/compile_time.py              -> $OUT/compile_time.json
# Seven files in all. Stdout ends with the summaries and the benchmark table, the part a caller sees.
# Default limits: 100 + 300 + 45 + 110 s, under a 600 s call with room for start-up.
# Expects PYTHONPATH to make `import transpiler` work, and libcst installed.
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)  # absolute, before moving to the repository root
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
TESTS_TIMEOUT=${TESTS_TIMEOUT:-100}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-300}
LAUNCH_TIMEOUT=${LAUNCH_TIMEOUT:-45}
COMPILE_TIMEOUT=${COMPILE_TIMEOUT:-110}
BENCH_ARGS=${BENCH_ARGS:-}
LOG="$OUT/bench.log"

# run LIMIT_S CMD...: the command under a time limit; SIGINT first so Python unwinds and flushes its files.
run() {
  local limit=$1
  shift
  timeout --signal=INT --kill-after=15 "$limit" "$@"
}

echo "== 1/4 GPU tests (log: tests.log)"
run "$TESTS_TIMEOUT" "$PY" -m pytest -m gpu -q tests --ignore tests/test_gpu_dot.py >"$OUT/tests.log" 2>&1
echo "pytest exit $?"
# Tensor-core tests in a process of their own: a fault there would poison the CUDA context of the others.
run "$TESTS_TIMEOUT" "$PY" -m pytest -m gpu -q tests/test_gpu_dot.py >"$OUT/tests_dot.log" 2>&1
echo "pytest (dot) exit $?"

echo "== 2/4 benchmarks (progress: bench.log)"
# The budget stops new points early enough for the table and the plot to be written inside the limit.
# shellcheck disable=SC2086  # BENCH_ARGS is a list of options
run "$BENCH_TIMEOUT" "$PY" bench/run.py --out "$OUT" --budget-s $((BENCH_TIMEOUT - 45)) $BENCH_ARGS >"$LOG" 2>&1
echo "bench/run.py exit $?"

echo "== 3/4 launch overhead"
run "$LAUNCH_TIMEOUT" "$PY" bench/launch_overhead.py --out "$OUT" 2>&1 | tee -a "$LOG"
echo "bench/launch_overhead.py exit ${PIPESTATUS[0]}"

echo "== 4/4 compile time"
run "$COMPILE_TIMEOUT" "$PY" bench/compile_time.py --out "$OUT" 2>&1 | tee -a "$LOG"
echo "bench/compile_time.py exit ${PIPESTATUS[0]}"

echo
echo "== tests (last lines of tests.log)"
tail -n 5 "$OUT/tests.log"
tail -n 5 "$OUT/tests_dot.log"
echo
echo "== benchmark table (bench.json; progress and errors in bench.log)"
if [ -f "$OUT/bench.json" ]; then
  "$PY" bench/run.py --table --out "$OUT"  # also redraws bench.png, in case run.py was cut short
else
  echo "no bench.json: last lines of bench.log"
  tail -n 30 "$LOG"
fi
