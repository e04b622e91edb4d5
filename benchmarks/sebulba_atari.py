"""Atari on Sebulba at a fixed frame budget sized for a 2-core CPU: the learning curve.

Two agents, both with the Nature CNN (the deep IMPALA ResNet is for accelerators):

* `impala` (default: Pong-v5): V-trace actor-critic, 16 envs x 20 steps per update.
  8e5 agent steps (3.2M frames) take about 40 minutes at ~340 steps/s on this CPU,
  where the learner's update is most of the cost.
* `muzero` (e.g. Breakout-v5): Gumbel MuZero, 8 simulations per step, a prioritised
  replay of sequences on the learner device, one update of 16 sequences per rollout
  (replay ratio about 1), the Nature CNN as the representation function.

Envs use the usual Atari training wrappers (episodic life, clipped rewards); the curve
shows the unclipped return of whole games. Writes runs/<run-name>/ (metrics,
checkpoints), a PNG of the training return against frames and the same points as CSV,
and prints the return reached.

    uv run python benchmarks/sebulba_atari.py [--agent impala] [--env Pong-v5] [--env-steps 800000]
    uv run python benchmarks/sebulba_atari.py --agent muzero --env Breakout-v5 --env-steps 400000
"""

from __future__ import annotations

import argparse
import dataclasses
import math


def make_config(args):
    from podracer.agents import ImpalaConfig
    from podracer.agents import MuZeroConfig
    from podracer.sebulba import SebulbaConfig

    return SebulbaConfig(
        env=f"envpool:{args.env}",
        agent=args.agent,
        envs_per_thread=args.envs_per_thread,
        actor_threads_per_device=args.actor_threads,
        rollout_length=20,
        trajectories_per_update=1,
        total_env_steps=args.env_steps,
        log_interval=20 * 20 * args.envs_per_thread * args.actor_threads,
        checkpoint_interval=500 * 20 * args.envs_per_thread * args.actor_threads,
        run_name=args.run_name or f"sebulba_{args.agent}_{args.env}",
        agent_config=ImpalaConfig(
            torso="nature_cnn",
            learning_rate=6e-4,
            entropy_cost=0.01,
            max_grad_norm=40.0,
            separate_critic=False,
        )
        if args.agent == "impala"
        else MuZeroConfig(
            torso="nature_cnn",
            latent_size=128,
            learning_rate=3e-4,
            # 1024 sequences of 21 frames (about 600 MB of uint8 observations): the last
            # 64 rollouts; one update of 16 sequences per rollout of 16, prioritised with
            # the agent's default exponents.
            replay=dataclasses.replace(
                MuZeroConfig().replay, capacity=1024, sequences_per_update=16,
                updates_per_rollout=1,
            ),  # fmt: skip
        ),
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agent", choices=("impala", "muzero"), default="impala")
    parser.add_argument("--env", default="Pong-v5", help="an envpool Atari task")
    parser.add_argument(
        "--env-steps", type=int, default=800_000, help="agent steps (4 frames each)"
    )
    parser.add_argument("--envs-per-thread", type=int, default=16)
    parser.add_argument("--actor-threads", type=int, default=1)
    parser.add_argument("--run-name", default=None, help="default: sebulba_<agent>_<env>")
    parser.add_argument("--png", default=None, help="default: benchmarks/out/<run-name>.png")
    args = parser.parse_args()

    from podracer.envs import AtariOptions
    from podracer.envs import make_host
    from podracer.runs import final_return
    from podracer.sebulba import train

    config = make_config(args)
    atari = AtariOptions(episodic_life=True, reward_clip=True)
    result = train(config, lambda n, seed: make_host(config.env, n, seed=seed, atari=atari))
    frames = [h["env_steps"] * 4 for h in result.history]
    returns = [h["charts/episodic_return"] for h in result.history]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    png = args.png or f"benchmarks/out/{config.run_name}.png"
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(frames, returns)
    ax.set_xlabel("frames")
    ax.set_ylabel("training episodic return")
    ax.set_title(f"Sebulba {args.agent}, Nature CNN, {args.env} ({result.sps:,.0f} steps/s)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    with open(png.removesuffix(".png") + ".csv", "w") as f:
        f.write("frames,episodic_return\n")
        f.writelines(f"{x},{y:.2f}\n" for x, y in zip(frames, returns, strict=True))
    ret = final_return(result)
    print(
        f"{args.env} {args.agent}: {result.env_steps * 4:,} frames, {result.sps:,.0f} steps/s, "
        f"final return {'n/a' if math.isnan(ret) else f'{ret:.1f}'}; curve in {png}"
    )


if __name__ == "__main__":
    main()
