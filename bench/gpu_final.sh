#!/usr/bin/env bash
# The lead's end-of-session H200 check in two device calls of at most 600 s each (a part per call):
#   PART=tests: bench/gpu_parallel.sh — every GPU test file, the fuzzer against Triton beside them;
#   PART=robust: the sanitizer sweep (four tools), the one-minute load test, and the bench (quick + matmul).
# Logs under $OUT/<part>; one summary line per step on stdout.
#     OUT=folder PART=tests bash bench/gpu_final.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
case "${PART:-tests}" in
  tests)
    OUT="$OUT/tests" LIMIT=${LIMIT:-330} PER_TEST=${PER_TEST:-200} JOBS=${JOBS:-9} DOT_JOBS=${DOT_JOBS:-3} \
      FUZZ_BUDGET=${FUZZ_BUDGET:-300} FUZZ_JOBS=${FUZZ_JOBS:-4} FUZZ_COUNT=${FUZZ_COUNT:-10000} \
      FUZZ_SEED=${FUZZ_SEED:-500000} bash bench/gpu_parallel.sh ;;
  robust)
    mkdir -p "$OUT/robust"
    OUT="$OUT/robust" timeout 150 bash bench/sanitize.sh --budget 110 --timeout 40 --jobs 16 >"$OUT/robust/sanitize.log" 2>&1
    echo "sanitizer sweep: exit $? | $(grep -m1 -A4 '^| kernels' "$OUT/robust/sanitize/summary.md" 2>/dev/null | tr '\n' ' ')"
    timeout 100 "$PY" bench/load_test.py --duration 60 --out "$OUT/robust" >"$OUT/robust/load.log" 2>&1
    echo "load test: exit $? | $(tail -n 2 "$OUT/robust/load.log" | tr '\n' ' ')"
    timeout 150 "$PY" bench/run.py --quick --out "$OUT/robust/bench" >"$OUT/robust/bench.log" 2>&1
    echo "bench quick: exit $?"
    timeout 120 "$PY" bench/run.py --only matmul --rounds 2 --budget-s 90 --out "$OUT/robust/matmul" \
      >"$OUT/robust/matmul.log" 2>&1
    echo "bench matmul: exit $?" ;;
esac
