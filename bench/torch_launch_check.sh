#!/usr/bin/env bash
# The H200 batch of issue 16, items 2 and 5, in one command (about 100 s warm):
#
#     OUT=/some/folder bash bench/torch_launch_check.sh
#
#   1. bench/launch_path.py: each step of a launch, each candidate driver binding bare and each launch plan as a
#      whole launch, side by side                                  -> $OUT/launch_path.log
#   2. bench/launch_overhead.py: ours / torch custom op / Triton / cupy.RawKernel / torch.mul in one run
#                                                                  -> $OUT/launch_overhead.{log,json}
#   3. tests/test_gpu_torch.py: custom ops under inductor, CUDA graphs, reduce-overhead -> $OUT/tests_torch.log
#   4. the launch tests on the real driver (the ex plan): tests/test_gpu_launch_args.py, test_gpu_runtime.py
#      (not its new-process tests)                                 -> $OUT/tests_launch.log
# Each step runs under its own limit, and even when an earlier one failed. Expects PYTHONPATH to make
# `import transpiler` work (and libcst importable).
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/transpiler-torch-launch-cache}
step() {            # step LIMIT_S LOG CMD...
  local limit=$1 log=$2
  shift 2
  echo "== $* (limit ${limit}s)"
  timeout -s INT "$limit" "$@" > "$OUT/$log" 2>&1
  echo "   exit $?"
  tail -n 40 "$OUT/$log"
}
"$PY" -c "import torch, cupy; print('torch', torch.__version__, 'cupy', cupy.__version__, torch.cuda.get_device_name())"
"$PY" -c "from cuda.bindings import driver; print('cuda.bindings importable')" 2>&1 | tail -n 1
step "${PATH_TIMEOUT:-30}" launch_path.log "$PY" bench/launch_path.py
step "${OVERHEAD_TIMEOUT:-30}" launch_overhead.log "$PY" bench/launch_overhead.py --out "$OUT"
step "${TORCH_TESTS_TIMEOUT:-80}" tests_torch.log "$PY" -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_torch.py
step "${LAUNCH_TESTS_TIMEOUT:-40}" tests_launch.log "$PY" -m pytest -m gpu -q -x -p no:cacheprovider \
    -k "not new_process" tests/test_gpu_launch_args.py tests/test_gpu_runtime.py
