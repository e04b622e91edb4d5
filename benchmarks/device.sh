#!/usr/bin/env bash
# The accelerator figures in one prepared run, on a GPU or a TPU: raw output to
# benchmarks/results/device_<date>.log, curves beside it.
#
#   bash benchmarks/device.sh                  # every part for the backend found
#   bash benchmarks/device.sh anakin sebulba   # some parts: anakin, throughput, muzero,
#                                              #   sebulba, atari, pong (GPU: envpool);
#                                              #   catch, purejaxrl, gym, ale, ale-pong,
#                                              #   ale-breakout, muzero-minatar,
#                                              #   muzero-sweep, muzero-fade(-late), muzero-deep,
#                                              #   muzero-soft(er), muzero-atari,
#                                              #   ale-grid, muzero-envs, muzero-profile,
#                                              #   muzero-crash, profile, search,
#                                              #   ale-stall (TPU)
#
# Uses the Python that already imports podracer with an accelerator (PODRACER_PY, else
# `python`: on an offline TPU VM, the one `scripts/wheels.sh`'s install.sh set up), else
# installs the locked jax[cuda12] (the cuda12 extras) into the workspace's venv first.
# `purejaxrl` needs PUREJAXRL=<a checkout's purejaxrl/ folder>. Each block is capped
# with `timeout` so one slow block cannot eat the others' time.
set -uo pipefail
cd "$(dirname "$0")/.."
log="benchmarks/results/device_$(date +%Y%m%d).log"
mkdir -p benchmarks/results
py=${PODRACER_PY:-python}
# the last line: some env libraries print notices on stdout at import
backend=$("$py" -c "import podracer.anakin, jax; print(jax.default_backend())" 2>/dev/null | tail -1)
if [ "$backend" != gpu ] && [ "$backend" != tpu ]; then
  command -v uv >/dev/null 2>&1 || pip install -q "uv>=0.8"
  uv sync --locked --inexact --all-packages --all-extras --no-extra cuda13 --no-extra tpu --quiet
  py=".venv/bin/python"
  backend=gpu
fi
if [ "$backend" = tpu ]; then parts=${*:-catch purejaxrl gym ale}; else parts=${*:-anakin sebulba atari pong}; fi
pong_s=${PONG_SECONDS:-180}
run() {  # seconds, then the command
  local limit=$1; shift
  echo "### $* (limit ${limit}s)" | tee -a "$log"
  timeout "$limit" "$@" 2>&1 | tee -a "$log"
}
resumable() {  # CLI NAME ARGS...: PONG_SECONDS of run NAME a call (new with ARGS, or a
  # --resume of runs/NAME where it exists), so that a long run fits commands of < 10 min
  local cli=$1 name=$2; shift 2
  if [ -d "runs/$name" ]; then
    run $((pong_s + 120)) bash -c "$cli --resume --run-name $name --max-wall-seconds $pong_s --no-progress"
  else
    run $((pong_s + 120)) bash -c "$cli ${*@Q} --max-wall-seconds $pong_s --run-name $name --no-progress"
  fi
}
cli() {  # a console script by its module, so that no PATH or venv activation is needed
  local module=$1; shift
  echo "$py -c 'import sys; from $module import main; sys.exit(main())'"
}
sebulba=$(cli podracer.sebulba.cli)
anakin=$(cli podracer.anakin.cli)
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
  catch)  # Catch Q(lambda) at the demo config from 4k to 131k envs: training and acting-only
    # FPS, the learner's gradient whole and in 4 or 8 slices (its activations: 512 MB per
    # array at 32k envs, 2026-12-06b).
    run 300 $py benchmarks/anakin.py --quick --skip-devices --catch-envs 4096 32768 131072 \
      --catch-microbatches 1 4 8 --ppo-envs ;;
  ale-pong|ale-breakout)  # APPO on ale-py Pong or Breakout for PONG_SECONDS (default 180)
    # a call; a later call (the run dir still there) continues it with --resume, so a long
    # run fits commands of under 10 minutes. Actors on the chip (on the host CPU the Nature
    # CNN took 80% of a rollout). CleanRL's PPO Atari settings (clip 0.1, lr 2.5e-4, grad
    # norm 0.5, lambda 0.95) and 2 epochs x 4 minibatches per batch: at IMPALA's one step
    # per batch the learner idled 90% of the time and Pong stayed at -20.2 after 3.4M
    # agent steps (2026-12-06b); so, Pong passed 18 after 367 s (2026-12-06c).
    # Curve: `podracer plot runs/tpu-pong-impala` (runs/tpu-breakout-impala).
    game=$([ "$part" = ale-pong ] && echo Pong || echo Breakout)
    resumable "$sebulba" "tpu-$(echo "$game" | tr '[:upper:]' '[:lower:]')-impala" \
      --env "ale:$game" --agent impala --impala.num-epochs 2 --impala.num-minibatches 4 \
      --impala.clip-eps 0.1 --impala.learning-rate 2.5e-4 --impala.max-grad-norm 0.5 \
      --impala.lambda_ 0.95 --envs-per-thread 64 --actor-threads-per-device 3 --async-envs \
      --env-kwargs '{"num_threads": 2}' --total-env-steps 50000000 ;;
  muzero-minatar)  # Issue 53's learning run: MuZero's Breakout-MinAtar preset, 3 seeds,
    # 8 replay updates per rollout, to 1e7 env steps each, PONG_SECONDS a call, then
    # --resume. Curve: `podracer plot runs/tpu-muzero-minatar --seeds`.
    resumable "$anakin" tpu-muzero-minatar --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --muzero.replay.updates-per-rollout 8 \
      --total-env-steps 10000000 ;;
  muzero-sweep)  # What may lift MuZero's Breakout-MinAtar plateau (24.9 at 1e7 with 8 replay
    # updates): its prior collapses to 0.03-0.2 nats within 1e6 steps, and then acting's
    # Gumbel noise no longer explores (muzero_tuning.md: an entropy bonus of 0.01 and a
    # softer search target, value_scale 0.025, did not hold it up on this CPU). So: a
    # stronger bonus (0, 0.05), the preset's learning rate and a third of it (3e-3, 1e-3)
    # and twice the acting noise (gumbel_scale 1, 2), 8 points x 3 seeds as one program
    # to 1e7 steps each, PONG_SECONDS a call, then --resume. One seed a point: 24 members
    # (3 seeds) need 36.9 GB of the chip's 16. Table: `podracer sweep-best
    # runs/tpu-muzero-sweep` (and `podracer plot ... --seeds`).
    resumable "$anakin" tpu-muzero-sweep --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --muzero.replay.updates-per-rollout 8 \
      --muzero.learning-rate 1e-3 --muzero.search.gumbel-scale 2 \
      --sweep muzero.entropy_cost=0,0.05 --total-env-steps 10000000 ;;
  muzero-acting)  # Whether acting's noise holds MuZero's Breakout-MinAtar training return
    # down (greedy returns ran ~1.7x the training ones on the CPU): the Gumbel noise of
    # acting at a quarter and at none (the preset: 1), 3 seeds x 2 points, 8 replay updates.
    resumable "$anakin" tpu-muzero-acting --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --muzero.replay.updates-per-rollout 8 \
      --sweep muzero.search.gumbel_scale=0.25,0 --total-env-steps 10000000 ;;
  muzero-fade|muzero-fade-late)  # Whether acting's exploration, faded over the run,
    # lifts MuZero's Breakout-MinAtar training return to the noiseless search's (~1.7x it
    # on the CPU): epsilon and Gumbel noise falling linearly to 0 or a quarter of
    # themselves over the first half (-late: 90%) of the run, 2 points x 3 seeds (6
    # members fit the chip; 12 in turns of 6 asked 19.5 GB before the turns updated the
    # state in place), 8 replay updates, 1e7 steps each, PONG_SECONDS a call, then --resume.
    fade=0.5; [ "$part" = muzero-fade-late ] && fade=0.9
    resumable "$anakin" "tpu-$part" --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --muzero.replay.updates-per-rollout 8 \
      --muzero.exploration-fade "$fade" --sweep muzero.exploration_final=0,0.25 \
      --total-env-steps 10000000 ;;
  muzero-deep)  # With acting's exploration gone by half the run (muzero-fade's best), the
    # training return is the search's own and still ~29: twice the simulations (16),
    # for better Q-values at the root, at the preset's value_scale and half of it (a
    # softer target), 2 points x 3 seeds, 8 replay updates, 1e7 steps each.
    resumable "$anakin" tpu-muzero-deep --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --muzero.replay.updates-per-rollout 8 \
      --muzero.exploration-fade 0.5 --muzero.search.num-simulations 16 \
      --sweep muzero.search.value_scale=0.1,0.05 --total-env-steps 10000000 ;;
  muzero-soft)  # Whether muzero-deep's breakout (one seed of three at value_scale 0.05
    # left the one-wall plateau for ~68) holds on every seed: 16 simulations, exploration
    # faded by half the run, value_scale 0.05 / 0.025 x gamma 0.99 / 0.997 (a longer
    # horizon for a wall's last bricks), 3 seeds each: 12 members in turns of 6, 8 replay
    # updates, 1e7 steps each, PONG_SECONDS a call, then --resume (~15 min in all).
    resumable "$anakin" tpu-muzero-soft --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --members-at-once 6 \
      --muzero.replay.updates-per-rollout 8 --muzero.exploration-fade 0.5 \
      --muzero.search.num-simulations 16 --sweep muzero.search.value_scale=0.05,0.025 \
      --sweep muzero.gamma=0.99,0.997 --total-env-steps 10000000 ;;
  muzero-softer)  # muzero-soft's best point (value_scale 0.025, 50.3: 50.2 / 67.9 / 32.9)
    # left behind the seeds whose prior collapsed once the exploration had faded to 0:
    # some exploration to the end (exploration_final 0.1 / 0.25) x value_scale 0.025 /
    # 0.0125, 3 seeds each: 12 members in turns of 6, ~15 min in three calls.
    resumable "$anakin" tpu-muzero-softer --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --members-at-once 6 \
      --muzero.replay.updates-per-rollout 8 --muzero.exploration-fade 0.5 \
      --muzero.search.num-simulations 16 --sweep muzero.search.value_scale=0.025,0.0125 \
      --sweep muzero.exploration_final=0.1,0.25 --total-env-steps 10000000 ;;
  muzero-smooth)  # muzero-softer left seed 2 below 40 at every point (26-37); its prior
    # fell to 0.02-0.14 nats. A policy target mixed with uniform cannot collapse (on the
    # CPU, 0.1 held the prior at ~0.5 nats): policy_target_smoothing 0.05 / 0.1 x
    # value_scale 0.025 / 0.0125, exploration_final 0.25, 3 seeds each: 12 members in
    # turns of 6, ~15 min in three calls.
    resumable "$anakin" tpu-muzero-smooth --env gymnax:Breakout-MinAtar --agent muzero \
      --preset minatar --num-seeds 3 --members-at-once 6 \
      --muzero.replay.updates-per-rollout 8 --muzero.exploration-fade 0.5 \
      --muzero.exploration-final 0.25 --muzero.search.num-simulations 16 \
      --sweep muzero.search.value_scale=0.025,0.0125 \
      --sweep muzero.policy_target_smoothing=0.05,0.1 --total-env-steps 10000000 ;;
  muzero-smooth-sps)  # What muzero-smooth's settings cost as the minatar preset would run
    # them (3 seeds, no sweep): SPS and compile at 64 and 256 envs a seed (the preset's
    # 64 ran 198k over 3, its 256 528k; issue 53's target 100k over 3), 60 s each.
    for n in 64 256; do
      run 200 $py benchmarks/compile_stages.py anakin --env gymnax:Breakout-MinAtar \
        --agent muzero --preset minatar --num-seeds 3 --num-envs $n \
        --muzero.replay.updates-per-rollout 8 --muzero.exploration-fade 0.5 \
        --muzero.exploration-final 0.25 --muzero.search.num-simulations 16 \
        --muzero.search.value-scale 0.0125 --muzero.policy-target-smoothing 0.1 \
        --total-env-steps 10000000 --max-wall-seconds 60 --run-name device-muzero-smooth-$n \
        --no-progress
    done ;;
  muzero-atari)  # Issue 53's MuZero on Sebulba with Atari: ale:Breakout, the Nature CNN as
    # representation, 50 simulations a step, actors on the chip (3 threads x 64 envs, two
    # lanes); frames/s (4 per agent step) and the pipeline's stage times.
    run 300 bash -c "$sebulba --env ale:Breakout --agent muzero --muzero.torso nature_cnn \
      --muzero.latent-size 128 --muzero.search.num-simulations 50 --envs-per-thread 64 \
      --actor-threads-per-device 3 --async-envs --env-kwargs '{\"num_threads\": 2}' \
      --rollout-length 20 --total-env-steps 2000000 --max-wall-seconds 180 \
      --run-name device-muzero-atari --no-progress" ;;
  muzero-envs)  # MuZero's Breakout-MinAtar preset, 3 seeds, at its 64 envs per seed and at
    # 256 (the acting batch the chip may want; issue 53's 100k SPS over 3 seeds), then a
    # resume of the first: SPS, compile, and JAX's compile counters (compile_stages.py).
    for n in 64 256; do
      run 240 $py benchmarks/compile_stages.py anakin --env gymnax:Breakout-MinAtar \
        --agent muzero --preset minatar --num-seeds 3 --num-envs $n \
        --total-env-steps 10000000 --max-wall-seconds 120 --run-name device-muzero-$n --no-progress
    done
    run 120 $py benchmarks/compile_stages.py anakin --resume --run-name device-muzero-64 \
      --max-wall-seconds 20 --no-progress ;;
  muzero-compile)  # Issue 53's compile targets: MuZero's Breakout-MinAtar preset, 3 seeds,
    # started with an empty compilation cache (first start), then resumed (a repeat).
    export JAX_COMPILATION_CACHE_DIR=$(mktemp -d)
    run 200 $py benchmarks/compile_stages.py anakin --env gymnax:Breakout-MinAtar \
      --agent muzero --preset minatar --num-seeds 3 --total-env-steps 10000000 \
      --max-wall-seconds 75 --run-name device-muzero-compile --no-progress
    run 120 $py benchmarks/compile_stages.py anakin --resume --run-name device-muzero-compile \
      --max-wall-seconds 25 --no-progress
    ls -lS "$JAX_COMPILATION_CACHE_DIR" | head -8 | tee -a "$log" ;;  # the entries a resume reads, by size
  profile)  # Where the chip's time goes: the ops by self time of Catch's chunk at 32k envs
    # and of PPO's Breakout-MinAtar preset chunk at 64 envs (traces and HLO in a temp dir).
    tmp=$(mktemp -d)
    run 150 $py benchmarks/tpu_probe.py trace 32768 "$tmp"
    run 150 $py benchmarks/tpu_probe.py trace-preset gymnax:Breakout-MinAtar ppo 64 "$tmp" ;;
  search)  # podracer.search's tree written by comparisons against mctx's scatters: the
    # same search, simulations per second at batch 256 / 1,024 and 8 / 32 simulations.
    run 300 $py benchmarks/search.py ;;
  muzero-profile)  # Where MuZero's chunk spends the chip's time at 3 seeds x 256 envs (its
    # SPS grew 1.2x for 4x the envs): a whole run traced, its device ops by self time.
    run 300 $py benchmarks/tpu_probe.py trace-run "$(mktemp -d)" anakin \
      --env gymnax:Breakout-MinAtar --agent muzero --preset minatar --num-seeds 3 \
      --num-envs 256 --total-env-steps 10000000 --max-wall-seconds 30 \
      --run-name device-muzero-profile --no-progress ;;
  muzero-crash)  # libtpu's compiler overflows its stack on MuZero's single-seed MinAtar
    # chunk (SpatialMajorConvolution::EmitZeroByteCase): XLA's HLO dumps of the programs
    # it compiled, up to the crash, packed into $OUT (or benchmarks/results).
    dump=$(mktemp -d)
    XLA_FLAGS="--xla_dump_to=$dump --xla_dump_hlo_as_text" run 200 $py benchmarks/tpu_probe.py \
      trace-preset gymnax:Breakout-MinAtar muzero 256 "$(mktemp -d)"
    tar -czf "${OUT:-benchmarks/results}/muzero_crash_hlo.tgz" -C "$dump" . ;;
  ale-grid)  # IMPALA on ale:Breakout at several actor layouts (threads x envs, lanes):
    # which keeps the 13 host cores and the chip busiest. ALE_LAYOUTS picks some
    # ("threads envs [--async-envs]", separated by commas).
    IFS=, read -ra layouts <<< "${ALE_LAYOUTS:-3 64 --async-envs,4 64 --async-envs,6 64 --async-envs,3 128 --async-envs,6 32}"
    for layout in "${layouts[@]}"; do
      set -- $layout
      # 300 s: six threads x 64 envs first update ~94 s in (ale-py builds emulators serially)
      run 300 $py benchmarks/sebulba_throughput.py --case ale-breakout --actor-threads $1 \
        --envs-per-thread $2 ${3:-} --env-kwargs '{"num_threads": 2}' --total-env-steps 400000
    done ;;
  ale-stall)  # Six actor threads x 64 envs from the command line for 100 s, and every
    # thread's Python stack (faulthandler on SIGABRT) if still running 40 s later. Once
    # thought a stall (tpu_20261206e.md); a slow start (tpu_20261206f.md), ~94 s to the
    # first update (ale-py builds emulators one at a time), then 20.1k agent steps/s.
    run 200 env PYTHONFAULTHANDLER=1 timeout -s ABRT 150 bash -c "$sebulba --env ale:Breakout \
      --agent impala --envs-per-thread 64 --actor-threads-per-device 6 --async-envs \
      --env-kwargs '{\"num_threads\": 2}' --total-env-steps 2000000 --max-wall-seconds 100 \
      --run-name device-ale-stall --no-progress" ;;
  purejaxrl)  # PPO against PureJaxRL's own ppo.py, interleaved in one process.
    run 300 $py benchmarks/vs_purejaxrl.py --purejaxrl "${PUREJAXRL:?set PUREJAXRL}" \
      --cartpole-envs 4 2048 --minatar ;;
  gym)  # IMPALA on gymnasium's native vector CartPole: host CPU actors, then chip actors.
    for backend in cpu default; do
      run 120 $py benchmarks/sebulba_throughput.py --case gym-cartpole --actor-backend $backend \
        --envs-per-thread 1024 --actor-threads 4 --trajectories-per-update 2 \
        --total-env-steps 6000000
    done ;;
  ale)  # IMPALA (Nature CNN) on ale-py Breakout: the env-only rate of the same envs and
    # threads (a_env) against training (d_train); frames = 4 x agent steps. Six threads x
    # 64 envs in two lanes, the grid's best; 300 s, as their 384 emulators build one at a time.
    run 300 $py benchmarks/sebulba_throughput.py --case ale-breakout --envs-per-thread 64 \
      --actor-threads 6 --async-envs --env-kwargs '{"num_threads": 2}' --total-env-steps 400000 ;;
  *) echo "unknown part '$part' (allowed: anakin, throughput, muzero, sebulba, atari, pong, catch, purejaxrl, gym, ale, ale-pong, ale-breakout, ale-grid, muzero-minatar, muzero-sweep, muzero-acting, muzero-fade, muzero-fade-late, muzero-deep, muzero-soft, muzero-softer, muzero-smooth, muzero-smooth-sps, muzero-atari, muzero-envs, muzero-compile, muzero-profile, muzero-crash, profile, search, ale-stall)" >&2; exit 2 ;;
  esac
done
echo "log: $log"
