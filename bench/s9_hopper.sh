#!/usr/bin/env bash
# Issue 12, session 9: one H200 call. Every matmul bench point (fp16, bf16; square and skinny) and the fp8 points
# of bench/s9_hopper.py, and the full attention set, ours against Triton (same source) and cuBLAS / SDPA; then, for
# each point below issue 12's targets, ncu of ours and Triton's (duration, SM and tensor-pipe use, DRAM, stalls,
# occupancy, registers) and the SASS of every cubin both compilers built. Logs and results: $OUT/s9.tar.gz.
#     OUT=/some/folder bash bench/s9_hopper.sh      (from the tree to test; BENCH_S caps the bench's seconds)
set -u
mkdir -p "${OUT:=gpu_out}"; OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/s9; rm -rf $L; mkdir -p $L
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
# Each step's cap is its own or what is left of DEADLINE_S (the whole call's seconds), whichever is less.
run() { local limit=$1 left=$(( ${DEADLINE_S:-165} - ($(date +%s) - T0) )); shift; [ "$left" -lt "$limit" ] && limit=$left
        if [ "$limit" -lt 5 ]; then echo "skipped (no time left): $*"; return 124; fi
        timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { tar -C /tmp -czf "$OUT/s9.tar.gz" s9; }
trap snap EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader

step "compile caches, one process per share"
for f in ours triton; do
  for i in 0 1; do
    ( run ${WARM_S:-45} $PY bench/s9_hopper.py warm --workload matmul --flavor $f --part $i/2 >$L/warm_mm_${f}_$i.log 2>&1 ) &
  done
  for i in 0 1 2; do
    ( run ${WARM_S:-45} $PY bench/s9_hopper.py warm --workload attention --flavor $f --part $i/3 >$L/warm_at_${f}_$i.log 2>&1 ) &
  done
done
wait
grep -c '^built' $L/warm_*.log; grep -h -i 'error' $L/warm_*.log | head -n 5

step "bench: matmul and attention, full point set"
run ${BENCH_S:-80} $PY bench/run.py --only matmul,attention --rounds 2 --budget-s ${BENCH_BUDGET_S:-70} --out $L/bench >$L/bench.log 2>&1
echo "rc $?"; grep -v '^copy' $L/bench.log | cut -c1-160 | tail -n 32
step "fp8"
run ${FP8_S:-25} $PY bench/s9_hopper.py fp8 --out $L/fp8.json >$L/fp8.log 2>&1; echo "rc $?"; cut -c1-400 $L/fp8.log
snap

step "select the misses"
$PY bench/s9_hopper.py select $L/bench/bench.json $L/fp8.json $L/misses.json >$L/select.txt 2>$L/select.err
cat $L/select.err $L/select.txt
MATMUL=$(sed -n 's/^MATMUL=//p' $L/select.txt); FP8=$(sed -n 's/^FP8=//p' $L/select.txt); ATTN=$(sed -n 's/^ATTN=//p' $L/select.txt)

# The tensor pipes' metric names as this ncu knows them (asked, not guessed: an unknown name fails the run).
PIPES=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}' | grep -E '^sm__(pipe_tensor_op_(hmma|gmma|imma|qmma)[a-z_]*_cycles_active|inst_executed_pipe_tensor_op_(hmma|gmma))$' | sort -u)
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for p in $PIPES; do M="$M,$p.avg.pct_of_peak_sustained_active"; done
echo "ncu metrics: $M"
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --metrics $M --csv --page details"
if [ -n "$MATMUL" ]; then
  step "ncu matmul ($MATMUL)"
  run ${NCU_S:-35} $NCU -k regex:matmul_kernel $PY bench/hopper_ab.py --profile "$MATMUL" --variants default= >$L/ncu_mm.csv 2>$L/ncu_mm.err
  echo "rc $?"; tail -n 2 $L/ncu_mm.err
  labels=""; for sh in $(echo "$MATMUL" | tr ',' ' '); do labels="$labels,ours@$sh,triton@$sh"; done
  $PY bench/ncu_summary.py $L/ncu_mm.csv "${labels#,}" | tee $L/ncu_mm.txt | cut -c1-400
  snap
fi
if [ "$FP8" = 1 ]; then
  step "ncu fp8"
  run ${NCU_S:-35} $NCU -k regex:matmul_kernel $PY bench/s9_hopper.py fp8 --profile >$L/ncu_fp8.csv 2>$L/ncu_fp8.err
  echo "rc $?"; tail -n 2 $L/ncu_fp8.err
  $PY bench/ncu_summary.py $L/ncu_fp8.csv "triton@fp8-4096,ours@fp8-4096,triton@fp8-8192,ours@fp8-8192" | tee $L/ncu_fp8.txt | cut -c1-400
  snap
fi
if [ -n "$ATTN" ]; then
  step "ncu attention ($ATTN)"
  run ${NCU_S:-35} $NCU -k regex:attention_kernel $PY bench/s9_hopper.py profile-attention $ATTN >$L/ncu_at.csv 2>$L/ncu_at.err
  echo "rc $?"; tail -n 2 $L/ncu_at.err
  labels=""; for p in $(echo "$ATTN" | tr ',' '.'); do labels="$labels,ours@$p,triton@$p"; done   # a point's commas are not the labels' separator
  $PY bench/ncu_summary.py $L/ncu_at.csv "${labels#,}" | tee $L/ncu_at.txt | cut -c1-400
  snap
fi
step "the skinny points again, 3 interleaved rounds and back-to-back host time (their spread between calls)"
run ${SKINNY_S:-20} $PY bench/hopper_ab.py --shapes float16:16x8192x8192,bfloat16:16x8192x8192 --rounds 3 --variants default= --out $L/skinny.json >$L/skinny.log 2>&1
echo "rc $?"; grep -v '^{' $L/skinny.log | tail -n 4
snap
step "SASS of every cubin in both caches"
run 20 $PY bench/s9_hopper.py sass $L/sass >$L/sass.log 2>&1; cut -c1-200 $L/sass.log | head -n 40
step "done"
