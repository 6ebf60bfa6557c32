#!/bin/bash
# One H200 call for issue 18, session 7 (branch s7-membound): the A/B of the row ring (bench/ring_ab.py), its GPU
# tests (tests/test_gpu_row_ring.py, then tests/test_gpu_membound.py), then ncu of the ring and the register fold
# on two points. Each step capped (AB_S, TEST_S, NCU_S seconds; 0 skips it); logs packed into $OUT/s7_membound.tgz.
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
L=$(mktemp -d)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$L/gpu.txt" 2>&1
if [ "${AB_S:-50}" != 0 ]; then
  timeout "${AB_S:-50}" python3 bench/ring_ab.py --out "$L" --each "${EACH:-default,main}" --rounds "${ROUNDS:-2}" \
      --points "${POINTS:-all}" \
      > "$L/ab.log" 2>&1
  cat "$L/ab.log"
fi
if [ "${TEST_S:-35}" != 0 ]; then
  timeout "${TEST_S:-35}" python3 -m pytest -m gpu -q -p no:cacheprovider -k "${TESTS:-not nothing}" \
      ${TEST_FILES:-tests/test_gpu_row_ring.py tests/test_gpu_membound.py} > "$L/tests.log" 2>&1
  tail -n 15 "$L/tests.log"
fi
if [ "${NCU_S:-20}" != 0 ]; then
  timeout "${NCU_S:-20}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section MemoryWorkloadAnalysis -k regex:softmax_kernel python3 bench/row_loop_profile.py ${NCU_CASES:-ring regs} \
      > "$L/ncu.txt" 2>&1
  grep -E "row_loop=|DRAM Throughput|Achieved Occupancy|Duration|Warp Cycles Per Issued|Memory Throughput" "$L/ncu.txt" | head -40
fi
tar czf "$OUT/s7_membound.tgz" -C "$L" .
