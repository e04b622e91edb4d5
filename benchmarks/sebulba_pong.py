"""Atari Pong-v5 with IMPALA and the Nature CNN on Sebulba: the learning curve (PNG).

A fixed frame budget sized for this 2-core CPU (about 45 minutes at the default; the
deep IMPALA ResNet is for accelerators). Writes runs/<run-name>/ (metrics, checkpoints)
and a PNG of the training return against frames; prints the return reached.

    uv run python benchmarks/sebulba_pong.py [--env-steps 2000000] [--png sebulba_pong.png]
"""

from __future__ import annotations

import argparse
import math


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--env-steps", type=int, default=2_000_000, help="agent steps (4 frames each)"
    )
    parser.add_argument("--envs-per-thread", type=int, default=16)
    parser.add_argument("--actor-threads", type=int, default=1)
    parser.add_argument("--run-name", default="sebulba_pong")
    parser.add_argument("--png", default="benchmarks/out/sebulba_pong.png")
    args = parser.parse_args()

    from podracer.agents import ImpalaConfig
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import final_return
    from podracer.sebulba import train

    config = SebulbaConfig(
        env="envpool:Pong-v5",
        agent="impala",
        envs_per_thread=args.envs_per_thread,
        actor_threads_per_device=args.actor_threads,
        rollout_length=20,
        trajectories_per_update=1,
        total_env_steps=args.env_steps,
        log_interval=20,
        checkpoint_interval=500,
        run_name=args.run_name,
        impala=ImpalaConfig(
            torso="nature_cnn",
            learning_rate=6e-4,
            entropy_cost=0.01,
            max_grad_norm=40.0,
            separate_critic=False,
        ),  # fmt: skip
    )
    result = train(config)
    steps = [h["env_steps"] * 4 for h in result.history]
    returns = [h["charts/episodic_return"] for h in result.history]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, returns)
    ax.set_xlabel("frames")
    ax.set_ylabel("training episodic return")
    ax.set_title(f"Sebulba IMPALA, Nature CNN, Pong-v5 ({result.sps:,.0f} steps/s)")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    ret = final_return(result)
    print(
        f"Pong-v5: {result.env_steps * 4:,} frames, {result.sps:,.0f} steps/s, final return "
        f"{'n/a' if math.isnan(ret) else f'{ret:.1f}'}; curve in {args.png}"
    )


if __name__ == "__main__":
    main()
