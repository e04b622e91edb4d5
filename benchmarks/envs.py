"""Steps per second of raw gymnax / envpool vs the podracer.envs adapters over them.

    .venv/bin/python benchmarks/envs.py [--quick]

(a) JaxEnv: a jitted `lax.scan` of vmapped steps with uniformly random actions, raw
    gymnax `env.step(key, state, action, params)` vs `make("gymnax:...")`, and gymnax's
    Catch-bsuite vs our `make("catch")`.
(b) HostEnv: raw envpool (gymnasium API) `step` / `send`+`recv` vs `make_host("envpool:...")`
    in sync and async (batch_size = num_envs / 2) mode.

Raw and adapter runs alternate round by round (the machine may be shared); the table shows
the median steps per second and the median of the per-round ratios adapter / raw.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import podracer.envs as pe


def _scan_steps(step, reset, num_envs: int, num_steps: int, num_actions: int):
    """A jitted rollout of `num_steps` batched steps: `step(state, action, key)`."""

    def rollout(key):
        keys = jax.random.split(key, num_envs)
        state = jax.vmap(reset)(keys)

        def body(state, key):
            k_act, k_step = jax.random.split(key)
            actions = jax.random.randint(k_act, (num_envs,), 0, num_actions)
            state = jax.vmap(step)(state, actions, jax.random.split(k_step, num_envs))
            return state, ()

        state, _ = jax.lax.scan(body, state, jax.random.split(key, num_steps))
        return state

    return jax.jit(rollout)


def _time_jax(fn, key) -> float:
    t = time.perf_counter()
    jax.block_until_ready(fn(key))
    return time.perf_counter() - t


def _rounds(raw, ada, steps: int, rounds: int) -> tuple[float, float, float]:
    """Alternates timed calls `raw()`, `ada()` -> medians of raw sps, adapter sps, ratio."""
    raw_sps, ada_sps, ratios = [], [], []
    for _ in range(rounds):
        r = steps / raw()
        a = steps / ada()
        raw_sps.append(r)
        ada_sps.append(a)
        ratios.append(a / r)
    return statistics.median(raw_sps), statistics.median(ada_sps), statistics.median(ratios)


def bench_jax(quick: bool) -> list[tuple]:
    import gymnax

    rows = []
    num_steps = 50 if quick else 200
    rounds = 3 if quick else 7
    cases = [
        ("CartPole-v1", "gymnax:CartPole-v1"),
        ("Catch-bsuite", "gymnax:Catch-bsuite"),
        ("Catch-bsuite", "catch"),
    ]
    for num_envs in (256, 4096):
        for gymnax_name, ours_name in cases:
            env, params = gymnax.make(gymnax_name)
            ours = pe.make(ours_name)
            n = ours.spec.num_actions
            raw = _scan_steps(
                lambda s, a, k, env=env, params=params: env.step(k, s, a, params)[1],
                lambda k, env=env, params=params: env.reset(k, params)[1],
                num_envs, num_steps, n,
            )  # fmt: skip
            ada = _scan_steps(
                lambda s, a, k, ours=ours: ours.step(s, a, k)[0],
                lambda k, ours=ours: ours.reset(k)[0],
                num_envs, num_steps, n,
            )  # fmt: skip
            key = jax.random.key(0)
            _time_jax(raw, key), _time_jax(ada, key)  # compile
            steps = num_envs * num_steps
            r, a, ratio = _rounds(
                functools.partial(_time_jax, raw, key),
                functools.partial(_time_jax, ada, key),
                steps,
                rounds,
            )
            rows.append(
                (f"gymnax {gymnax_name}", ours_name, "jit scan", num_envs, r, a, ratio, None)
            )
    return rows


def _time_loop(fn, k: int) -> float:
    t = time.perf_counter()
    for i in range(k):
        fn(i)
    return time.perf_counter() - t


class _Replay:
    """Stands in for an envpool pool, returning one recorded output: times the adapter alone."""

    def __init__(self, output):
        self.output = output

    def step(self, actions):
        return self.output

    def recv(self):
        return self.output

    def send(self, actions, env_ids):
        pass


def _adapter_only_us(env, mode: str, acts: np.ndarray, k: int = 3000) -> float:
    """Microseconds per step the adapter adds on top of envpool (best of 5)."""
    if mode == "sync":
        output = env.pool.step(acts[0])
        stub = pe.EnvpoolEnv(_Replay(output), env.spec, env.num_envs, env.num_envs, False)

        def fn(i):
            stub.step(acts[i % 64])
    else:
        output = env.pool.recv()
        env.pool.send(acts[0, : env.batch_size], output[-1]["env_id"])
        stub = pe.EnvpoolEnv(_Replay(output), env.spec, env.num_envs, env.batch_size, False)

        def fn(i):
            _, ids = stub.recv()
            stub.send(acts[i % 64, : env.batch_size], ids)

    return min(_time_loop(fn, k) for _ in range(5)) / k * 1e6


def bench_envpool(quick: bool) -> list[tuple]:
    import envpool

    rows = []
    rounds = 5 if quick else 9
    cases = [("CartPole-v1", 16, 2000), ("CartPole-v1", 64, 1000), ("Pong-v5", 16, 50)]
    for task, num_envs, k in cases:
        k = k // 2 if quick else k
        rng = np.random.default_rng(0)
        for mode in ("sync", "async"):
            batch = num_envs if mode == "sync" else num_envs // 2
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", category=UserWarning)
                pool = envpool.make(
                    task, env_type="gymnasium", num_envs=num_envs, batch_size=batch, seed=0
                )
                pool.observation_space  # noqa: B018  (built lazily, with a float64 warning)
            env = pe.make_host(f"envpool:{task}", num_envs=num_envs, batch_size=batch, seed=0)
            acts = rng.integers(0, env.spec.num_actions, size=(64, num_envs), dtype=np.int32)
            if mode == "sync":
                pool.reset()
                env.reset()

                def raw(i, pool=pool, acts=acts):
                    pool.step(acts[i % 64])

                def ada(i, env=env, acts=acts):
                    env.step(acts[i % 64])
            else:
                pool.async_reset()
                env.async_reset()

                def raw(i, pool=pool, acts=acts, batch=batch):
                    info = pool.recv()[-1]
                    pool.send(acts[i % 64, :batch], info["env_id"])

                def ada(i, env=env, acts=acts, batch=batch):
                    _, ids = env.recv()
                    env.send(acts[i % 64, :batch], ids)

            _time_loop(raw, 20), _time_loop(ada, 20)  # warm up
            steps = k * batch
            r, a, ratio = _rounds(
                functools.partial(_time_loop, raw, k),
                functools.partial(_time_loop, ada, k),
                steps,
                rounds,
            )
            extra = _adapter_only_us(env, mode, acts)
            extra = (extra, 100 * extra / (batch / r * 1e6))  # us, % of a raw call
            rows.append((f"envpool {task}", f"envpool:{task}", mode, num_envs, r, a, ratio, extra))
            pool.close()
            env.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    parser.add_argument("--skip-jax", action="store_true")
    parser.add_argument("--skip-envpool", action="store_true")
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {jnp.zeros(()).dtype}")
    rows = []
    if not args.skip_jax:
        rows += bench_jax(args.quick)
    if not args.skip_envpool:
        rows += bench_envpool(args.quick)
    print(
        f"{'raw':22s} {'adapter':22s} {'mode':8s} {'envs':>5s} {'raw steps/s':>13s} "
        f"{'adapter steps/s':>15s} {'adapter/raw':>11s} {'adapter-only us/call (% of raw)':>32s}"
    )
    for raw, ada, mode, n, r, a, ratio, extra in rows:
        extra = "" if extra is None else f"{extra[0]:.1f} ({extra[1]:.1f}%)"
        print(
            f"{raw:22s} {ada:22s} {mode:8s} {n:5d} {r:13,.0f} {a:15,.0f} {ratio:11.3f} {extra:>32s}"
        )
    print(
        "adapter-only: the adapter's own time per step/recv+send on a replayed envpool output;"
        " % of the raw time per call (batch / raw steps/s): robust to a busy machine."
    )


if __name__ == "__main__":
    main()
