"""Anakin on a MinAtar game (gymnax Breakout-MinAtar): the learning curve as a PNG.

    uv run python benchmarks/anakin_minatar.py [--agent ppo|impala] [--steps 5000000] \
        [--out benchmarks/out]

Prints the final training and evaluation returns and frames per second, and writes
`<out>/anakin_<env>_<agent>.png` and the metrics as JSON lines beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents.runs import final_return
from podracer.anakin import AnakinConfig
from podracer.anakin import train


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="gymnax:Breakout-MinAtar")
    parser.add_argument("--agent", default="ppo", choices=("ppo", "impala"))
    parser.add_argument("--steps", type=int, default=5_000_000)
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--out", default="benchmarks/out")
    args = parser.parse_args()

    # PureJaxRL's MinAtar PPO settings (MLP 256x256 on the flattened board).
    agents = {
        "ppo": PPOConfig(
            learning_rate=5e-4,
            hidden_sizes=(256, 256),
            activation="relu",
            num_minibatches=4,
            entropy_cost=0.01,
            separate_critic=False,
        ),
        "impala": ImpalaConfig(learning_rate=5e-4, hidden_sizes=(256, 256), activation="relu"),
    }
    config = AnakinConfig(
        env=args.env,
        agent=args.agent,
        num_envs=args.num_envs,
        rollout_length=128,
        updates_per_chunk=10,
        total_env_steps=args.steps,
        eval_interval=5 * args.num_envs * 128 * 10,  # every 5 chunks
        eval_episodes=32,
        progress=True,
        tensorboard=False,
        agent_config=agents[args.agent],
    )
    t0 = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - t0

    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"anakin_{args.env.split(':')[-1]}_{args.agent}")
    with open(stem + ".jsonl", "w") as f:
        f.writelines(json.dumps(h) + "\n" for h in result.history)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["env_steps"] for h in result.history]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, [h["charts/episodic_return"] for h in result.history], label="training return")
    evals = [
        (h["env_steps"], h["eval/episodic_return"])
        for h in result.history
        if "eval/episodic_return" in h
    ]
    if evals:
        ax.plot(*zip(*evals, strict=True), "o-", label="greedy evaluation")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episodic return")
    ax.set_title(f"Anakin {args.agent} on {args.env} ({result.sps:,.0f} SPS)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=100)
    last_eval = evals[-1][1] if evals else math.nan
    print(
        f"{args.env} {args.agent}: {result.env_steps:,} steps in {wall:.0f}s, "
        f"{result.sps:,.0f} SPS, final training return {final_return(result):.2f}, "
        f"final eval return {last_eval:.2f}; curve: {stem}.png"
    )


if __name__ == "__main__":
    main()
