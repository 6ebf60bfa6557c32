#!/bin/bash
# Second H200 call for TMA staging: the wgmma group left in flight under TMA (the new default) against waiting
# for it (TRANSPILER_TMA_IN_FLIGHT=0), on the bench's config and on 128x128x64/3 stages; GPU tests under the new
# default first. Logs under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
(python3 -m pytest -m gpu -q -x tests/test_gpu_tma.py > $OUT/gpu_tma.log 2>&1; echo "tma rc $?" >> $OUT/gpu_tma.log) &
(python3 -m pytest -m gpu -q tests/test_gpu_dot.py > $OUT/gpu_dot.log 2>&1; echo "dot rc $?" >> $OUT/gpu_dot.log) &
wait
tail -n 3 $OUT/gpu_tma.log $OUT/gpu_dot.log
S=float16:1024,float16:4096,bfloat16:4096,float16:8192,bfloat16:8192
C64='{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 4, "num_stages": 3}'
python3 bench/tma_ab.py --rounds 2 --shapes $S --out $OUT/ab_flight_on.json 2>&1 | tail -n 5
TRANSPILER_TMA_IN_FLIGHT=0 python3 bench/tma_ab.py --rounds 2 --shapes $S --out $OUT/ab_flight_off.json 2>&1 | tail -n 5
python3 bench/tma_ab.py --rounds 2 --shapes float16:4096,bfloat16:8192 --config "$C64" --out $OUT/ab64_on.json 2>&1 | tail -n 2
TRANSPILER_TMA_IN_FLIGHT=0 python3 bench/tma_ab.py --rounds 2 --shapes float16:4096,bfloat16:8192 --config "$C64" --out $OUT/ab64_off.json 2>&1 | tail -n 2
