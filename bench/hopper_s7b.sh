#!/usr/bin/env bash
# Session 7's check of analysis/residency.py on the H200: the dot and TMA GPU tests (each a process of its own)
# while the A/B's variants compile, then bench/hopper_ab.py: the branch's default (2 programs per SM for the
# 128 x 128 matmul) against TRANSPILER_WGMMA_TILES_PER_SM=0 (3, as before), Triton and cuBLAS.
#     OUT=/some/folder bash bench/hopper_s7b.sh      (from the branch's root)
set -u
mkdir -p "${OUT:=gpu_out}"; OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton_cache TRANSPILER_CACHE_DIR=/tmp/tp_new
L=/tmp/s7blogs; rm -rf $L; mkdir -p $L
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1; shift; timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { tar -C /tmp -czf "$OUT/logs.tar.gz" s7blogs; }
trap snap EXIT
V=${VARIANTS:-default=,tiles0=TRANSPILER_WGMMA_TILES_PER_SM=0}
S=${SHAPES:-float16:4096x4096x4096,bfloat16:4096x4096x4096,float16:8192x8192x8192,float16:2048x2048x2048,float16:1024x1024x1024,float16:8192x8192x512}
step "GPU tests with the A/B's variants compiling"
i=0
IFS=';' read -ra entries <<<"${TESTS:-tests/test_gpu_dot.py -k case; tests/test_gpu_dot.py -k 'not case'; tests/test_gpu_tma.py}"
for t in "${entries[@]}"; do
  i=$((i + 1))
  ( eval run "${TEST_S:-60}" $PY -m pytest -m gpu -q -rf -p no:cacheprovider $t >$L/test_$i.log 2>&1; echo "rc $? ($t)" >>$L/test_$i.log ) &
done
j=0
for v in $(echo "$V" | tr ',' ' ') none; do
  j=$((j + 1))
  ( run "${WARM_S:-60}" $PY bench/hopper_ab.py --warm --variants "$v" --shapes "$S" >$L/warm_$j.log 2>&1; echo "rc $? ($v)" >>$L/warm_$j.log ) &
done
wait
for k in $(seq 1 $i); do echo "test_$k: $(grep -h '^FAILED\|passed\|failed\|error' $L/test_$k.log | tail -n 4 | tr '\n' ' ') $(tail -n 1 $L/test_$k.log)"; done
for k in $(seq 1 $j); do echo "warm_$k: $(tail -n 1 $L/warm_$k.log)"; done
snap
step "A/B ($V)"
run "${AB_S:-50}" $PY bench/hopper_ab.py --rounds "${ROUNDS:-2}" --variants "$V" --shapes "$S" --out $L/ab.json >$L/ab.log 2>&1
echo "rc $?"; grep -v '^{' $L/ab.log | tail -n 12
step "done"
