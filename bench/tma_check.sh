#!/bin/bash
# One H200 call for TMA staging (issue 12): its GPU tests and the dot tests (two processes, side by side), then
# the TMA on/off A/B and the matmul bench rows. Logs under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
(python3 -m pytest -m gpu -q -x tests/test_gpu_tma.py > $OUT/gpu_tma.log 2>&1; echo "tma rc $?" >> $OUT/gpu_tma.log) &
(python3 -m pytest -m gpu -q tests/test_gpu_dot.py > $OUT/gpu_dot.log 2>&1; echo "dot rc $?" >> $OUT/gpu_dot.log) &
wait
tail -5 $OUT/gpu_tma.log $OUT/gpu_dot.log
python3 bench/tma_ab.py --rounds 2 --out $OUT/tma_ab_on.json 2>&1 | tail -6
TRANSPILER_TMA=0 python3 bench/tma_ab.py --rounds 2 --out $OUT/tma_ab_off.json 2>&1 | tail -6
timeout 150 python3 bench/run.py --only matmul --rounds 2 --budget-s 120 --out $OUT/bench 2>&1 | tail -25
