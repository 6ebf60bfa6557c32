#!/usr/bin/env bash
# A shorter H200 call than hopper_s6.sh: %nsmid, the matmul A/B of settings (bench/hopper_ab.py) and the SASS of
# ours (default setting) and Triton's at 2048^3. Logs in $OUT/logs.tar.gz.
#     OUT=/some/folder VARIANTS=... SHAPES=... bash bench/hopper_s6_ab.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
export TRANSPILER_CACHE_DIR=${TRANSPILER_CACHE_DIR:-/tmp/tp_cache} TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/triton_cache}
L=/tmp/hopper_logs; rm -rf $L; mkdir -p $L
V=${VARIANTS:-default=,full_grid=TRANSPILER_TMA_FULL_GRID=1,cp_async=TRANSPILER_TMA=0}
S=${SHAPES:-float16:1024x1024x1024,bfloat16:1024x1024x1024,float16:1536x1536x1536,float16:2048x2048x2048,bfloat16:2048x2048x2048,float16:16x8192x8192}
trap 'tar -C /tmp -czf "$OUT/logs.tar.gz" hopper_logs' EXIT
$PY bench/nsmid_check.py
timeout -k 5 "${AB_S:-150}" $PY bench/hopper_ab.py --rounds "${ROUNDS:-3}" --variants "$V" --shapes "$S" --out $L/ab.json >$L/ab.log 2>&1
echo "rc $?"; grep -v '^{' $L/ab.log | tail -n 12
grep -o '"shape": "[0-9x]*"\|host_us_per_launch": {[^}]*}' $L/ab.log | paste - - | head -n 8
timeout -k 5 60 $PY bench/hopper_sass.py --dir $L/sass --variants default= >$L/sass.log 2>&1; cut -c1-300 $L/sass.log
