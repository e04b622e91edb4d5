"""MuZero on Anakin: frames per second, search versus learning, and returns (figures only).

1. Catch and gymnax CartPole-v1: training frames per second after compile, compile
   time, wall time (compile included), training return (search-sampled actions) and the
   first env step count where it reached the target (Catch 0.9, CartPole 475).
2. The share of a chunk spent acting (a search on every step + env step) versus learning
   (unroll, loss, gradient, optimizer): an act-only chunk with the same rollouts and no
   update, timed against the full chunk.

Peer figure (issue 6): Stoix's Anakin MuZero (mctx, 1024 envs) runs CartPole-v1 at about
860 steps/s with 48 s of compile, and its return is still 30-100 after 10 minutes.

    python benchmarks/muzero.py                       # Catch, CartPole, timing split
    python benchmarks/muzero.py --quick               # Catch and its timing split only
    python benchmarks/muzero.py --cartpole-steps 4000000
"""

from __future__ import annotations

import argparse
import time

# The learning configuration (see packages/agents/tests/test_muzero.py).
ANAKIN = dict(
    num_envs=32, rollout_length=16, updates_per_chunk=100, progress=False, tensorboard=False
)


def anakin_config(env: str, total_env_steps: int):
    """The test's configuration: MuZeroConfig defaults (PUCT, 8 simulations), a greedy
    evaluation (deterministic search) after the last chunk."""
    from podracer.anakin import AnakinConfig

    steps_per_chunk = ANAKIN["num_envs"] * ANAKIN["rollout_length"] * ANAKIN["updates_per_chunk"]
    num_chunks = -(-total_env_steps // steps_per_chunk)
    return AnakinConfig(
        env=env,
        agent="muzero",
        total_env_steps=total_env_steps,
        eval_every_chunks=num_chunks,
        eval_max_steps=500,
        **ANAKIN,
    )


def learn(name: str, config, target: float) -> dict:
    from podracer.anakin import final_return
    from podracer.anakin import train

    t0 = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - t0
    reached = next(
        (h["env_steps"] for h in result.history if h["charts/episodic_return"] >= target), None
    )
    return {
        "task": name,
        "sps": result.sps,
        "compile_s": result.compile_seconds,
        "wall_s": wall,
        "env_steps": result.env_steps,
        "final_return": final_return(result, last=2),
        "reached": reached,
        "greedy": result.history[-1].get("eval/episodic_return", float("nan")),
    }


def timing_split(config, repeats: int = 2) -> dict:
    """Seconds per chunk: full training chunk versus the same rollouts without updates."""
    import jax

    from podracer.agents import make_agent
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.anakin import make_rollout
    from podracer.envs import make

    env = make(config.env)
    agent = make_agent("muzero", env.spec, config.muzero)
    mesh = make_mesh(1)
    T, updates = config.rollout_length, config.updates_per_chunk
    state = make_init(agent, env, config.num_envs, mesh)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, T, updates, mesh)
    rollout = make_rollout(agent, env, T)

    @jax.jit
    def act_only(carry):
        params, env_state, timestep, key = carry

        def body(_, c):
            _, (es, ts, k) = rollout(params, *c)
            return es, ts, k

        es, ts, k = jax.lax.fori_loop(0, updates, body, (env_state, timestep, key))
        return (params, es, ts, k), ts.reward.sum()

    def timed(fn, arg):
        arg, out = fn(arg)  # compile + first run
        jax.block_until_ready(out)
        t0 = time.perf_counter()
        for _ in range(repeats):
            arg, out = fn(arg)
        jax.block_until_ready(out)
        return (time.perf_counter() - t0) / repeats

    act_s = timed(act_only, (state.train.params, state.env_state, state.timestep, state.env_key))
    train_s = timed(chunk, state)
    frames = config.num_envs * T * updates
    return {
        "env": config.env,
        "train_fps": frames / train_s,
        "act_fps": frames / act_s,
        "act_share": act_s / train_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="Catch only")
    parser.add_argument("--catch-steps", type=int, default=1_433_600)
    parser.add_argument("--cartpole-steps", type=int, default=3_072_000)
    args = parser.parse_args()

    tasks = [("Catch", "catch", args.catch_steps, 0.9)]
    if not args.quick:
        tasks.append(("CartPole-v1", "gymnax:CartPole-v1", args.cartpole_steps, 475.0))
    rows = [learn(name, anakin_config(env, steps), target) for name, env, steps, target in tasks]
    print("## MuZero (PUCT, 8 simulations) on Anakin, 1 device, 32 envs x 16 steps per update")
    print("## train return: search-sampled actions (root noise, temperature 1), last 2 chunks")
    print(
        f"{'task':>12} {'SPS':>8} {'compile s':>10} {'wall s':>8} {'steps':>11} {'reached at':>11} "
        f"{'train return':>13} {'greedy return':>14}"
    )
    for r in rows:
        reached = f"{r['reached']:,}" if r["reached"] else "-"
        print(
            f"{r['task']:>12} {r['sps']:>8,.0f} {r['compile_s']:>10.1f} {r['wall_s']:>8.1f} "
            f"{r['env_steps']:>11,} {reached:>11} {r['final_return']:>13.2f} {r['greedy']:>14.2f}",
            flush=True,
        )

    print("\n## Search versus learning (same rollouts: act-only chunk vs full chunk)")
    print(f"{'env':>22} {'train FPS':>10} {'act-only FPS':>13} {'acting share':>13}")
    for _, env, _, _ in tasks:
        r = timing_split(anakin_config(env, 1))
        fps = f"{r['train_fps']:>10,.0f} {r['act_fps']:>13,.0f}"
        print(f"{r['env']:>22} {fps} {r['act_share']:>13.1%}")


if __name__ == "__main__":
    main()
