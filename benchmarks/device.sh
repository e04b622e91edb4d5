#!/usr/bin/env bash
# The accelerator figures in one prepared run (an H200 with 16 CPU cores was the target):
# raw output to benchmarks/results/device_<date>.log, curves beside it.
#
#   bash benchmarks/device.sh                  # every part, about 17 minutes
#   bash benchmarks/device.sh anakin sebulba   # some parts: anakin, throughput,
#                                            #   muzero, sebulba, atari, pong
#
# Uses the Python that already imports podracer with a GPU (PODRACER_PY, else `python`),
# else installs the locked jax[cuda12] (the cuda12 extras) into the workspace's venv first.
# Each block is capped with `timeout` so one slow block cannot eat the others' time.
set -uo pipefail
cd "$(dirname "$0")/.."
log="benchmarks/results/device_$(date +%Y%m%d).log"
mkdir -p benchmarks/results
py=${PODRACER_PY:-python}
if ! "$py" -c "import podracer.anakin, jax, sys; sys.exit(jax.default_backend() != 'gpu')" 2>/dev/null; then
  command -v uv >/dev/null 2>&1 || pip install -q "uv>=0.8"
  uv sync --locked --inexact --all-packages --all-extras --no-extra cuda13 --quiet
  py=".venv/bin/python"
fi
parts=${*:-anakin sebulba atari pong}
pong_s=${PONG_SECONDS:-180}
run() {  # seconds, then the command
  local limit=$1; shift
  echo "### $* (limit ${limit}s)" | tee -a "$log"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
}
cli() {  # a console script by its module, so that no PATH or venv activation is needed
  local module=$1; shift
  echo "$py -c 'import sys; from $module import main; sys.exit(main())'"
}
sebulba=$(cli podracer.sebulba.cli)
podracer=$(cli podracer.runs.tools.cli)
$py -c "import jax; print(jax.__version__, jax.devices())" | tee -a "$log"
nproc | sed 's/^/cpu cores: /' | tee -a "$log"
for part in $parts; do
  case $part in
  anakin)  # Catch Q(lambda) and CartPole PPO from 4 to 131k envs (training and acting-only FPS).
    run 200 $py benchmarks/anakin.py --quick --skip-devices --catch-envs 1024 16384 131072 \
      --ppo-envs 4 64 1024 16384 131072 ;;
  throughput)  # What the command line costs at accelerator batch sizes: CartPole PPO at 16k
    # and 131k envs as the plain one-program PPO, the bare compiled chunk in a loop, and
    # train() with every writer, interleaved; then one train() of each under cProfile.
    run 420 $py benchmarks/throughput.py --gpu --repeats 3 --profile "${log%.log}_profile" ;;
  muzero)  # MuZero beside PPO on Anakin Catch (presets as typed): SPS, time to greedy 0.9,
    # MuZero's search share (2026-12-04: its 48 s compile left 13 s of a 60 s budget).
    run 300 $py benchmarks/muzero.py --tasks catch --seconds 150 --sebulba-steps 0 ;;
  sebulba)  # CartPole IMPALA: CPU actors (whole-rollout XLA loops) against GPU actors.
    for backend in cpu default; do
      run 80 $py benchmarks/sebulba_throughput.py --case cartpole --actor-backend $backend \
        --envs-per-thread 128 --actor-threads 8 --total-env-steps 4000000
    done ;;
  atari)  # Breakout IMPALA (Nature CNN), same two actor placements.
    for backend in cpu default; do
      run 110 $py benchmarks/sebulba_throughput.py --case breakout --actor-backend $backend \
        --envs-per-thread 64 --actor-threads 8 --total-env-steps 500000
    done ;;
  pong)  # Pong-v5 learning, IMPALA and PQN, PONG_SECONDS each (curves with podracer plot).
    run $((pong_s + 60)) bash -c "$sebulba --env envpool:Pong-v5 --agent impala --actor-backend cpu \
      --envs-per-thread 64 --actor-threads-per-device 8 --total-env-steps 50000000 \
      --max-wall-seconds $pong_s --run-name device-pong-impala --no-progress"
    run $((pong_s + 60)) bash -c "$sebulba --env envpool:Pong-v5 --agent pqn --actor-backend cpu \
      --pqn.torso nature_cnn --envs-per-thread 64 --actor-threads-per-device 8 \
      --rollout-length 32 --total-env-steps 50000000 --max-wall-seconds $pong_s \
      --run-name device-pong-pqn --no-progress"
    run 60 bash -c "$podracer plot runs/device-pong-impala runs/device-pong-pqn \
      --out benchmarks/results/device_pong" ;;
  *) echo "unknown part '$part' (allowed: anakin, throughput, muzero, sebulba, atari, pong)" >&2; exit 2 ;;
  esac
done
echo "log: $log"
