#!/bin/bash
# The second H200 call of issue 18, session 9: bench/membound_probe.py --time on the first call's misses (its
# bench.json kept as bench/results/bench_s9_membound.json), the transpose points the first call's budget skipped,
# the A/B of num_warps doubled on the long layernorm rows (ours and Triton, bench/switch_ab.py), and ncu of the
# ragged 16-bit softmax (ours, Triton, a copy of the same bytes). Steps capped (PROBE_S, BENCH_S, AB_S, NCU_S).
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
L=$(mktemp -d)
trap 'tar czf "${OUT:-/tmp}/s9_membound2.tgz" -C "$L" .' EXIT
B=bench/results/bench_s9_membound.json
P="softmax/fp16/8192x4096;layernorm/fp16/16384x4096;argmax/fp16/32768x1024;layernorm/bf16/4096x12288;softmax/fp16/32768x4093 stride 4096;softmax/bf16/4096x4096"
T=$SECONDS
[ "${PROBE_S:-32}" != 0 ] && timeout "${PROBE_S:-32}" python3 bench/membound_probe.py --bench $B --out "$L" --time --limit 0 --extra "$P" > "$L/probe.log" 2>&1
echo "probe $((SECONDS - T)) s"; cut -c1-600 "$L/probe.log"; T=$SECONDS
[ "${BENCH_S:-14}" != 0 ] && timeout "${BENCH_S:-14}" python3 bench/run.py --only transpose --rounds 2 --out "$L/bench" > "$L/bench.log" 2>&1
echo "bench $((SECONDS - T)) s"; sed -n '/^workload /,$p' "$L/bench.log"; T=$SECONDS
[ "${AB_S:-30}" != 0 ] && timeout "${AB_S:-30}" python3 bench/switch_ab.py --out "$L/ab" --rounds 2 --rep 30 --variants default,double_warps \
    --points layernorm_float16_4096x12288 --timeout 10 > "$L/ab.log" 2>&1
echo "ab $((SECONDS - T)) s"; tail -n 14 "$L/ab.log"; T=$SECONDS
if [ "${NCU_S:-16}" != 0 ]; then
  timeout "${NCU_S:-16}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section InstructionStats \
      --metrics "dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      -k regex:"softmax_kernel|plain_copy_kernel" --csv --page details python3 bench/membound_probe.py --bench $B --profile \
      --limit 0 --extra "softmax/fp16/32768x4093 stride 4096" > "$L/ncu.csv" 2> "$L/ncu.err"
  echo "ncu rc $? $((SECONDS - T)) s"; tail -n 2 "$L/ncu.err"
  python3 bench/ncu_summary.py "$L/ncu.csv" "ragged@ours,ragged@triton,ragged@copy" | tee "$L/ncu_summary.txt" | cut -c1-900
fi
