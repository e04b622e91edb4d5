#!/usr/bin/env bash
# Runs the whole test suite on the locked workspace (the README's test command).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.8"
export UV_PYTHON_DOWNLOADS=never
uv sync --locked --all-packages --all-extras --quiet
uv run --no-sync pytest -n 2 --dist worksteal "$@"
