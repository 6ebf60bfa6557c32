#!/usr/bin/env bash
# bench/wgmma_ab.py under each setting of the warpgroup-MMA switches (FENCES="0 1" to vary the fence too),
# each process with its own cache folder.
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
for inflight in 1 0; do
  for fence in ${FENCES:-0}; do
    TRANSPILER_CACHE_DIR=/tmp/tp_ab_$inflight$fence TRANSPILER_WGMMA_IN_FLIGHT=$inflight TRANSPILER_WGMMA_CP_FENCE=$fence \
      timeout 90 "$PY" bench/wgmma_ab.py "$@" 2>&1 | grep -v "^$" | tail -n 6
  done
done
