"""Anakin throughput, printed as a table (figures, not assertions).

1. Catch at the Podracer demo's configuration (MLP 256, Q(lambda) 0.99, Adam 1e-4,
   rollout 16, 100 updates per chunk) at 128 and 1024 envs per device: training frames
   per second and, in the same run, the acting-only ceiling (env step + policy forward,
   no learning), and their ratio.
2. CartPole-v1 PPO at PureJaxRL's settings (4 envs x 128 steps, 4 epochs x 4 minibatches)
   and at 64 envs: SPS after compile, compile time, final return.
3. 1, 2 and 4 fake CPU devices at the same global batch (a subprocess per count): the
   collective's overhead (no real scaling on a 2-core machine).

    uv run python benchmarks/anakin.py [--quick] [--skip-devices] [--catch-envs 128 1024]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

RUNS = "runs/benchmarks"  # where the training runs of this script go


def _time_chunks(fn, state, repeats: int):
    state, metrics = fn(state)  # compile + first run
    import jax

    jax.block_until_ready(metrics)
    t0 = time.perf_counter()
    for _ in range(repeats):
        state, metrics = fn(state)
    jax.block_until_ready(metrics)
    return state, (time.perf_counter() - t0) / repeats


def catch_demo(num_envs: int, updates: int, repeats: int, microbatches: int = 1) -> dict:
    import jax

    from podracer.agents import QLambdaConfig
    from podracer.agents import make_agent
    from podracer.anakin import Plan
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.anakin import make_rollout
    from podracer.envs import make

    env = make("catch")
    agent = make_agent(
        "qlambda",
        env.spec,
        QLambdaConfig(learning_rate=1e-4, lambda_=0.9, gamma=0.99, num_microbatches=microbatches),
    )
    T = 16
    plan = Plan(make_mesh(1), num_envs=num_envs, rollout_length=T, updates_per_chunk=updates)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, plan)
    state, train_s = _time_chunks(chunk, state, repeats)

    # Acting-only ceiling: the same rollouts, no loss, no gradient, no optimizer.
    rollout = make_rollout(agent, env, T)

    @jax.jit
    def act_only(carry):
        params, env_state, timestep, key = carry

        def body(_, c):
            traj, (es, ts, k, _) = rollout(params, c[0], c[1], c[2], (), 0)
            return es, ts, k

        es, ts, k = jax.lax.fori_loop(0, updates, body, (env_state, timestep, key))
        return (params, es, ts, k), ts.reward.sum()

    carry = (state.train.params, state.env_state, state.timestep, state.env_key)
    _, act_s = _time_chunks(act_only, carry, repeats)
    frames = num_envs * T * updates
    return {
        "envs": num_envs,
        "microbatches": microbatches,
        "train_fps": frames / train_s,
        "act_fps": frames / act_s,
        "ratio": act_s / train_s,
    }


def cartpole_ppo(num_envs: int, total: int) -> dict:
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train
    from podracer.runs import final_return

    config = AnakinConfig(
        env="gymnax:CartPole-v1",
        agent="ppo",
        num_envs=num_envs,
        rollout_length=128,
        updates_per_chunk=max(1, total // (num_envs * 128 * 10)),
        total_env_steps=total,
        progress=False,
        tensorboard=False,
        runs_root=RUNS,
    )
    t0 = time.perf_counter()
    result = train(config)
    return {
        "envs": num_envs,
        "sps": result.sps,
        "compile_s": result.compile_seconds,
        "wall_s": time.perf_counter() - t0,
        "final_return": final_return(result, last=2),
    }


DEVICE_SCRIPT = """
import json, time, jax
from podracer.anakin import Plan, make_chunk, make_init, make_mesh
from podracer.agents import make_agent
from podracer.envs import make
n = {n}
env = make("catch"); agent = make_agent("qlambda", env.spec)
plan = Plan(make_mesh(n), num_envs={envs}, rollout_length=16, updates_per_chunk={updates})
state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
chunk = make_chunk(agent, env, plan)
state, m = chunk(state); jax.block_until_ready(m)
t0 = time.perf_counter()
for _ in range({repeats}):
    state, m = chunk(state)
jax.block_until_ready(m)
dt = (time.perf_counter() - t0) / {repeats}
print("RESULT", json.dumps({{"devices": n, "fps": {envs} * 16 * {updates} / dt}}))
"""


def devices_scaling(envs: int, updates: int, repeats: int) -> list[dict]:
    rows = []
    for n in (1, 2, 4):
        env = {**os.environ, "XLA_FLAGS": f"--xla_force_host_platform_device_count={n}"}
        script = DEVICE_SCRIPT.format(n=n, envs=envs, updates=updates, repeats=repeats)
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT"))
        rows.append(json.loads(line.split(" ", 1)[1]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer updates and repeats")
    parser.add_argument("--skip-devices", action="store_true")
    parser.add_argument(
        "--catch-envs", type=int, nargs="+", default=[128, 1024],
        help="envs per device for the Catch rows (an accelerator wants 8192 and more)",
    )  # fmt: skip
    parser.add_argument(
        "--ppo-envs", type=int, nargs="*", default=[4, 64],
        help="envs for the CartPole PPO rows (an accelerator wants 1024 and more; none: no rows)",
    )  # fmt: skip
    parser.add_argument(
        "--catch-microbatches", type=int, nargs="+", default=[1],
        help="Catch rows also at these num_microbatches (the learner's gradient in slices)",
    )  # fmt: skip
    args = parser.parse_args()
    updates, repeats = (20, 2) if args.quick else (100, 3)

    print("## Catch, demo configuration (Q(lambda), MLP 256, rollout 16), 1 device")
    print(f"{'envs/device':>12} {'microbatches':>13} {'train FPS':>12} {'act-only FPS':>13} "
          f"{'train/act':>10}")  # fmt: skip
    for n in args.catch_envs:
        for k in args.catch_microbatches:
            r = catch_demo(n, updates, repeats, k)
            print(f"{r['envs']:>12} {k:>13} {r['train_fps']:>12,.0f} {r['act_fps']:>13,.0f} "
                  f"{r['ratio']:>10.1%}")  # fmt: skip

    if args.ppo_envs:
        print("\n## CartPole-v1 PPO (PureJaxRL settings: 128 steps, 4 epochs x 4 minibatches)")
        print(f"{'envs':>6} {'SPS':>10} {'compile s':>10} {'wall s':>8} {'final return':>13}")
    for n in args.ppo_envs:
        # PureJaxRL's budgets at 4 and 64 envs; bigger batches get ten updates of 128 steps.
        total = {4: 500_000, 64: 2_000_000}.get(n, n * 128 * 10)
        r = cartpole_ppo(n, total // 5 if args.quick else total)
        print(
            f"{r['envs']:>6} {r['sps']:>10,.0f} {r['compile_s']:>10.1f} {r['wall_s']:>8.1f} "
            f"{r['final_return']:>13.1f}"
        )

    if not args.skip_devices:
        print("\n## Fake CPU devices, same global batch (1024 envs), Catch Q(lambda)")
        print(f"{'devices':>8} {'FPS':>12}")
        for r in devices_scaling(1024, updates // 2, repeats):
            print(f"{r['devices']:>8} {r['fps']:>12,.0f}")


if __name__ == "__main__":
    main()
