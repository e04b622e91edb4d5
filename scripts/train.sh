#!/usr/bin/env bash
# Trains the default agent (the Podracer demo: Catch with Q(lambda) on Anakin) on a fresh
# machine: installs uv if needed, syncs the locked workspace, runs `anakin "$@"`.
#
# On an NVIDIA GPU: `scripts/train.sh --gpu [anakin flags]` (or PODRACER_CUDA=cuda12 /
# cuda13) also installs the locked jax CUDA wheels (the `cuda12` extra of podracer-anakin
# and podracer-sebulba); on a Cloud TPU VM, `scripts/train.sh --tpu [anakin flags]`
# installs jax with libtpu (the `tpu` extra). Syncs are `--inexact`: no script of the
# project removes them again.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.8"
export UV_PYTHON_DOWNLOADS=never
cuda="${PODRACER_CUDA:-}"
extras=()
case "${1:-}" in
  --gpu) cuda="${cuda:-cuda12}"; shift ;;
  --tpu) extras=(--extra tpu); shift ;;
esac
case "$cuda" in
  "") ;;
  cuda12 | cuda13) extras+=(--extra "$cuda") ;;
  *) echo "PODRACER_CUDA must be cuda12 or cuda13, got '$cuda'" >&2; exit 2 ;;
esac
uv sync --locked --inexact --all-packages "${extras[@]}" --quiet
exec uv run --no-sync anakin "$@"
