#!/bin/bash
# One H200 call for issue 18 (branch s6-membound), in the order that keeps timings clean: the A/B of program
# packing and the other switches (bench/switch_ab.py, SETS), the GPU tests of the new mappings (TESTS: a pytest
# -k selection), then ncu on the packed and unpacked softmax fp16 32768x1024. Each step is capped (AB_S, TEST_S,
# NCU_S seconds; 0 skips it); logs in $OUT.
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
if [ "${AB_S:-45}" != 0 ]; then
  timeout "${AB_S:-45}" python3 bench/switch_ab.py --out "$OUT" --rounds "${ROUNDS:-2}" --sets "${SETS:-packing,barriers}" \
      > "$OUT/ab.log" 2>&1
  cat "$OUT/ab.log"
fi
if [ "${TEST_S:-35}" != 0 ]; then
  timeout "${TEST_S:-35}" python3 -m pytest -m gpu -q -x -p no:cacheprovider -k "${TESTS:-not nothing}" \
      tests/test_gpu_program_packing.py tests/test_gpu_membound.py > "$OUT/tests.log" 2>&1
  tail -n 12 "$OUT/tests.log"
fi
if [ "${NCU_S:-20}" != 0 ]; then
  timeout "${NCU_S:-20}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
      -k regex:softmax_kernel python3 bench/row_loop_profile.py "32768x1024 packed" "32768x1024 unpacked" \
      > "$OUT/ncu.txt" 2>&1
  grep -E "blocks/SM|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Duration|Warp Cycles" "$OUT/ncu.txt" | head -40
fi
