#!/usr/bin/env bash
# The sanitizer sweep in one command (H200): memcheck, racecheck, synccheck and initcheck over every example and
# every GPU feature / unseen kernel case, a summary table in $OUT/sanitize/summary.md. See bench/sanitize.py.
#     OUT=folder bash bench/sanitize.sh [--tools ...] [--groups ...] [--timeout s] [--jobs n] [--budget s]
# One H200 device call of at most 400 s (16 cores): --jobs 16 --budget 330 --timeout 100.
set -u
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" bench/sanitize.py --out "${OUT:-sanitize_out}" "$@"
