#!/bin/bash
# One H200 call for issue 18, session 9 (branch s9-membound): the memory-bound bench in full (bench/run.py, the five
# workloads of the issue's geomean, 2 rounds, each point's same-bytes copy: o/cpB), then for the points that miss
# a target (read from that run's bench.json) what their time is made of (bench/membound_probe.py --time: do_bench
# against a read-flushed call, an unflushed call, 40 calls back to back and a CUDA graph of 40; ours, Triton and
# two copies of the same bytes), then ncu of ours, Triton and a plain copy kernel of the same bytes at those points
# (DRAM throughput and bytes, occupancy, registers, duration, stall reasons; bench/ncu_summary.py).
# Each step capped (BENCH_S, PROBE_S, NCU_S seconds; 0 skips it); logs packed into $OUT/s9_membound.tgz.
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
L=$(mktemp -d)
trap 'tar czf "${OUT:-/tmp}/s9_membound.tgz" -C "$L" .' EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$L/gpu.txt" 2>&1
cat "$L/gpu.txt"
T0=$SECONDS
if [ "${BENCH_S:-70}" != 0 ]; then
  timeout "${BENCH_S:-70}" python3 bench/run.py --only "${WORKLOADS:-softmax,layernorm,argmax,copy2d,transpose}" \
      --rounds "${ROUNDS:-2}" --budget-s "${BUDGET_S:-56}" --out "$L/bench" > "$L/bench.log" 2>&1
  echo "bench $((SECONDS - T0)) s"
  sed -n '/^workload /,$p' "$L/bench.log" | grep -v "^matmul\|^attention"
fi
T1=$SECONDS
if [ "${PROBE_S:-30}" != 0 ] && [ -f "$L/bench/bench.json" ]; then
  timeout "${PROBE_S:-30}" python3 bench/membound_probe.py --bench "$L/bench/bench.json" --out "$L" --time \
      --limit "${LIMIT:-6}" --extra "${EXTRA:-}" > "$L/probe.log" 2>&1
  echo "probe $((SECONDS - T1)) s"; cat "$L/probe.log" | cut -c1-400
fi
T2=$SECONDS
if [ "${NCU_S:-40}" != 0 ] && [ -f "$L/bench/bench.json" ]; then
  timeout "${NCU_S:-40}" ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis \
      --metrics "dram__bytes_read.sum,dram__bytes_write.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      -k regex:"softmax_kernel|layernorm_kernel|argmax_kernel|copy2d_kernel|transpose_kernel|plain_copy_kernel" \
      --csv --page details python3 bench/membound_probe.py --bench "$L/bench/bench.json" --profile \
      --limit "${NCU_LIMIT:-${LIMIT:-6}}" --extra "${EXTRA:-}" > "$L/ncu.csv" 2> "$L/ncu.err"
  echo "ncu rc $? $((SECONDS - T2)) s"; tail -n 3 "$L/ncu.err"
  labels=$(grep -o "\[profile\] .*" "$L/ncu.csv" | sed 's/\[profile\] //; s/: launched /@/; s/ /_/g' | paste -sd,)
  python3 bench/ncu_summary.py "$L/ncu.csv" "$labels" | tee "$L/ncu_summary.txt" | cut -c1-600
fi
