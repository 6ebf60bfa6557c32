#!/usr/bin/env bash
# Warpgroup MMA on the H200, in one command: the dot GPU tests (a process of their own; any test that dies with
# a CUDA fault is run again alone, so the others are not blamed), the matmul example, the matmul bench rows
# against Triton and cuBLAS, tile configurations for both (bench/matmul_twins_configs.py), and the HGMMA count of the example's SASS.
#     OUT=/some/folder bash bench/hopper_check.sh
# Set TRANSPILER_WGMMA=0 to run the same steps on mma.sync.
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export PYTHONUNBUFFERED=1
run() { local limit=$1; shift; timeout --signal=INT --kill-after=10 "$limit" "$@"; }

echo "== dot GPU tests"
run "${DOT_TIMEOUT:-200}" "$PY" -m pytest -m gpu -q -rf tests/test_gpu_dot.py >"$OUT/tests_dot.log" 2>&1
echo "exit $? $(tail -n 1 "$OUT/tests_dot.log")"
if grep -q "CUDA_ERROR\|illegal\|cudaError" "$OUT/tests_dot.log"; then
  echo "== a CUDA fault: the failed tests one by one"
  for t in $(grep "^FAILED" "$OUT/tests_dot.log" | awk '{print $2}' | head -n "${ALONE_MAX:-12}"); do
    run 60 "$PY" -m pytest -m gpu -q "$t" >"$OUT/alone.log" 2>&1
    echo "$t: $(tail -n 1 "$OUT/alone.log")"
  done
fi
grep "^FAILED\|Error\|error" "$OUT/tests_dot.log" | head -n 20


echo "== A/B of the warpgroup-MMA switches (bench/wgmma_ab.sh)"
run "${AB_TIMEOUT:-200}" bash bench/wgmma_ab.sh >"$OUT/ab.log" 2>&1
cat "$OUT/ab.log" | cut -c1-200

echo "== tile configurations, ours and Triton on the same source"
run "${CONFIG_TIMEOUT:-150}" "$PY" bench/matmul_twins_configs.py >"$OUT/configs.log" 2>&1
tail -n 16 "$OUT/configs.log"

echo "== bench matmul rows"
run "${BENCH_TIMEOUT:-240}" "$PY" bench/run.py --only matmul --rounds 1 --out "$OUT/bench" >"$OUT/bench.log" 2>&1
tail -n 22 "$OUT/bench.log"
