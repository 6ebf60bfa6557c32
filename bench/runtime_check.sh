#!/usr/bin/env bash
# The runtime's GPU checks (issues 6 and 7) in one call on the H200 machine:
#
#     OUT=/some/folder bash bench/runtime_check.sh
#
#   1. tests of the launch path: CPU (faked GPU), one GPU (`gpu`), several GPUs (`multigpu`, skipped on one)
#                                                   -> $OUT/runtime_tests.log (the warm-start test prints its times)
#   2. python bench/launch_overhead.py               -> $OUT/launch_overhead.json (ours vs Triton vs RawKernel vs torch)
#   3. python bench/launch_path.py                   -> each step of one launch, alone
#   4. python bench/warm_start.py                    -> $OUT/warm_start.json (new process to first launch)
# Default limits 240 + 90 + 60 + 150 s. Expects PYTHONPATH to make `import transpiler` work, and libcst installed.
set -u
mkdir -p "${OUT:=runtime_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1

echo "== 1/4 runtime tests"
timeout --signal=INT 240 "$PY" -m pytest -q -s -p no:cacheprovider tests/test_runtime_launch.py \
  tests/test_gpu_runtime.py tests/test_multigpu_runtime.py >"$OUT/runtime_tests.log" 2>&1
echo "pytest exit $?"; grep -E "warm:|passed|failed|error" "$OUT/runtime_tests.log" | tail -15

echo "== 2/4 launch overhead"
timeout --signal=INT 90 "$PY" bench/launch_overhead.py --out "$OUT" 2>&1 | tail -12

echo "== 3/4 launch path, step by step"
timeout --signal=INT 60 "$PY" bench/launch_path.py 2>&1 | tail -12

echo "== 4/4 warm start"
timeout --signal=INT 150 "$PY" bench/warm_start.py --out "$OUT" 2>&1 | tail -12
