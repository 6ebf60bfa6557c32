#!/usr/bin/env bash
# One H200 call for tensor-core work (issue 12), every step optional through the environment:
#   1. GPU tests, one pytest process per TESTS entry (';'-separated: a file, then its options; a CUDA fault poisons
#      only its own process), in parallel with one process per A/B setting (and Triton's) filling the compile caches;
#   2. the matmul A/B of code-generation settings against Triton and cuBLAS (bench/hopper_ab.py: VARIANTS, SHAPES,
#      ROUNDS; a shape may end in @S for num_stages S);
#   3. NCU=1: ncu of NCU_VARIANTS and Triton at NCU_SHAPES (bench/ncu_summary.py);
#   4. SASS=1: the SASS of ours in each setting and Triton's (bench/hopper_sass.py, SASS_SHAPE).
# Each step has a time limit (TEST_S, WARM_S, AB_S, NCU_S); logs in $OUT/logs.tar.gz, written after each step so a
# call cut short keeps what ran. Run from the tree to test (e.g. `cd .dev_hopper`):
#     OUT=/some/folder VARIANTS=default=,old=TRANSPILER_X=0 SHAPES=float16:16x8192x8192 bash bench/hopper_call.sh
# (It replaces session 6's hopper_s6.sh, hopper_s6_ab.sh, hopper_s6_final.sh and session 7's hopper_s7b.sh, which
# were this script with their own defaults: bench/NOTES.md gives the settings each call used.)
set -u
mkdir -p "${OUT:=gpu_out}"; OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/hopper_logs; rm -rf $L; mkdir -p $L
V=${VARIANTS:-default=}
S=${SHAPES:-float16:4096x4096x4096,bfloat16:4096x4096x4096,float16:8192x8192x8192,float16:16x8192x8192}
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1; shift; timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { tar -C /tmp -czf "$OUT/logs.tar.gz" hopper_logs; }
trap snap EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader

step "GPU tests in parallel with one cache-filling process per setting"
i=0
IFS=';' read -ra entries <<<"${TESTS:-}"
for t in "${entries[@]}"; do
  i=$((i + 1))
  ( eval run "${TEST_S:-100}" $PY -m pytest -m gpu -q -rf -p no:cacheprovider $t >$L/test_$i.log 2>&1; echo "rc $? ($t)" >>$L/test_$i.log ) &
done
j=0
for v in $(echo "$V" | tr ',' ' ') none; do
  j=$((j + 1))
  ( run "${WARM_S:-100}" $PY bench/hopper_ab.py --warm --variants "$v" --shapes "$S" >$L/warm_$j.log 2>&1; echo "rc $? ($v)" >>$L/warm_$j.log ) &
done
wait
for k in $(seq 1 $i); do echo "test_$k: $(grep -h '^FAILED\|passed\|failed\|error' $L/test_$k.log | tail -n 6 | tr '\n' ' ') $(tail -n 1 $L/test_$k.log)"; done
for k in $(seq 1 $j); do echo "warm_$k: $(grep -c '^built' $L/warm_$k.log) built, $(tail -n 1 $L/warm_$k.log)"; done
snap

step "A/B ($V)"
run "${AB_S:-120}" $PY bench/hopper_ab.py --rounds "${ROUNDS:-2}" --variants "$V" --shapes "$S" --out $L/ab.json >$L/ab.log 2>&1
echo "rc $?"; grep -v '^{' $L/ab.log | tail -n 16
snap

if [ "${NCU:-0}" = 1 ]; then
  NV=${NCU_VARIANTS:-$V}; NS=${NCU_SHAPES:-float16:1024x1024x1024,float16:2048x2048x2048}
  step "ncu ($NS)"
  labels=""; for sh in $(echo "$NS" | tr ',' ' '); do for v in $(echo "$NV" | tr ',' '\n' | cut -d= -f1) triton; do labels="$labels,$v@${sh#*:}"; done; done
  run "${NCU_S:-60}" ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" -k regex:matmul_kernel --csv --page details \
    $PY bench/hopper_ab.py --profile "$NS" --variants "$NV" >$L/ncu.csv 2>$L/ncu.err
  echo "rc $?"; tail -n 2 $L/ncu.err
  $PY bench/ncu_summary.py $L/ncu.csv "${labels#,}" | tee $L/ncu_summary.txt | cut -c1-330
  snap
fi
if [ "${SASS:-0}" = 1 ]; then
  step "SASS (${SASS_SHAPE:-float16:2048x2048x2048})"
  run 60 $PY bench/hopper_sass.py --dir $L/sass --variants "$V" --shape "${SASS_SHAPE:-float16:2048x2048x2048}" >$L/sass.log 2>&1
  cut -c1-300 $L/sass.log
fi
step "done"
