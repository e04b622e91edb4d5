"""A first look at an accelerator host (figures, not assertions), one part per call:

    python benchmarks/tpu_probe.py latency        # one policy call + its transfers, per backend
    python benchmarks/tpu_probe.py gymvec         # gymnasium CartPole: native vector env vs copies
    python benchmarks/tpu_probe.py ale            # ale-py AtariVectorEnv env-only rates
    python benchmarks/tpu_probe.py catch 4096 32768       # Anakin Catch training / acting FPS
    python benchmarks/tpu_probe.py trace 32768 [DIR]      # a profile of that chunk, and its HLO
    python benchmarks/tpu_probe.py trace-preset gymnax:Breakout-MinAtar ppo 64 [DIR]
                                                          # the same for a preset's chunk
    python benchmarks/tpu_probe.py trace-run DIR anakin --env ... --max-wall-seconds 20
                                                          # a whole command-line run

`latency` is what bounds a Sebulba actor that steps its envs from Python: one jitted
policy call on a host batch and the action back, per step (on one TPU v5e chip under
gVisor: 1.4 ms at any batch size, against 0.3 ms on its host's CPU). `trace` writes a
`jax.profiler` trace (TensorBoard's profile plugin or Perfetto read it) and the chunk's
compiled HLO, where each op's layout shows what the device pads: the 2026-12-05 trace
of Catch at 32,768 envs found the `[B, 10, 5]` observations tiled to `[B, 16, 128]`
(`benchmarks/results/tpu_20261205_probe.log`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))


def rate(fn, seconds: float = 3.0) -> float:
    """Calls `fn` (which returns a count) for `seconds` after one warm-up call: count / s."""
    fn()
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        n += fn()
    return n / (time.perf_counter() - t0)


def latency() -> None:
    import jax
    import jax.numpy as jnp

    backends = [jax.default_backend()] + (["cpu"] if jax.default_backend() != "cpu" else [])
    for backend in backends:
        device = jax.devices(backend)[0]
        w1 = jax.device_put(jnp.ones((4, 64)), device)
        w2 = jax.device_put(jnp.ones((64, 2)), device)
        policy = jax.jit(lambda w1, w2, x: jnp.argmax(jnp.tanh(x @ w1) @ w2, -1))
        for batch in (16, 256, 1024):
            x = np.ones((batch, 4), np.float32)

            def step(x=x, w1=w1, w2=w2, policy=policy, device=device):
                np.asarray(policy(w1, w2, jax.device_put(x, device)))
                return 1

            print(f"latency {backend} batch {batch}: {1e6 / rate(step, 2.0):.0f} us per call")


def gymvec() -> None:
    import gymnasium as gym

    for mode in ("vector_entry_point", "sync"):
        for n in (256, 1024):
            env = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode=mode)
            env.reset(seed=0)
            actions = np.zeros(n, np.int64)

            def step(env=env, actions=actions, n=n):
                env.step(actions)
                return n

            print(f"gymnasium CartPole {mode} {n} envs: {rate(step, 2.0):,.0f} steps/s")
            env.close()


def ale() -> None:
    from ale_py.vector_env import AtariVectorEnv

    print("cores", os.cpu_count())
    for n, threads in ((32, 12), (64, 12), (128, 12), (64, 6)):
        env = AtariVectorEnv("breakout", num_envs=n, num_threads=threads, reward_clipping=False)
        env.reset(seed=0)
        actions = np.zeros(n, np.int32)

        def step(env=env, actions=actions, n=n):
            env.step(actions)
            return n

        print(f"ale breakout {n} envs {threads} threads: {rate(step):,.0f} agent steps/s")
        env.close()
    # Two vector envs stepped from two Python threads (Sebulba's two lanes of one actor).
    envs = [AtariVectorEnv("breakout", num_envs=64, num_threads=6) for _ in range(2)]
    for env in envs:
        env.reset(seed=0)
    counts, stop = [0, 0], threading.Event()

    def run(i):
        actions = np.zeros(64, np.int32)
        while not stop.is_set():
            envs[i].step(actions)
            counts[i] += 64

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join()
    print(
        f"ale breakout 2 x 64 envs, 2 x 6 threads: {sum(counts) / (time.perf_counter() - t0):,.0f}"
    )


def catch(sizes: list[int]) -> None:
    from anakin import catch_demo

    for n in sizes:
        print(json.dumps(catch_demo(n, 20, 2)))


def trace(num_envs: int, out: str) -> None:
    import jax

    from podracer.agents import QLambdaConfig
    from podracer.agents import make_agent
    from podracer.anakin import Plan
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.envs import make

    env = make("catch")
    config = QLambdaConfig(learning_rate=1e-4, lambda_=0.9, gamma=0.99)
    agent = make_agent("qlambda", env.spec, config)
    plan = Plan(make_mesh(1), num_envs=num_envs, rollout_length=16, updates_per_chunk=4)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, plan)
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    with jax.profiler.trace(os.path.join(out, f"trace{num_envs}")):
        for _ in range(2):
            state, metrics = chunk(state)
        jax.block_until_ready(metrics)
    with open(os.path.join(out, f"hlo_{num_envs}.txt"), "w") as f:
        f.write(chunk.lower(state).compile().as_text())
    summarize(os.path.join(out, f"trace{num_envs}"))


def trace_preset(env_id: str, agent_name: str, num_envs: int, out: str) -> None:
    """`trace` for the chunk the command line builds from `env_id`'s preset for
    `agent_name`, at `num_envs` envs (its rollout length and updates per chunk)."""
    import jax

    from podracer.agents import make_agent
    from podracer.anakin import AnakinConfig
    from podracer.anakin import Plan
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.envs import make

    config, _ = AnakinConfig.from_preset(env=env_id, agent=agent_name)
    env = make(config.env)
    agent = make_agent(config.agent, env.spec, config.agent_config)
    plan = Plan(
        make_mesh(1), num_envs=num_envs, rollout_length=config.rollout_length,
        updates_per_chunk=config.updates_per_chunk,
    )  # fmt: skip
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, plan)
    state, metrics = chunk(state)
    jax.block_until_ready(metrics)
    name = f"trace_{agent_name}_{num_envs}"
    with jax.profiler.trace(os.path.join(out, name)):
        state, metrics = chunk(state)
        jax.block_until_ready(metrics)
    with open(os.path.join(out, f"hlo_{agent_name}_{num_envs}.txt"), "w") as f:
        f.write(chunk.lower(state).compile().as_text())
    summarize(os.path.join(out, name))


def trace_run(out: str, runtime: str, args: list[str]) -> None:
    """A `jax.profiler` trace of a whole command-line run (`anakin` or `sebulba` with
    `args`; keep it short with `--max-wall-seconds`), then its device ops by self time:
    for programs a hand-built chunk does not reproduce (`--num-seeds`, Sebulba)."""
    import jax

    if runtime == "anakin":
        from podracer.anakin.cli import main as command
    else:
        from podracer.sebulba.cli import main as command
    sys.argv = [runtime, *args]
    path = os.path.join(out, f"trace_{runtime}")
    with jax.profiler.trace(path):
        command()
    summarize(path)


def summarize(trace_dir: str, top: int = 25) -> None:
    """The device's ops by self time (nested ops' time taken out of their loop's), from the
    trace's xplane file: where a chunk's time goes, without TensorBoard."""
    import collections
    import glob

    from jax.profiler import ProfileData

    for path in glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True):
        for plane in ProfileData.from_file(path).planes:
            lines = [line for line in plane.lines if line.name == "XLA Ops"]
            if not plane.name.startswith("/device:") or not lines:
                continue
            events = sorted(
                (e.start_ns, e.start_ns + e.duration_ns, e.name) for e in lines[0].events
            )
            own, count, stack = collections.Counter(), collections.Counter(), []
            for start, end, name in events:
                while stack and stack[-1][0] <= start:
                    stack.pop()
                if stack:
                    own[stack[-1][1]] -= end - start
                key = name.split(" = ")[0]
                own[key] += end - start
                count[key] += 1
                stack.append((end, key))
            total = sum(own.values())
            print(f"{plane.name}: {total / 1e6:.1f} ms of ops; by self time:")
            text = {e[2].split(" = ")[0]: e[2] for e in events}
            for key, ns in own.most_common(top):
                share = 100 * ns / total
                print(f"  {ns / 1e6:8.2f} ms  {share:5.1f}%  x{count[key]:<5d} {text[key][:140]}")


if __name__ == "__main__":
    part, args = sys.argv[1], sys.argv[2:]
    if part == "latency":
        latency()
    elif part == "gymvec":
        gymvec()
    elif part == "ale":
        ale()
    elif part == "catch":
        catch([int(a) for a in args])
    elif part == "trace":
        trace(int(args[0]), args[1] if len(args) > 1 else os.environ.get("OUT", "."))
    elif part == "trace-preset":
        out = args[3] if len(args) > 3 else os.environ.get("OUT", ".")
        trace_preset(args[0], args[1], int(args[2]), out)
    elif part == "trace-run":
        trace_run(args[0], args[1], args[2:])
    else:
        allowed = "latency, gymvec, ale, catch, trace, trace-preset, trace-run"
        sys.exit(f"unknown part {part!r} (allowed: {allowed})")
