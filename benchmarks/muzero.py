"""MuZero on Anakin and Sebulba: frames per second, compile, time to target, search vs learning.

One table, one row per task (Catch, gymnax CartPole-v1), each trained with the
`MuZeroConfig` defaults (Gumbel search, sequence replay: see the agent's module doc):

* FPS: training frames per second after the first (compiling) chunk;
* compile s: the first chunk's time beyond a steady chunk;
* to target: wall time (compile included, evaluations included) and env steps until the
  greedy evaluation (deterministic search, `eval_episodes` episodes) first reaches the target
  (Catch 0.9, CartPole 475), within the task's wall-clock budget;
* final: the training return (search-sampled actions, with exploration) of the last two
  chunks and the last greedy evaluation;
* search / learning: the share of a chunk spent acting (a search on every step and the
  env step) versus learning (replay, unroll, loss, gradient, optimizer), from an act-only
  chunk with the same rollouts timed against the full chunk.

Then MuZero on Sebulba (`--sebulba-steps`, envpool CartPole-v1, the same defaults): SPS,
best and last training return, a final greedy evaluation, and the actor's seconds per
rollout (env steps and a search per step, one compiled XLA loop) against the learner's
seconds per update (replay, unroll, loss, gradient), which overlap in time.

Peer figure (issue 6): Stoix's Anakin MuZero (mctx, 1024 envs) runs CartPole-v1 at about
860 steps/s with 48 s of compile, and its return is still 30-100 after 10 minutes.

    python benchmarks/muzero.py                  # Catch, then CartPole (10-minute budget)
    python benchmarks/muzero.py --tasks cartpole --seconds 600
    python benchmarks/muzero.py --tasks catch --seconds 60 --sebulba-steps 300000
"""

from __future__ import annotations

import argparse
import math
import time

# Actor batch: 32 envs x 16 steps per rollout; the learner batch is set by the replay.
ANAKIN = dict(
    agent="muzero",
    num_envs=32,
    rollout_length=16,
    updates_per_chunk=50,
    total_env_steps=100_000_000,  # the wall-clock budget ends the run
    eval_interval=2 * 32 * 16 * 50,  # every 2 chunks
    eval_episodes=32,
    eval_max_steps=500,
    progress=False,
    tensorboard=False,
)
TASKS = {  # name -> (env, target, default wall-clock budget in seconds)
    "catch": ("catch", 0.9, 240.0),
    "cartpole": ("gymnax:CartPole-v1", 475.0, 600.0),
}


def anakin_config(env: str, seconds: float, **overrides):
    from podracer.anakin import AnakinConfig

    return AnakinConfig(**{**ANAKIN, "env": env, "max_wall_seconds": seconds, **overrides})


def learn(config, target: float) -> dict:
    from podracer.anakin import train
    from podracer.runs import final_return

    result = train(config)
    evals = [h for h in result.history if "eval/episodic_return" in h]
    reached = next((h for h in evals if h["eval/episodic_return"] >= target), None)
    return {
        "fps": result.sps,
        "compile_s": result.compile_seconds,
        "wall_s": result.history[-1]["timing/elapsed"],
        "steps": result.env_steps,
        "reached_s": reached["timing/elapsed"] if reached else math.nan,
        "reached_steps": reached["env_steps"] if reached else None,
        "train_return": final_return(result, last=2),
        "eval_return": evals[-1]["eval/episodic_return"] if evals else math.nan,
    }


def acting_share(config, repeats: int = 2) -> float:
    """Seconds of an act-only chunk (same rollouts, no learning) over a full chunk's."""
    import jax

    from podracer.agents import make_agent
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.anakin import make_rollout
    from podracer.envs import make

    env = make(config.env)
    agent = make_agent("muzero", env.spec, config.agent_config)
    mesh = make_mesh(1)
    T, updates = config.rollout_length, config.updates_per_chunk
    state = make_init(agent, env, config.num_envs, mesh, T)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, T, updates, mesh)
    rollout = make_rollout(agent, env, T)

    @jax.jit
    def act_only(carry):
        params, env_state, timestep, key = carry

        def body(_, c):
            _, (es, ts, k, _) = rollout(params, *c, (), 0)
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
    return act_s / train_s


def sebulba(total_env_steps: int, seed: int) -> dict:
    """MuZero on Sebulba (envpool CartPole, defaults: 1 actor thread x 32 envs x 16 steps,
    sharing device 0 with the learner): SPS, returns and the actor's and learner's seconds."""
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import train

    config, _ = SebulbaConfig.from_preset(  # the muzero preset: 32 envs x 16 steps
        agent="muzero", total_env_steps=total_env_steps, seed=seed, log_interval=20 * 512,
        eval_interval=10**9, progress=False, tensorboard=False,
    )  # fmt: skip
    start = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - start
    rows = result.history
    returns = [h["charts/episodic_return"] for h in rows]
    # Per-rollout actor seconds in env steps + search against per-update learner seconds,
    # averaged over the logged rows after the first. The XLA loop (CPU actor device) times
    # env and search together; the Python loop (accelerator actor device) times them apart.
    steady = rows[1:] or rows
    actor_phases = (
        "timing/actor_env_and_inference", "timing/actor_env", "timing/actor_inference",
        "timing/actor_device_to_host",
    )  # fmt: skip
    act = sum(h.get(k, 0.0) for h in steady for k in actor_phases) / len(steady)
    learn = sum(h["timing/learner_update"] for h in steady) / len(steady)
    return {
        "sps": result.sps, "wall_s": wall, "steps": result.env_steps,
        "best_return": max(returns), "train_return": returns[-1],
        "eval_return": rows[-1].get("eval/episodic_return", math.nan),
        "act_s": act, "learn_s": learn,
        "layout": f"{config.actor_threads_per_device} actor thread x {config.envs_per_thread} envs"
        f" x {config.rollout_length} steps",
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS))
    parser.add_argument("--seconds", type=float, help="wall-clock budget per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sebulba-steps", type=int, default=1_000_000, help="Sebulba envpool CartPole (0: skip)"
    )
    args = parser.parse_args()
    import jax

    device = jax.devices()[0].device_kind
    rows = []
    for name in args.tasks:
        env, target, budget = TASKS[name]
        config = anakin_config(env, args.seconds or budget, seed=args.seed)
        r = learn(config, target)
        r["act_share"] = acting_share(config)
        rows.append((name, target, r))

    m = anakin_config("catch", 1).agent_config  # the MuZeroConfig defaults
    print(
        f"## MuZero on Anakin, 1 device ({device}): {ANAKIN['num_envs']} envs x "
        f"{ANAKIN['rollout_length']} steps per rollout; "
        f"{m.search.policy} search, {m.search.num_simulations} simulations; "
        f"replay {m.replay.capacity} sequences, {m.replay.updates_per_rollout} x "
        f"{m.replay.sequences_per_update} sampled per rollout"
    )
    print(
        f"{'task':>9} {'FPS':>7} {'compile s':>9} {'target':>6} {'to target s':>11} "
        f"{'at steps':>10} {'wall s':>7} {'steps':>10} {'train ret':>9} {'eval ret':>8} "
        f"{'search':>6} {'learning':>8}"
    )
    for name, target, r in rows:
        steps = f"{r['reached_steps']:,}" if r["reached_steps"] else "-"
        print(
            f"{name:>9} {r['fps']:>7,.0f} {r['compile_s']:>9.1f} {target:>6g} "
            f"{r['reached_s']:>11.0f} {steps:>10} {r['wall_s']:>7.0f} {r['steps']:>10,} "
            f"{r['train_return']:>9.2f} {r['eval_return']:>8.2f} "
            f"{r['act_share']:>6.0%} {1 - r['act_share']:>8.0%}",
            flush=True,
        )

    if args.sebulba_steps:
        r = sebulba(args.sebulba_steps, args.seed)
        print(f"\n## MuZero on Sebulba: envpool CartPole-v1, {r['layout']}, 1 device ({device})")
        print(
            f"{'SPS':>7} {'wall s':>7} {'steps':>10} {'best train ret':>14} {'last train ret':>14} "
            f"{'eval ret':>8} {'actor s/rollout':>15} {'learner s/update':>16}"
        )
        print(
            f"{r['sps']:>7,.0f} {r['wall_s']:>7.0f} {r['steps']:>10,} {r['best_return']:>14.1f} "
            f"{r['train_return']:>14.1f} {r['eval_return']:>8.1f} {r['act_s']:>15.3f} "
            f"{r['learn_s']:>16.3f}"
        )


if __name__ == "__main__":
    main()
