#!/usr/bin/env bash
# The one command for a lent GPU: bash scripts/gpu_check.sh [--steps a,b] [--resume [DIR]] [--deadline-s S]
# Results under $OUT (summary.txt, steps.json, tests.csv, bench.csv, ...), a short table printed last.
# Rehearsal without a GPU (CI, after make test): bash scripts/gpu_check.sh --rehearse
# Everything is in scripts/gpu_check.py (its docstring lists the steps); this picks the interpreter:
# $PYTHON, else the project's .venv (this machine, CI), else python3 (the GPU machine's torch).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${PYTHON:-}" ]; then
    py="$PYTHON"
elif [ -x .venv/bin/python ]; then
    py=.venv/bin/python
else
    py=python3
fi
exec "$py" scripts/gpu_check.py "$@"
