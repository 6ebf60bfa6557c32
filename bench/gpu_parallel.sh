#!/usr/bin/env bash
# The whole GPU suite in one short device call, spread over the GPU host's cores (the H200 machine has 16):
#   - the tensor-core tests in a pytest session of their own (a fault there must not poison the others' context),
#   - every other GPU test file over JOBS pytest-xdist workers (each worker is its own process and CUDA context),
#   - beside them, when FUZZ_BUDGET > 0, the differential fuzzer against Triton (bench/fuzz.py).
# Logs and the fuzzer's summary under $OUT; one summary line per part on stdout.
#     OUT=folder JOBS=9 DOT_JOBS=3 FUZZ_BUDGET=150 LIMIT=330 bash bench/gpu_parallel.sh
set -u
mkdir -p "${OUT:=gpu_out}"
OUT=$(cd "$OUT" && pwd)
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LIMIT=${LIMIT:-330}            # seconds for each part; SIGINT first so pytest writes its summary
PER_TEST=${PER_TEST:-240}      # pytest-timeout per test
limited() { timeout --signal=INT --kill-after=15 "$LIMIT" "$@"; }

TENSOR_CORE_TESTS="tests/test_gpu_dot.py tests/test_gpu_dot_dtypes.py tests/test_gpu_attention.py tests/test_gpu_dot3d.py"
limited "$PY" -m pytest -m gpu -q -p no:cacheprovider -n "${DOT_JOBS:-3}" --timeout "$PER_TEST" \
  $TENSOR_CORE_TESTS >"$OUT/dot.log" 2>&1 &
dot=$!
limited "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider -n "${JOBS:-9}" --timeout "$PER_TEST" \
  tests $(for f in $TENSOR_CORE_TESTS; do echo --ignore "$f"; done) >"$OUT/rest.log" 2>&1 &
rest=$!
if [ "${FUZZ_BUDGET:-0}" -gt 0 ]; then
  limited "$PY" bench/fuzz.py --count "${FUZZ_COUNT:-6000}" --seed "${FUZZ_SEED:-100000}" --out "$OUT/fuzz" \
    --budget "$FUZZ_BUDGET" --jobs "${FUZZ_JOBS:-4}" >"$OUT/fuzz.log" 2>&1 &
  fuzz=$!
fi
wait $dot; echo "tensor-core tests: exit $? | $(tail -n 1 "$OUT/dot.log")"
wait $rest; echo "other GPU tests: exit $? | $(tail -n 1 "$OUT/rest.log")"
if [ -n "${fuzz:-}" ]; then wait $fuzz; echo "fuzzer: exit $? | $(tail -n 3 "$OUT/fuzz.log" | tr '\n' ' ')"; fi
grep -h -E "^(FAILED|ERROR)" "$OUT"/dot.log "$OUT"/rest.log | head -40
