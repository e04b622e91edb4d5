#!/usr/bin/env bash
# Packs the locked workspace as a folder of wheels for a machine with no package index (an
# offline Cloud TPU VM, say), then installs it there without one:
#
#   bash scripts/wheels.sh [--atari] [DIR]      # here, with uv: DIR (default wheels/)
#   . DIR/install.sh                            # there, from the checkout's root (~30 s)
#
# The target is CPython 3.11 on x86-64 Linux with jax, jaxlib (and libtpu), numpy and scipy
# already installed, as on a TPU VM image: those are left out, and so are envpool (over
# 100 MB with its Atari assets; `--atari` packs ale-py instead, 3 MB with its ROMs) and the
# optional extras (plot, video, wandb: install those where an index is reachable). DIR holds every other locked dependency, the project's own wheels
# and install.sh, which installs them under /tmp/podracer-site (no root needed) and puts
# the checkout's packages/*/src first on PYTHONPATH after the machine's own jax, so code
# edits need no repack (new dependencies do).
set -euo pipefail
cd "$(dirname "$0")/.."
atari=""
[ "${1:-}" = "--atari" ] && { atari=1; shift; }
dest=${1:-wheels}
command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv>=0.8"
rm -rf "$dest"; mkdir -p "$dest"
platform=(--only-binary=:all: --no-deps --python-version 3.11 --implementation cp --platform any)
for tag in manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 \
  manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
  platform+=(--platform "${tag}_x86_64")
done
requirements="$dest/requirements.txt"
# What the machine has (jax and its numerics) and what is too big to travel stay out.
# The packages' default dependencies (no optional extras: rliable, for one, has no wheel),
# plus ale-py with --atari.
uv export --locked --all-packages --no-hashes --no-emit-workspace --no-dev --no-editable -q \
  ${atari:+--extra atari} \
  | grep -vE "^#|^ |win32|>= '3.12'" | sed 's/ ;.*//' \
  | grep -vE "^(jax|jaxlib|libtpu|numpy|scipy|ml-dtypes|opt-einsum|envpool[a-z_-]*)==" > "$requirements"
python3 -m pip download -q "${platform[@]}" -d "$dest" -r "$requirements"
uv build --all-packages --wheel -q -o "$dest"
cat > "$dest/install.sh" <<'INSTALL'
# Sourced from the checkout's root on the target machine: . <wheels>/install.sh
_wheels=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_site=${PODRACER_SITE:-/tmp/podracer-site}
PIP_CONFIG_FILE=/dev/null python3 -m pip install --isolated -q --no-index --no-deps --no-compile \
  --no-cache-dir --upgrade --target "$_site" "$_wheels"/*.whl || return 1
_src=$(ls -d "$PWD"/packages/*/src 2>/dev/null | tr '\n' ':')
export PYTHONPATH=${PYTHONPATH:-}:${_src}${_site} PATH=$_site/bin:$PATH
python3 -c "import jax, podracer.anakin; print('podracer ready:', jax.__version__, jax.devices())"
INSTALL
echo "$dest: $(ls "$dest"/*.whl | wc -l) wheels, $(du -sh "$dest" | cut -f1); there: . $dest/install.sh"
