"""MuZero beside PPO on Anakin, and MuZero on Sebulba: SPS, compile, time to target, search.

One table, a row per task and agent (Catch, gymnax CartPole-v1; Breakout-MinAtar with
`--tasks breakout-minatar`), each agent trained as `anakin --env ENV --agent AGENT` runs it
(its preset for the task, total steps included), with greedy evaluations added every
`--eval-every` of the preset's steps:

* SPS: env steps per second after the compile (the run's own figure);
* compile s: what the run measured for its compile;
* to target: wall seconds (compile and evaluations included) and env steps until a greedy
  evaluation (deterministic search for MuZero, `eval_episodes` episodes) first reaches the
  target (Catch 0.9, CartPole 475, Breakout-MinAtar 40), within the preset's steps and the
  wall-clock budget (`--seconds`);
* final: the training return (with exploration) of the last two rows and the last greedy
  evaluation;
* search: MuZero's share of a chunk spent acting (a search on every step and the env
  step) against learning (replay, unroll, loss, gradient, optimizer), from an act-only
  chunk with the same rollouts timed against the full chunk.

Then MuZero on Sebulba (`--sebulba-steps`, envpool CartPole-v1, its preset): SPS, best
and last training return, a final greedy evaluation, and the actor's seconds per rollout
(env steps and a search per step, one compiled XLA loop) against the learner's seconds per
update (replay, unroll, loss, gradient), which overlap in time.

Peer figure (issue 6): Stoix's Anakin MuZero (mctx, 1024 envs) runs CartPole-v1 at about
860 steps/s with 48 s of compile, and its return is still 30-100 after 10 minutes.

    python benchmarks/muzero.py --sebulba-steps 0      # Catch and CartPole, MuZero and PPO
    python benchmarks/muzero.py --tasks breakout-minatar --seconds 1800 --sebulba-steps 0
    python benchmarks/muzero.py --tasks catch --agents muzero --sebulba-steps 300000
"""

from __future__ import annotations

import argparse
import math
import time

TASKS = {  # name -> (env, greedy target, eval episodes, eval max steps)
    "catch": ("catch", 0.9, 100, 500),
    "cartpole": ("gymnax:CartPole-v1", 475.0, 32, 500),
    "breakout-minatar": ("gymnax:Breakout-MinAtar", 40.0, 32, 2000),
}


def anakin_config(
    env: str, agent: str, seconds: float, evals: int, episodes: int, max_steps: int, **overrides
):
    """`anakin --env env --agent agent` as typed (its preset), greedy evaluations added."""
    from podracer.anakin import AnakinConfig

    config, _ = AnakinConfig.from_preset(env, agent)
    return config.replace(
        max_wall_seconds=seconds, eval_interval=max(1, config.total_env_steps // evals),
        eval_episodes=episodes, eval_max_steps=max_steps, progress=False, tensorboard=False,
        **overrides,
    )  # fmt: skip


def learn(config, target: float) -> dict:
    from podracer.anakin import train
    from podracer.runs import final_return

    result = train(config)
    evals = [h for h in result.history if "eval/episodic_return" in h]
    reached = next((h for h in evals if h["eval/episodic_return"] >= target), None)
    return {
        "sps": result.sps,
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
    from podracer.anakin import Plan
    from podracer.anakin import make_chunk
    from podracer.anakin import make_init
    from podracer.anakin import make_mesh
    from podracer.anakin import make_rollout
    from podracer.envs import make

    env = make(config.env)
    agent = make_agent("muzero", env.spec, config.agent_config)
    T, updates = config.rollout_length, min(config.updates_per_chunk, 20)
    plan = Plan(make_mesh(1), num_envs=config.num_envs, rollout_length=T, updates_per_chunk=updates)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, plan)
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
    parser.add_argument(
        "--tasks", nargs="+", choices=sorted(TASKS), default=["catch", "cartpole"]
    )  # fmt: skip
    parser.add_argument("--agents", nargs="+", default=["muzero", "ppo"])
    parser.add_argument("--seconds", type=float, default=900.0, help="wall-clock budget per run")
    parser.add_argument("--eval-every", type=int, default=20, help="evaluations per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sebulba-steps", type=int, default=1_000_000, help="Sebulba envpool CartPole (0: skip)"
    )
    args = parser.parse_args()
    import jax

    device = jax.devices()[0].device_kind
    print(f"## Anakin, 1 device ({device}), seed {args.seed}: each agent's preset for the task")
    print(
        f"{'task':>16} {'agent':>6} {'layout':>14} {'SPS':>9} {'compile s':>9} {'target':>6} "
        f"{'to target s':>11} {'at steps':>10} {'wall s':>7} {'steps':>10} {'train ret':>9} "
        f"{'eval ret':>8} {'search':>6}"
    )
    for name in args.tasks:
        env, target, episodes, max_steps = TASKS[name]
        for agent in args.agents:
            config = anakin_config(env, agent, args.seconds, args.eval_every, episodes,
                                   max_steps, seed=args.seed)  # fmt: skip
            r = learn(config, target)
            share = acting_share(config) if agent == "muzero" else math.nan
            steps = f"{r['reached_steps']:,}" if r["reached_steps"] else "-"
            layout = f"{config.num_envs}x{config.rollout_length}"
            print(
                f"{name:>16} {agent:>6} {layout:>14} {r['sps']:>9,.0f} {r['compile_s']:>9.1f} "
                f"{target:>6g} {r['reached_s']:>11.0f} {steps:>10} {r['wall_s']:>7.0f} "
                f"{r['steps']:>10,} {r['train_return']:>9.2f} {r['eval_return']:>8.2f} "
                f"{'' if math.isnan(share) else f'{share:.0%}':>6}",
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
