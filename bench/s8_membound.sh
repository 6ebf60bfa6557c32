#!/bin/bash
# One H200 call for issue 18, session 8 (branch s8-membound): the A/B of the row kernels' switches
# (bench/switch_ab.py, one process per variant), ncu of the 16-bit rows as launched and on half the warps, then the
# GPU tests of the row mechanisms (tests/test_gpu_membound.py, tests/test_gpu_row_ring.py, tests/test_gpu_program_packing.py)
# beside the examples' own GPU checks (examples/softmax.py, examples/layernorm.py). Each step capped (AB_S, NCU_S,
# TEST_S seconds; 0 skips it); logs packed into $OUT/s8_membound.tgz (the A/B's table, ncu's summary and the tests'
# last lines also printed).
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
L=$(mktemp -d)
trap 'tar czf "${OUT:-/tmp}/s8_membound.tgz" -C "$L" .' EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$L/gpu.txt" 2>&1
T0=$SECONDS
if [ "${AB_S:-50}" != 0 ]; then
  timeout "${AB_S:-50}" python3 bench/switch_ab.py --out "$L/ab" --rounds "${ROUNDS:-2}" --rep "${REP:-30}" \
      --variants "${VARIANTS:-default,launched_warps,warps_64,ring}" \
      --points "${POINTS:-softmax_float16_8192x4096,layernorm_float16_16384x4096,softmax_bfloat16_8192x4096}" \
      --timeout "${VARIANT_S:-12}" > "$L/ab.log" 2>&1
  echo "A/B $((SECONDS - T0)) s"; tail -n 40 "$L/ab.log"
fi
T1=$SECONDS
if [ "${NCU_S:-20}" != 0 ]; then
  timeout "${NCU_S:-20}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis --section InstructionStats \
      -k regex:"softmax_kernel|layernorm_kernel" python3 bench/switch_ab.py --out "$L/p" --variant launched_half_warps \
      --profile --points "${NCU_POINTS:-softmax_float16_8192x4096,layernorm_float16_16384x4096}" > "$L/ncu.txt" 2>&1
  echo "ncu $((SECONDS - T1)) s"
  grep -E "profile\] launch|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Issue Slots Busy|Issued Warp Per|Warp Cycles Per Issued|No Eligible" "$L/ncu.txt" | head -60
fi
T2=$SECONDS
if [ "${TEST_S:-35}" != 0 ]; then
  ( for ex in examples/softmax.py examples/layernorm.py; do echo "== $ex"; timeout 30 python3 "$ex" 2>&1 | tail -n 6; done ) \
      > "$L/examples.log" 2>&1 &
  ex=$!
  timeout "${TEST_S:-35}" python3 -m pytest -m gpu -q -p no:cacheprovider -n "${JOBS:-8}" \
      ${TEST_FILES:-tests/test_gpu_membound.py tests/test_gpu_row_ring.py tests/test_gpu_program_packing.py} \
      > "$L/tests.log" 2>&1
  echo "tests $((SECONDS - T2)) s: $(tail -n 1 "$L/tests.log")"; grep -E "^FAILED|^ERROR" "$L/tests.log" | head -20
  wait $ex; cat "$L/examples.log"
fi
