#!/usr/bin/env bash
# One short H200 call for the derived backwards (issue 14): the GPU tests of the fused_mlp explanation and of
# the launch plan, then `bench/autodiff.py --quick` (layernorm row first). Caps in seconds: TEST_S, BENCH_S.
# Logs under $OUT/autodiff_check/, packed into $OUT/autodiff_check.tgz; the summary lines on stdout.
#     OUT=folder bash bench/autodiff_check.sh
set -u
mkdir -p "${OUT:=autodiff_out}/autodiff_check"
LOGS=$(cd "$OUT/autodiff_check" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/transpiler-autodiff-check}
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv,noheader >"$LOGS/gpu.txt" 2>&1
timeout "${TEST_S:-22}" "$PY" -m pytest -m gpu -q -n 6 -p no:cacheprovider tests/test_gpu_autodiff.py \
  -k "fused_mlp or fast_launch" >"$LOGS/tests.log" 2>&1
echo "tests: exit $? | $(tail -n 1 "$LOGS/tests.log")"
grep -E "^(FAILED|ERROR)|Error|assert" "$LOGS/tests.log" | head -n 12
timeout "${BENCH_S:-33}" "$PY" bench/autodiff.py --quick >"$LOGS/autodiff.log" 2>&1
echo "autodiff bench: exit $?"
cat "$LOGS/autodiff.log"
tar -czf "$OUT/autodiff_check.tgz" -C "$OUT" autodiff_check
