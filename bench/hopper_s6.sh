#!/usr/bin/env bash
# One H200 call for the TMA small-shape question (issue 12): a correctness pre-check of the default TMA ring, the
# matmul A/B of code-generation settings against Triton and cuBLAS (bench/hopper_ab.py), ncu of ours and
# Triton at 2048^3 and 1024^3 (bench/ncu_summary.py), then the tensor-core GPU tests (each file in processes of
# its own, in parallel) with the SASS of ours and Triton's (bench/hopper_sass.py). Logs in $OUT/logs.tar.gz.
#     OUT=/some/folder VARIANTS=default=,s2=TRANSPILER_TMA_REFILL_AFTER_WAIT=0,cp_async=TRANSPILER_TMA=0 bash bench/hopper_s6.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/hopper_logs; rm -rf $L; mkdir -p $L
V=${VARIANTS:-default=,s2=TRANSPILER_TMA_REFILL_AFTER_WAIT=0,cp_async=TRANSPILER_TMA=0}
S=${SHAPES:-float16:1024x1024x1024,bfloat16:1024x1024x1024,float16:2048x2048x2048,float16:4096x4096x4096,float16:8192x8192x512,float16:16x8192x8192}
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1; shift; timeout --signal=INT --kill-after=5 "$limit" "$@"; }
finish() { tar -C /tmp -czf "$OUT/logs.tar.gz" hopper_logs; echo "== done (t=$(( $(date +%s) - T0 ))s)"; }
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader

step "pre-check: the default variant at 1000^3 (edge tiles on cp.async, the rest on TMA) against torch"
run "${PRE_S:-60}" $PY bench/hopper_ab.py --profile float16:1000x1000x1000 --variants default= >$L/precheck.log 2>&1
rc=$?; echo "rc $rc: $(tail -n 1 $L/precheck.log)"
if [ $rc -ne 0 ]; then V=$(echo "$V" | sed 's/^default=,//'); echo "default variant dropped: $V"; fi

step "A/B ($V)"
run "${AB_S:-150}" $PY bench/hopper_ab.py --rounds "${ROUNDS:-2}" --variants "$V" --shapes "$S" --out $L/ab.json >$L/ab.log 2>&1
echo "rc $?"; grep -v '^{' $L/ab.log | tail -n 12; grep host_us $L/ab.log | sed 's/.*host_us_per_launch/host us per launch/' | head -3

if [ "${NCU:-1}" = 1 ]; then
  step "ncu, 2048^3 and 1024^3 fp16, each variant and Triton"
  labels=""; for sh in 2048 1024; do for v in $(echo "$V" | tr ',' '\n' | cut -d= -f1) triton; do labels="$labels,$v@$sh"; done; done
  run "${NCU_S:-90}" ncu --clock-control none --section SpeedOfLight --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" -k regex:matmul_kernel --csv --page details \
    $PY bench/hopper_ab.py --profile float16:2048x2048x2048,float16:1024x1024x1024 --variants "$V" >$L/ncu.csv 2>$L/ncu.err
  echo "rc $?"; tail -n 3 $L/ncu.err
  $PY bench/ncu_summary.py $L/ncu.csv "${labels#,}" | tee $L/ncu_summary.txt | cut -c1-400
fi

step "GPU tests (each file in processes of its own, in parallel) and SASS"
# one pytest process per entry (';'-separated): a file, then any options (a fault poisons only its own process)
tests=${TESTS:-"tests/test_gpu_dot.py -k case; tests/test_gpu_dot.py -k 'not case'; tests/test_gpu_dot_dtypes.py; tests/test_gpu_tma.py; tests/test_gpu_attention.py"}
i=0
IFS=';' read -ra entries <<<"$tests"
for t in "${entries[@]}"; do
  i=$((i + 1))
  ( eval run "${TEST_S:-100}" $PY -m pytest -m gpu -q -rf -p no:cacheprovider $t >$L/test_$i.log 2>&1; echo "rc $? ($t)" >>$L/test_$i.log ) &
done
run 60 $PY bench/hopper_sass.py --dir $L/sass --variants "$V" >$L/sass.log 2>&1
wait
for j in $(seq 1 $i); do echo "test_$j: $(grep -h '^FAILED\|passed\|failed\|error' $L/test_$j.log | tail -n 4 | tr '\n' ' ') $(tail -n 1 $L/test_$j.log)"; done
cut -c1-300 $L/sass.log
