#!/bin/bash
# One H200 call (issue 18, session 10): packed rows (analysis/packed_rows.py) against the default build
# (bench/switch_ab.py: the long layernorm rows and the rows the switch changes), its GPU tests, then ncu of both at
# layernorm fp16 4096x12288 and, time left, of two points 1-3% under Triton. Each step capped (seconds).
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
T0=$SECONDS
POINTS=${POINTS:-layernorm_float16_4096x12288,layernorm_bfloat16_4096x12288,layernorm_float16_16384x4096,layernorm_bfloat16_8192x8192,layernorm_float16_8192x8192,softmax_float16_8192x4096}
timeout "${AB_S:-56}" python3 bench/switch_ab.py --out "$OUT/ab" --variants default,packed_rows --points "$POINTS" \
    --rounds 2 --timeout 26 > "$OUT/ab.log" 2>&1
echo "ab rc $? $((SECONDS - T0)) s"; grep -v "Warning\|warn" "$OUT/ab.log" | cut -c1-300
T1=$SECONDS
timeout "${TEST_S:-30}" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_packed_rows.py -x \
    > "$OUT/tests.log" 2>&1
echo "tests rc $? $((SECONDS - T1)) s"; tail -n 15 "$OUT/tests.log" | cut -c1-300
T2=$SECONDS
for v in default packed_rows; do
  timeout "${NCU_S:-10}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
      --metrics "dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum" -k regex:layernorm_kernel \
      python3 bench/switch_ab.py --out "$OUT/ncu" --variant $v --profile --points layernorm_float16_4096x12288 \
      > "$OUT/ncu_$v.txt" 2>&1
  echo "ncu $v rc $?"; grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Block Limit Registers|dram__bytes|inst_executed" "$OUT/ncu_$v.txt" | head -12
done
echo "ncu $((SECONDS - T2)) s"
