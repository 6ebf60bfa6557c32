#!/usr/bin/env bash
# Every GPU test file in a process of its own (a fault in one cannot poison the CUDA context of the others),
# logs under $OUT/tests/, a summary line per file on stdout.
#     OUT=/some/folder bash bench/gpu_tests_split.sh [test files...]
set -u
mkdir -p "${OUT:=gpu_out}/tests"
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
FILES=("$@")
[ ${#FILES[@]} -eq 0 ] && FILES=($(grep -l "mark.gpu" tests/test_*.py))
for f in "${FILES[@]}"; do
  name=$(basename "$f" .py)
  timeout --signal=INT --kill-after=10 "${FILE_TIMEOUT:-240}" "$PY" -m pytest -m gpu -q "$f" >"$OUT/tests/$name.log" 2>&1
  echo "$name: exit $? $(tail -n 1 "$OUT/tests/$name.log")"
done
