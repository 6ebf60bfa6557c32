#!/usr/bin/env bash
# The lead's end-of-session H200 check in one device call (about 450 s):
#   1. at once: every GPU test file (bench/gpu_parallel.sh: tensor-core tests in their own session, the rest over
#      xdist workers) and the fuzzer against Triton beside them; then, with SAN_BUDGET > 0, the sanitizer sweep;
#   2. the one-minute load test;
#   3. the bench on a quiet GPU: matmul and attention against Triton and cuBLAS / SDPA, then the memory-bound
#      workloads' quick points;
#   4. the real-world kernels against Triton, where their folders were carried (.dev_rwcore/rw_cases, .dev_rwext).
# Logs under $OUT; one summary line per step on stdout. Budgets in seconds: TEST_LIMIT, FUZZ_BUDGET, SAN_BUDGET,
# BENCH_S, LOAD_S, AUTODIFF_S (0: skip); SAN_ARGS more sanitize.sh options (a rerun of flagged units: "--groups
# files,controls --only test_gpu_torch,planted"); COMPILE_TIME_KERNELS=attention adds the cold-compile comparison;
# LAUNCH_BENCH="command" the launch comparison. Everything under $OUT ends packed in $OUT/gpu_final.tgz.
#     OUT=folder bash bench/gpu_final.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TEST_LIMIT=${TEST_LIMIT:-230}

OUT="$OUT/tests" LIMIT=$TEST_LIMIT PER_TEST=${PER_TEST:-180} JOBS=${JOBS:-8} DOT_JOBS=${DOT_JOBS:-3} \
  FUZZ_BUDGET=${FUZZ_BUDGET:-200} FUZZ_JOBS=${FUZZ_JOBS:-3} FUZZ_COUNT=${FUZZ_COUNT:-10000} \
  FUZZ_SEED=${FUZZ_SEED:-500000} bash bench/gpu_parallel.sh >"$OUT/tests.txt" 2>&1 &
tests=$!
mkdir -p "$OUT/robust"
wait $tests; cat "$OUT/tests.txt"

# The sanitizer sweep wants the host's 16 cores for itself (beside the tests, 2026-12-01, it finished nothing):
# SAN_BUDGET=330 runs it after the tests, about 355 s (bench/sanitize.py), i.e. a call of its own in practice.
if [ "${SAN_BUDGET:-0}" -gt 0 ]; then
  OUT="$OUT/robust" timeout $((SAN_BUDGET + 60)) bash bench/sanitize.sh --jobs 16 --budget "$SAN_BUDGET" \
    --timeout 100 ${SAN_ARGS:-} >"$OUT/robust/sanitize.log" 2>&1
  echo "sanitizer sweep: exit $?"
  if [ -f "$OUT/robust/sanitize/summary.md" ]; then   # the kernels with any error or hazard, and the totals
    grep -v "| 0 | 0 | 0 | 0 |" "$OUT/robust/sanitize/summary.md"
  fi
fi

LOAD_S=${LOAD_S:-60}   # 0 skips the load test
if [ "$LOAD_S" -gt 0 ]; then
  timeout $((LOAD_S + 30)) "$PY" bench/load_test.py --duration "$LOAD_S" --out "$OUT/robust" >"$OUT/robust/load.log" 2>&1
  echo "load test: exit $? | $(tail -n 2 "$OUT/robust/load.log" | tr '\n' ' ')"
fi

BENCH_S=${BENCH_S:-120}   # 0 skips the bench
if [ "$BENCH_S" -gt 0 ]; then
  timeout $((BENCH_S + 30)) "$PY" bench/run.py --quick --only "${BENCH_ONLY:-matmul,attention,softmax,layernorm}" \
    --rounds 2 --budget-s "$BENCH_S" --out "$OUT/bench" >"$OUT/bench.log" 2>&1
  echo "bench: exit $? | $(grep -i geomean "$OUT/bench.log" | tr '\n' ' ')"
fi

if [ -f bench/autodiff.py ] && [ "${AUTODIFF_S:-40}" -gt 0 ]; then
  timeout ${AUTODIFF_S:-40} "$PY" bench/autodiff.py --quick >"$OUT/autodiff.log" 2>&1
  echo "autodiff bench: exit $? | $(tail -n 4 "$OUT/autodiff.log" | tr '\n' ' ')"
fi

if [ -n "${COMPILE_TIME_KERNELS:-}" ]; then   # e.g. attention: cold compile, ours vs Triton
  timeout 120 "$PY" bench/compile_time.py --kernels "$COMPILE_TIME_KERNELS" --out "$OUT/compile_time" \
    >"$OUT/compile_time.log" 2>&1
  echo "compile time: exit $? | $(tail -n 6 "$OUT/compile_time.log" | tr '\n' ' ')"
fi

if [ -n "${LAUNCH_BENCH:-}" ]; then   # launch host time: ours, CuPy RawKernel, Triton, torch side by side
  timeout 90 $LAUNCH_BENCH >"$OUT/launch.log" 2>&1
  echo "launch bench: exit $?"; tail -n 20 "$OUT/launch.log"
fi

# The real-world kernels collected in sessions (kept out of git: fetched code; carry the folders), under Triton and
# under us with the same inputs, one line per kernel and a total.
if [ -d .dev_rwcore/rw_cases ]; then
  timeout 90 "$PY" bench/rw_s7core_gpu.py --cases .dev_rwcore/rw_cases >"$OUT/realworld_core.log" 2>&1
  echo "real-world core kernels: exit $? | $(tail -n 1 "$OUT/realworld_core.log")"
fi
if [ -d .dev_rwext ]; then
  timeout 90 "$PY" bench/rw_s7ext_gpu.py --cases .dev_rwext --budget 80 >"$OUT/realworld_ext.log" 2>&1
  echo "real-world ext kernels: exit $? | $(tail -n 1 "$OUT/realworld_ext.log")"
fi

# $OUT returns at most 8 files: everything packed into one archive (the sanitizer's raw logs left out).
rm -rf "$OUT/robust/sanitize/logs" "$OUT/tests/fuzz/work"
(cd "$OUT" && tar czf /tmp/gpu_final.tgz --exclude=gpu_final.tgz . && find . -mindepth 1 -delete &&
  mv /tmp/gpu_final.tgz ./gpu_final.tgz)
