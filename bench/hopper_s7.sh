#!/usr/bin/env bash
# Session 7's H200 call for issue 12: the tensor-core GPU tests of the branch (each file a process of its own)
# while one process per source tree fills the compile caches, then bench/s7_ab.py on the branch (with the
# 2-programs-per-SM experiment) and on main (the before figures), each against Triton in the same process.
# Run from the repository root of main's checkout with the branch copied to $NEW (.dev_hopper).
#     OUT=/some/folder NEW=.dev_hopper bash .dev_hopper/bench/hopper_s7.sh
set -u
mkdir -p "${OUT:=gpu_out}"; OUT=$(cd "$OUT" && pwd)
ROOT=$(pwd); NEW=$(cd "${NEW:-.dev_hopper}" && pwd)
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/triton_cache
L=/tmp/s7logs; rm -rf $L; mkdir -p $L
T0=$(date +%s)
step() { echo "== $1 (t=$(( $(date +%s) - T0 ))s)"; }
run() { local limit=$1; shift; timeout --signal=INT --kill-after=5 "$limit" "$@"; }
snap() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >$L/smi.txt 2>&1; tar -C /tmp -czf "$OUT/logs.tar.gz" s7logs; }
trap snap EXIT
new() { ( cd "$NEW" && PYTHONPATH=/tmp/site:$NEW TRANSPILER_CACHE_DIR=/tmp/tp_new "$@" ); }
old() { ( cd "$ROOT" && PYTHONPATH=/tmp/site:$ROOT TRANSPILER_CACHE_DIR=/tmp/tp_old "$@" ); }

step "GPU tests (branch) with cache-filling processes"
tests=${TESTS:-"tests/test_gpu_fp_contraction.py; tests/test_gpu_attention.py; tests/test_gpu_dot.py -k case; tests/test_gpu_dot.py -k 'not case'; tests/test_gpu_tma.py; tests/test_gpu_dot_dtypes.py"}
i=0
IFS=';' read -ra entries <<<"$tests"
for t in "${entries[@]}"; do
  i=$((i + 1))
  ( eval new run "${TEST_S:-80}" $PY -m pytest -m gpu -q -rf -p no:cacheprovider $t >$L/test_$i.log 2>&1; echo "rc $? ($t)" >>$L/test_$i.log ) &
done
( new run "${WARM_S:-80}" $PY bench/s7_ab.py --label warm_new --rounds 0 --cap-programs 2 ${NEW_ARGS:-} >$L/warm_new.log 2>&1; echo "rc $?" >>$L/warm_new.log ) &
( old run "${WARM_S:-80}" $PY "$NEW/bench/s7_ab.py" --label warm_old --rounds 0 ${OLD_ARGS:-} >$L/warm_old.log 2>&1; echo "rc $?" >>$L/warm_old.log ) &
wait
for k in $(seq 1 $i); do echo "test_$k: $(grep -h '^FAILED\|passed\|failed\|error' $L/test_$k.log | tail -n 4 | tr '\n' ' ') $(tail -n 1 $L/test_$k.log)"; done
for w in new old; do echo "warm_$w: $(grep -c 'error' $L/warm_$w.log) checks, $(tail -n 1 $L/warm_$w.log)"; done
snap

step "bench, branch"
new run "${AB_S:-45}" $PY bench/s7_ab.py --label new --rounds "${ROUNDS:-2}" --cap-programs 2 ${NEW_ARGS:-} --out $L/ab_new.json >$L/ab_new.log 2>&1
echo "rc $?"; sed -n '/TFLOP\/s (median/,$p' $L/ab_new.log
snap
step "bench, main (before)"
old run "${AB_S:-45}" $PY "$NEW/bench/s7_ab.py" --label old --rounds "${ROUNDS:-2}" ${OLD_ARGS:-} --out $L/ab_old.json >$L/ab_old.log 2>&1
echo "rc $?"; sed -n '/TFLOP\/s (median/,$p' $L/ab_old.log
step "done"
