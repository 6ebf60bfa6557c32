#!/usr/bin/env bash
# Issue 12, session 10: one H200 call (bench/NOTES.md "Issue 12, session 10" has the predictions).
#   1. the GPU dot tests with the mma.sync whole-stage refill on, beside one cache-filling process per A/B setting;
#   2. A/B groups of bench/hopper_ab.py, each its own process, one after the other (each variant timed under its
#      own setting; a timing that builds anything is reported): REFILL (the whole-stage refill at the shapes that
#      take the mma.sync path on sm_90a), AUDIT (switches whose earlier A/B timed the default build under every
#      name), MMA (the mma.sync path forced at square shapes, what sm_80 gets);
#   3. ncu of 16x4096x14336 (ours in both refill settings, Triton's: same source and configuration);
#   4. if time is left, ncu SourceCounters of the causal attention D128 (ours and Triton's).
# Each step's cap is its own or what is left of DEADLINE_S, whichever is less. Logs: $OUT/s10.tar.gz.
#     OUT=/some/folder DEADLINE_S=170 bash bench/s10_hopper.sh      (from the tree to test)
set -u
mkdir -p "${OUT:=gpu_out}"; OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/s10; rm -rf $L; mkdir -p $L
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1 left=$(( ${DEADLINE_S:-170} - ($(date +%s) - T0) )); shift; [ "$left" -lt "$limit" ] && limit=$left
        if [ "$limit" -lt 5 ]; then echo "skipped (no time left): $*"; return 124; fi
        timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { tar -C /tmp -czf "$OUT/s10.tar.gz" s10; }
trap snap EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader

R=TRANSPILER_MMA_REFILL_READ_STAGE
declare -A VAR SHP
VAR[refill]="default=,refill=$R=1,refill192=$R=1+TRANSPILER_MMA_FRAGMENT_REGISTERS=192"
SHP[refill]="float16:16x8192x8192,bfloat16:16x8192x8192,float16:16x4096x14336,float16:32x8192x8192,float16:16x4096x14336@5"
VAR[audit]="default=,tiles0=TRANSPILER_WGMMA_TILES_PER_SM=0"
SHP[audit]="float16:4096x4096x4096,bfloat16:4096x4096x4096,float16:8192x8192x8192,float16:8192x8192x512"
VAR[mma]="mma=TRANSPILER_WGMMA=0,mma_refill192=TRANSPILER_WGMMA=0+$R=1+TRANSPILER_MMA_FRAGMENT_REGISTERS=192"
SHP[mma]="float16:4096x4096x4096,float16:2048x2048x2048"
I=TRANSPILER_TILE_IMMEDIATES     # the second call: ldmatrix offsets with immediates against all-XOR offsets
VAR[imm]="default=,xor=$I=0"
SHP[imm]="float16:16x4096x14336,float16:16x8192x8192,float16:32x8192x8192"
VAR[immsq]="mma=TRANSPILER_WGMMA=0,mma_xor=TRANSPILER_WGMMA=0+$I=0"
SHP[immsq]="float16:4096x4096x4096"
AB_GROUPS=${AB_GROUPS:-refill audit mma}

step "GPU dot tests with the refill on, beside one cache-filling process per setting"
( export $R=${TEST_REFILL:-1}; run ${TEST_S:-60} $PY -m pytest -m gpu -q -rf -p no:cacheprovider -n 4 tests/test_gpu_dot.py \
    tests/test_gpu_dot_dtypes.py >$L/test_refill.log 2>&1; echo "rc $?" >>$L/test_refill.log ) &
for g in $AB_GROUPS; do
  for v in $(echo "${VAR[$g]}" | tr ',' ' ') none; do
    ( run ${WARM_S:-60} $PY bench/hopper_ab.py --warm --variants "$v" --shapes "${SHP[$g]}" >"$L/warm_${g}_${v%%=*}.log" 2>&1
      echo "rc $? ($v)" >>"$L/warm_${g}_${v%%=*}.log" ) &
  done
done
[ "${SRC:-1}" = 1 ] && ( run ${WARM_S:-60} $PY bench/s9_hopper.py profile-attention float16:4,32,4096,128:causal >$L/warm_attention.log 2>&1
  echo "rc $?" >>$L/warm_attention.log ) &
wait
echo "tests (refill on): $(grep -h 'passed\|failed\|error' $L/test_refill.log | tail -n 3 | tr '\n' ' ') $(tail -n 1 $L/test_refill.log)"
for f in $L/warm_*.log; do echo "$(basename $f): $(grep -c '^built' $f) built, $(tail -n 1 $f)"; done
snap

ab() {
  local g=$1
  step "A/B $g (${VAR[$g]})"
  run ${AB_S:-40} $PY bench/hopper_ab.py --rounds "$2" --variants "${VAR[$g]}" --shapes "${SHP[$g]}" \
      --out $L/ab_$g.json >$L/ab_$g.log 2>&1
  echo "rc $?"; grep -v '^{' $L/ab_$g.log | tail -n 8
  snap
}
for g in ${AB_FIRST:-refill}; do ab $g 3; done

M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
for m in $(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}' | grep -xE \
    'dram__bytes_read|lts__t_bytes|smsp__inst_executed|sm__ctas_launched|sm__cycles_active|l1tex__data_pipe_lsu_wavefronts_mem_shared'); do
  M="$M,$m.sum,$m.max"
done
step "ncu 16x4096x14336 (metrics $M)"
run ${NCU_S:-40} ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
  --section LaunchStats --section MemoryWorkloadAnalysis --metrics "$M" -k regex:matmul_kernel --csv --page details \
  $PY bench/hopper_ab.py --profile ${NCU_SHAPES:-float16:16x4096x14336,float16:16x8192x8192} --variants "${NCU_VARIANTS:-default=,refill=$R=1}" \
  >$L/ncu_skinny.csv 2>$L/ncu_skinny.err
echo "rc $?"; tail -n 2 $L/ncu_skinny.err
$PY bench/ncu_summary.py $L/ncu_skinny.csv "${NCU_LABELS:-default@16x4096x14336,refill@16x4096x14336,triton@16x4096x14336,default@16x8192x8192,refill@16x8192x8192,triton@16x8192x8192}" \
  | tee $L/ncu_skinny.txt | cut -c1-420
snap

for g in ${AB_LATER:-audit mma}; do ab $g 2; done

[ "${SRC:-1}" = 1 ] || { step "done"; exit 0; }
step "ncu SourceCounters, causal attention fp16 B4 H32 S4096 D128 (ours, then Triton's)"
run ${SRC_S:-40} ncu --clock-control none --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  -k regex:attention -o $L/attn_src $PY bench/s9_hopper.py profile-attention float16:4,32,4096,128:causal \
  >$L/ncu_attn.log 2>&1
echo "rc $?"; tail -n 3 $L/ncu_attn.log
if [ -f $L/attn_src.ncu-rep ]; then
  run 20 ncu --import $L/attn_src.ncu-rep --csv --page details >$L/attn_details.csv 2>&1
  run 20 ncu --import $L/attn_src.ncu-rep --csv --page source --print-source sass >$L/attn_sass.csv 2>&1
  echo "details $(wc -l <$L/attn_details.csv) lines, source $(wc -l <$L/attn_sass.csv) lines"
  ls -la $L/attn_src.ncu-rep
  [ "$(stat -c %s $L/attn_src.ncu-rep)" -lt 15000000 ] && cp $L/attn_src.ncu-rep $OUT/
  mv $L/attn_src.ncu-rep /tmp/attn_src.ncu-rep    # kept out of the log archive
fi
step "done"
