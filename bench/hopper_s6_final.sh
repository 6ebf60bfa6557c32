#!/usr/bin/env bash
# The closing H200 call of issue 12's small-shape work: the tensor-core GPU tests (each entry a process of its own)
# while one process per setting fills the compile caches, then the matmul A/B of settings at the 12 bench
# points against Triton and cuBLAS (bench/hopper_ab.py), then ncu at 1024^3 and 2048^3. Logs in $OUT/logs.tar.gz.
#     OUT=/some/folder [VARIANTS=...] [SHAPES=...] [TESTS='file opts; file opts'] bash bench/hopper_s6_final.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/hopper_logs; rm -rf $L; mkdir -p $L
V=${VARIANTS:-default=,no_stmatrix=TRANSPILER_STMATRIX=0,cp_async=TRANSPILER_TMA=0}
S=${SHAPES:-}
if [ -z "$S" ]; then
  for d in float16 bfloat16; do for s in 1024x1024x1024 2048x2048x2048 4096x4096x4096 8192x8192x8192 8192x8192x512 16x8192x8192; do S="$S,$d:$s"; done; done
  S=${S#,}
fi
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1; shift; timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { tar -C /tmp -czf "$OUT/logs.tar.gz" hopper_logs; }     # after each step: a call cut short keeps what ran
trap snap EXIT

step "GPU tests in parallel with one cache-filling process per setting"
tests=${TESTS:-"tests/test_gpu_dot.py -k case; tests/test_gpu_dot.py -k 'not case'; tests/test_gpu_dot_dtypes.py; tests/test_gpu_tma.py; tests/test_gpu_attention.py; tests/test_gpu_block_pointers.py"}
i=0
IFS=';' read -ra entries <<<"$tests"
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
for k in $(seq 1 $i); do echo "test_$k: $(grep -h '^FAILED\|passed\|failed\|error' $L/test_$k.log | tail -n 4 | tr '\n' ' ') $(tail -n 1 $L/test_$k.log)"; done
for k in $(seq 1 $j); do echo "warm_$k: $(grep -c '^built' $L/warm_$k.log) built, $(tail -n 1 $L/warm_$k.log)"; done

snap
step "A/B ($V)"
run "${AB_S:-120}" $PY bench/hopper_ab.py --rounds "${ROUNDS:-2}" --variants "$V" --shapes "$S" --out $L/ab.json >$L/ab.log 2>&1
echo "rc $?"; grep -v '^{' $L/ab.log | tail -n 14
grep -o '"shape": "[0-9x]*"\|host_us_per_launch": {[^}]*}' $L/ab.log | paste - - | head -n 4

snap
if [ "${NCU:-1}" = 1 ]; then
  step "ncu, 1024^3 and 2048^3 fp16"
  NV=${NCU_VARIANTS:-default=,no_stmatrix=TRANSPILER_STMATRIX=0,prefetch=TRANSPILER_TMA_PREFETCH=1}
  labels=""; for sh in 1024 2048; do for v in $(echo "$NV" | tr ',' '\n' | cut -d= -f1) triton; do labels="$labels,$v@$sh"; done; done
  run "${NCU_S:-60}" ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section Occupancy \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" -k regex:matmul_kernel --csv --page details \
    $PY bench/hopper_ab.py --profile float16:1024x1024x1024,float16:2048x2048x2048 --variants "$NV" >$L/ncu.csv 2>$L/ncu.err
  echo "rc $?"; tail -n 2 $L/ncu.err
  $PY bench/ncu_summary.py $L/ncu.csv "${labels#,}" | tee $L/ncu_summary.txt | cut -c1-330
fi
step "done"
