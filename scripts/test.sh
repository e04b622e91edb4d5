#!/usr/bin/env bash
# Runs the whole test suite on the locked workspace (the README's test command).
# Every extra but the accelerator wheels (`scripts/train.sh --gpu` / `--tpu` install
# those; `--inexact` keeps them if it did).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.8"
export UV_PYTHON_DOWNLOADS=never
uv sync --locked --inexact --all-packages --all-extras --no-extra cuda12 --no-extra cuda13 --no-extra tpu --quiet
uv run --no-sync pytest -n 2 --dist worksteal "$@"
