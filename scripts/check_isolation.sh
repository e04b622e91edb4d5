#!/usr/bin/env bash
# Installs each package alone (its declared dependencies only) in a fresh environment and
# runs its own tests there: a missing dependency declaration fails here.
# `envs+extras` / `runs+extras` are the package with its optional extras (gymnax, envpool,
# brax; video, plot, wandb), so the tests that skip without them run against the extras'
# declared ranges too.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
packages=("$@")
[ ${#packages[@]} -eq 0 ] && packages=(envs envs+extras search agents runs runs+extras anakin sebulba)
for entry in "${packages[@]}"; do
  p="${entry%+extras}"
  extras=()
  [ "$entry" != "$p" ] && extras=(--all-extras)
  echo "== podracer-$entry alone"
  venv=".venv-isolated-$entry"
  UV_PROJECT_ENVIRONMENT="$venv" uv sync --locked --package "podracer-$p" "${extras[@]}" --quiet
  # With the extras, only the test files that skip without them (`importorskip`): the
  # plain entry before it ran the rest against the same code.
  tests=("packages/$p/tests")
  if [ "$entry" != "$p" ]; then mapfile -t tests < <(grep -l importorskip "packages/$p/tests/"*.py); fi
  # pytest and pytest-xdist come from the package's own dev group.
  rc=0
  UV_PROJECT_ENVIRONMENT="$venv" uv run --no-sync --package "podracer-$p" \
    pytest -q -n 2 --dist worksteal -p no:cacheprovider -m "not slow" "${tests[@]}" || rc=$?
  # pytest exits 5 when a package has no tests collected yet.
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then exit $rc; fi
done
