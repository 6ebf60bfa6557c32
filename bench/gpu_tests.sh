#!/usr/bin/env bash
# GPU correctness on the device machine: the gpu-marked tests and every example, logs under $OUT.
# Run from the repository root with PYTHONPATH set (see bench/README or the device notes in README.md).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/transpiler-cache}
python3 -m pytest -q -m gpu tests -p no:cacheprovider --ignore tests/test_gpu_dot.py 2>&1 | tee "$OUT/tests.log" | tail -40
# Tensor-core code in a process of its own: a fault there would poison the CUDA context of the others.
python3 -m pytest -q -m gpu tests/test_gpu_dot.py -p no:cacheprovider 2>&1 | tee "$OUT/tests_dot.log" | tail -40
for ex in examples/vector_add.py examples/softmax.py examples/layernorm.py examples/giou_loss.py examples/matmul.py; do
  echo "== $ex" | tee -a "$OUT/examples.log"
  timeout 300 python3 "$ex" 2>&1 | tail -25 | tee -a "$OUT/examples.log"
done
