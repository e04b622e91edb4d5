#!/usr/bin/env bash
# Trains the default agent (the Podracer demo: Catch with Q(lambda) on Anakin) on a fresh
# machine: installs uv if needed, syncs the locked workspace, runs `anakin "$@"`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.8"
export UV_PYTHON_DOWNLOADS=never
uv sync --locked --all-packages --quiet
exec uv run --no-sync anakin "$@"
