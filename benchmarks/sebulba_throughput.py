"""Sebulba throughput, printed as a table (figures, not assertions).

For each case, in one run and at the training run's layout (actor threads, envs per
thread, rollout length, learner batch):
  (a) raw envpool steps/s with random actions (every actor thread calling envpool's own
      `step`), and a_env_xla: the same envs stepped through envpool's XLA interface in a
      compiled loop (the env rate the XLA actor loop sees, about 2x a on CartPole),
  (b) inference-only steps/s (the actor's policy on fixed observations, same loop form),
  (c) learner-only steps/s (updates on synthetic trajectories already on the learner),
  (d) end-to-end training steps/s (`train(config).sps`, compiles excluded),
and the efficiency d / (1 / (1/a + 1/b + 1/c)): the share of the serial-sum limit the
pipeline reaches (over 1 when env, inference and learning overlap); efficiency_xla is
the same with a_env_xla in place of a, the stricter figure for the XLA actor loop.

Cases: `cartpole` (IMPALA, MLP), `breakout` (IMPALA, Nature CNN), `stoix` (the peer's
comparison: PPO, 2 actor threads x 8 envs, actor and learner sharing the CPU device,
5e5 steps: SPS and final return).

    uv run python benchmarks/sebulba_throughput.py [--case cartpole breakout stoix] [--quick]
    # on an accelerator: bigger actor batches, more actor threads
    python benchmarks/sebulba_throughput.py --case cartpole breakout \
        --envs-per-thread 128 --actor-threads 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import threading
import time

import numpy as np

SECONDS = 4.0  # measuring time of (a) and (b)


def _threads(n: int, body) -> float:
    """Runs `body(i, stop)` on n threads for SECONDS; returns the sum of their step counts / s."""
    counts = [0] * n
    stop = threading.Event()

    def run(i):
        counts[i] = body(i, stop)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def raw_env_sps(config) -> float:
    """envpool's own `step` with random actions, from Python (what "raw envpool" means in
    envpool's and the peers' benchmarks): no adapter bookkeeping. With two lanes per
    thread (`--async-envs`) each thread keeps every lane's step in flight, as its actor
    does (receive a lane, send it its next actions, the next lane), through the envs'
    `send`/`recv`: stepping the lanes one after another would halve the rate training
    is held to."""
    from podracer.envs import make_host

    # Each thread's envs as the training run builds them (its lanes, its env_kwargs), each
    # stepped by its own library's `step`: envpool's pool, or a gymnasium / ale-py vector env.
    n, lanes = config.actor_threads_per_device, config.num_lanes
    envs = [
        make_host(config.env, num_envs=config.envs_per_thread // lanes, seed=i,
                  **(config.env_kwargs or {}))
        for i in range(n * lanes)
    ]  # fmt: skip
    raw = [getattr(env, "pool", None) or getattr(env, "envs", None) or env for env in envs]
    step = [r.step for r in raw]
    for r in raw:
        r.reset()
    rng = np.random.default_rng(0)
    actions = [
        rng.integers(0, env.spec.num_actions, (64, env.num_envs), dtype=np.int32) for env in envs
    ]

    def body(i, stop):
        steps, k = 0, 0
        while not stop.is_set():
            for j in range(i * lanes, (i + 1) * lanes):
                step[j](actions[j][k % 64])
                steps += envs[j].num_envs
            k += 1
        return steps

    def overlapped(i, stop):
        mine = range(i * lanes, (i + 1) * lanes)
        steps, k = 0, 0
        while not stop.is_set():
            for j in mine:
                _, ids = envs[j].recv()
                envs[j].send(actions[j][k % 64][ids], ids)
                steps += len(ids)
            k += 1
        for j in mine:
            envs[j].recv()
        return steps

    if lanes > 1:
        body = overlapped
        # Reset outside the measured seconds: ale-py's seeded reset of 32 envs takes
        # seconds on some hosts (1.6k "env steps/s" on the TPU host's 13 cores when the
        # threads reset inside the window, 2026-12-06).
        for env in envs:
            env.async_reset()
            env.recv()
            env.send(np.zeros(env.num_envs, np.int32), np.arange(env.num_envs, dtype=np.int32))

    sps = _threads(n, body)
    for env in envs:
        env.close()
    return sps


def raw_env_xla_sps(config) -> float:
    """envpool stepped through its XLA interface in a compiled loop, random actions: the
    env rate the XLA actor loop itself sees (no Python per step)."""
    import jax
    import jax.numpy as jnp

    from podracer.envs import make_host

    n, T = config.actor_threads_per_device, config.rollout_length
    envs = [make_host(config.env, num_envs=config.envs_per_thread, seed=i) for i in range(n)]
    loops = []
    for env in envs:
        env.async_reset()
        handle, recv, send, _ = env.xla()
        ids = jnp.arange(env.num_envs, dtype=jnp.int32)

        def loop(handle, key, recv=recv, send=send, ids=ids, num_actions=env.spec.num_actions):
            def body(carry, _):
                handle, key = carry
                handle, (obs, *_) = recv(handle)
                key, sub = jax.random.split(key)
                action = jax.random.randint(sub, ids.shape, 0, num_actions, jnp.int32)
                return (send(handle, action, ids), key), obs.sum()

            return jax.lax.scan(body, (handle, key), length=T)

        loops.append([jax.jit(loop), handle])

    def body(i, stop):
        fn, handle = loops[i]
        carry, steps = (handle, jax.random.PRNGKey(i)), 0
        while not stop.is_set():
            carry, out = fn(*carry)
            jax.block_until_ready(out)
            steps += T * envs[i].num_envs
        return steps

    for i, (fn, handle) in enumerate(loops):  # compile, and leave each pool mid-episode
        carry, out = fn(handle, jax.random.PRNGKey(i))
        jax.block_until_ready(out)
        loops[i][1] = carry[0]
    sps = _threads(n, body)
    for env in envs:
        env.close()
    return sps


def inference_sps(config, agent, xla: bool) -> float:
    """The actor's policy alone: a compiled scan of T steps (xla) or jitted steps in Python."""
    import jax
    import jax.numpy as jnp

    n, B, T = config.actor_threads_per_device, config.envs_per_thread, config.rollout_length
    params = agent.init(jax.random.PRNGKey(0))
    obs = jnp.zeros((B, *agent.spec.observation_shape), agent.spec.observation_dtype)

    if xla:
        # Observations are scanned over (an argument, different per step): a constant or
        # loop-invariant input would let XLA fold or hoist the network out of the loop.
        rng = np.random.default_rng(0)
        observations = jnp.asarray(rng.integers(0, 255, (T, *obs.shape)).astype(obs.dtype))

        @jax.jit
        def rollout(params, key, observations):
            def body(key, observation):
                key, sub = jax.random.split(key)
                return key, agent.act(params, sub, observation)[:2]

            return jax.lax.scan(body, key, observations)

        def body(i, stop):
            key, steps = jax.random.PRNGKey(i), 0
            while not stop.is_set():
                key, out = rollout(params, key, observations)
                jax.block_until_ready(out)
                steps += T * B
            return steps

        jax.block_until_ready(rollout(params, jax.random.PRNGKey(0), observations))
    else:

        @jax.jit
        def act(params, key, observation):
            key, sub = jax.random.split(key)
            action, extras, _ = agent.act(params, sub, observation)
            return action, extras, key

        host_obs = np.zeros(obs.shape, obs.dtype)

        def body(i, stop):
            key, steps = jax.random.PRNGKey(i), 0
            while not stop.is_set():
                action, _, key = act(params, key, host_obs)
                np.asarray(action)
                steps += B
            return steps

        act(params, jax.random.PRNGKey(0), host_obs)
    return _threads(n, body)


def learner_sps(config, agent, seconds: float = SECONDS) -> float:
    import jax
    import jax.numpy as jnp

    from podracer.agents import Trajectory
    from podracer.envs import TimeStep
    from podracer.sebulba import learner_mesh
    from podracer.sebulba import make_update
    from podracer.sebulba import trajectory_sharding
    from podracer.sebulba.learner import init_state
    from podracer.sebulba.learner import stop_votes

    T, B, K = config.rollout_length, config.envs_per_thread, config.trajectories_per_update
    spec = agent.spec
    mesh = learner_mesh(jax.devices()[:1])
    params = agent.init(jax.random.PRNGKey(0))
    _, extras, _ = jax.eval_shape(
        agent.act,
        params,
        jax.random.PRNGKey(0),
        jnp.zeros((B, *spec.observation_shape), spec.observation_dtype),
    )
    rng = np.random.default_rng(0)
    z = lambda dtype: np.zeros((T + 1, B), dtype)
    ts = TimeStep(
        observation=rng.integers(0, 255, (T + 1, B, *spec.observation_shape)).astype(
            spec.observation_dtype
        ),
        reward=rng.normal(size=(T + 1, B)).astype(np.float32),
        terminated=rng.random((T + 1, B)) < 0.02,
        truncated=z(bool), first=z(bool), final_observation=None, episode_return=z(np.float32),
        episode_length=z(np.int32), episode_end=z(bool),
    )  # fmt: skip
    ex = {k: np.zeros((T + 1, *v.shape), v.dtype) for k, v in extras.items()}
    traj = Trajectory(ts, rng.integers(0, spec.num_actions, (T + 1, B)).astype(np.int32), ex)
    trajs = jax.device_put(tuple([traj] * K), trajectory_sharding(mesh))
    update = make_update(agent, mesh)
    state = init_state(agent, jax.random.PRNGKey(0), mesh)
    votes = stop_votes(False, mesh)
    state, m, _, _ = update(state, trajs, votes, None)
    jax.block_until_ready(m)
    start, updates = time.perf_counter(), 0
    while updates < 3 or time.perf_counter() - start < seconds:
        state, m, _, _ = update(state, trajs, votes, None)
        jax.device_get(m)  # as the learner loop does (metrics to host each update)
        updates += 1
    return updates * K * T * B / (time.perf_counter() - start)


def measure(name: str, config) -> dict:

    from podracer.agents import make_agent
    from podracer.envs import make_host
    from podracer.runs import final_return
    from podracer.sebulba import Plan
    from podracer.sebulba import train
    from podracer.sebulba.rollout import XlaLoop
    from podracer.sebulba.run import choose_loop

    # The loop the training run's actors use: the XLA loop needs a CPU actor device.
    plan = Plan.of(config, 0, 1)
    probe = make_host(config.env, num_envs=1, **(config.env_kwargs or {}))
    spec = probe.spec
    xla = choose_loop(plan.actor_loop, probe, plan.actor_devices[0]) is XlaLoop
    probe.close()
    agent = make_agent(config.agent, spec, config.agent_config, total_updates=config.num_updates())
    a = raw_env_sps(config)
    a_xla = raw_env_xla_sps(config) if xla else math.nan
    b = inference_sps(config, agent, xla)
    c = learner_sps(config, agent)
    t0 = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - t0
    d = result.sps
    serial = 1.0 / (1.0 / a + 1.0 / b + 1.0 / c)
    serial_xla = 1.0 / (1.0 / a_xla + 1.0 / b + 1.0 / c)
    last = result.history[-1]
    return {
        "case": name, "loop": "xla" if xla else "python",
        "a_env": a, "a_env_xla": a_xla, "b_inference": b, "c_learner": c, "d_train": d,
        "serial_limit": serial, "efficiency": d / serial,
        "efficiency_xla": d / serial_xla, "d_over_min": d / min(a, b, c),
        "final_return": final_return(result), "env_steps": result.env_steps, "wall_s": wall,
        "actor_util": last.get("utilisation/actor", math.nan),
        "learner_util": last.get("utilisation/learner", math.nan),
    }  # fmt: skip


def cases(quick: bool) -> dict:
    from podracer.agents import ImpalaConfig
    from podracer.agents import PPOConfig
    from podracer.sebulba import SebulbaConfig

    base, _ = SebulbaConfig.from_preset(progress=False, tensorboard=False, log_interval=20 * 512)
    scale = 0.25 if quick else 1.0
    return {
        "cartpole": dataclasses.replace(base, total_env_steps=int(1_000_000 * scale)),
        "cartpole-python": dataclasses.replace(
            base, total_env_steps=int(200_000 * scale), actor_loop="python"
        ),
        "breakout": dataclasses.replace(
            base,
            env="envpool:Breakout-v5",
            envs_per_thread=8,
            rollout_length=20,
            trajectories_per_update=1,
            total_env_steps=int(20_000 * scale),
            log_interval=5 * 160,
            agent_config=ImpalaConfig(
                torso="nature_cnn", learning_rate=6e-4, hidden_sizes=(256,), activation="relu"
            ),
        ),  # fmt: skip
        # ale-py's native vector env (no envpool): Breakout with the atari preset's IMPALA.
        "ale-breakout": dataclasses.replace(
            base,
            env="ale:Breakout",
            envs_per_thread=32,
            rollout_length=20,
            total_env_steps=int(200_000 * scale),
            log_interval=20 * 32 * 10,
            agent_config=ImpalaConfig(
                torso="nature_cnn", learning_rate=6e-4, hidden_sizes=(256,), activation="relu"
            ),
        ),  # fmt: skip
        # gymnasium's numpy-batched CartPole (its vector entry point), stepped from Python.
        "gym-cartpole": dataclasses.replace(
            base, env="gymnasium:CartPole-v1", total_env_steps=int(1_000_000 * scale)
        ),
        "stoix": dataclasses.replace(
            base,
            agent="ppo",
            agent_config=PPOConfig(anneal_lr=False),
            envs_per_thread=8,
            actor_threads_per_device=2,
            rollout_length=32,
            trajectories_per_update=2,
            total_env_steps=int(500_000 * scale),
        ),  # fmt: skip
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--case", nargs="*", default=["cartpole", "cartpole-python", "breakout", "stoix"]
    )
    parser.add_argument("--quick", action="store_true", help="quarter-length training runs")
    # Layout overrides for every case (an accelerator wants bigger actor batches and more
    # threads than the CPU defaults), e.g. --envs-per-thread 128 --actor-threads 4.
    parser.add_argument("--envs-per-thread", type=int)
    parser.add_argument("--actor-threads", type=int)
    parser.add_argument("--rollout-length", type=int)
    parser.add_argument("--total-env-steps", type=int)
    parser.add_argument("--actor-backend", choices=("default", "cpu"))
    parser.add_argument("--trajectories-per-update", type=int)
    parser.add_argument("--async-envs", action="store_true", help="two lanes per thread")
    parser.add_argument("--env-kwargs", type=json.loads, help="e.g. '{\"num_threads\": 3}'")
    args = parser.parse_args()
    overrides = {
        field: value
        for field, value in (
            ("envs_per_thread", args.envs_per_thread),
            ("actor_threads_per_device", args.actor_threads),
            ("rollout_length", args.rollout_length),
            ("total_env_steps", args.total_env_steps),
            ("actor_backend", args.actor_backend),
            ("trajectories_per_update", args.trajectories_per_update),
            ("async_envs", args.async_envs or None),
            ("env_kwargs", args.env_kwargs),
        )
        if value is not None
    }
    all_cases = {k: dataclasses.replace(c, **overrides) for k, c in cases(args.quick).items()}
    rows = []
    for name in args.case:
        row = measure(name, all_cases[name])
        rows.append(row)
        print(row, flush=True)
    header = (
        "case",
        "loop",
        "a_env",
        "a_env_xla",
        "b_inference",
        "c_learner",
        "d_train",
        "serial_limit",
        "efficiency",
        "efficiency_xla",
        "d_over_min",
        "final_return",
        "env_steps",
        "wall_s",
        "actor_util",
        "learner_util",
    )
    print()
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        cells = []
        for h in header:
            v = row[h]
            cells.append(
                f"{v:,.0f}"
                if isinstance(v, float) and abs(v) >= 100
                else f"{v:.2f}"
                if isinstance(v, float)
                else str(v)
            )
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
