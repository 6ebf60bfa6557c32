#!/bin/bash
# Third H200 call for TMA staging: the final defaults (TMA, in flight from 4 stages, tensor maps prefetched) in
# the matmul bench (each point checked against torch), and TMA on/off at 1024³ and 2048³. Logs under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
S=float16:1024,bfloat16:1024,float16:2048
python3 bench/tma_ab.py --rounds 3 --shapes $S --out $OUT/ab_small_on.json 2>&1 | tail -n 3
TRANSPILER_TMA=0 python3 bench/tma_ab.py --rounds 3 --shapes $S --out $OUT/ab_small_off.json 2>&1 | tail -n 3
timeout 100 python3 bench/run.py --only matmul --rounds 2 --budget-s 70 --out $OUT/bench 2>&1 | tail -n 18
