#!/usr/bin/env bash
# The accelerator figures in one prepared run (an H200 with 16 CPU cores was the target;
# about 14 minutes): raw output to benchmarks/results/device_<date>.log, curves beside it.
#
#   bash benchmarks/device.sh            # on the accelerator machine, from the repo root
#
# Uses the machine's own JAX with CUDA if `import jax` finds a GPU, else installs
# the locked jax[cuda12] (the cuda12 extras) into the workspace's venv first. Each block is capped with `timeout` so one
# slow block cannot eat the others' time.
set -uo pipefail
cd "$(dirname "$0")/.."
log="benchmarks/results/device_$(date +%Y%m%d).log"
mkdir -p benchmarks/results
py=python
if ! python -c "import jax, sys; sys.exit(jax.default_backend() != 'gpu')" 2>/dev/null; then
  command -v uv >/dev/null 2>&1 || pip install -q "uv>=0.8"
  uv sync --locked --inexact --all-packages --all-extras --no-extra cuda13 --quiet
  py=".venv/bin/python"
fi
run() {  # seconds, then the command
  local limit=$1; shift
  echo "### $* (limit ${limit}s)" | tee -a "$log"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
}
$py -c "import jax; print(jax.devices())" | tee -a "$log"
# Anakin: Catch and CartPole PPO at 1k / 16k / 131k envs (training and acting-only FPS).
run 150 $py benchmarks/anakin.py --quick --skip-devices --catch-envs 1024 16384 131072
# Sebulba: CPU actors (whole-rollout XLA loops, 16 cores) feeding the GPU learner.
run 120 $py benchmarks/sebulba_throughput.py --case cartpole --actor-backend cpu \
  --envs-per-thread 128 --actor-threads 8 --total-env-steps 4000000
run 150 $py benchmarks/sebulba_throughput.py --case breakout --actor-backend cpu \
  --envs-per-thread 64 --actor-threads 8 --total-env-steps 500000
# Pong-v5 learning, IMPALA and PQN, for the time left (curves with podracer plot).
run 200 uv run --no-sync sebulba --env envpool:Pong-v5 --agent impala --actor-backend cpu \
  --envs-per-thread 64 --actor-threads-per-device 8 --total-env-steps 50000000 \
  --max-wall-seconds 180 --run-name device-pong-impala --no-progress
run 200 uv run --no-sync sebulba --env envpool:Pong-v5 --agent pqn --actor-backend cpu \
  --pqn.torso nature_cnn --envs-per-thread 64 --actor-threads-per-device 8 \
  --rollout-length 32 --total-env-steps 50000000 --max-wall-seconds 180 \
  --run-name device-pong-pqn --no-progress
run 60 uv run --no-sync podracer plot runs/device-pong-impala runs/device-pong-pqn \
  --out benchmarks/results/device_pong
echo "log: $log"
