"""A hyperparameter sweep as one Anakin program against its members run one by one.

PureJaxRL's CartPole PPO (4 envs x 128 steps, 4 epochs x 4 minibatches, lr annealed) at
a grid of 4 learning rates x 4 entropy costs, `--steps` env steps per member:

* sweep: `--sweep ppo.learning_rate=... --sweep ppo.entropy_cost=...`, one program of 16
  members;
* sequence: the 16 single runs with the same values and seed, one after another, in this
  process (each compiles its own program, as separate runs do).

Prints the wall time of each (compiles included: what a researcher waits for) and the
aggregate SPS after compiling (each run's `RunResult.sps`, its rate after the first
chunk, times its members; for the sequence, all steps over the sum of each run's steps
at its rate), their ratios, and how far each member's curve is from its single run's
(the largest relative difference of `losses/total` and of the episodic return over all
rows: float tolerance, as the same program vmapped may fuse differently).

    uv run python benchmarks/sweep.py [--steps 500000] [--grid 4]
"""

from __future__ import annotations

import argparse
import tempfile
import time

LEARNING_RATES = (1e-4, 2.5e-4, 1e-3, 2.5e-3)
ENTROPY_COSTS = (0.0, 0.003, 0.01, 0.03)


def config(steps: int, **fields):
    from podracer.anakin import AnakinConfig

    base, _ = AnakinConfig.from_preset(
        env="gymnax:CartPole-v1", agent="ppo", total_env_steps=steps,
        updates_per_chunk=max(1, steps // (4 * 128 * 10)), progress=False, tensorboard=False,
        runs_root=tempfile.mkdtemp(prefix="sweep-"),
    )  # fmt: skip
    return base.replace(fields)


def timed(cfg):
    from podracer.anakin import train

    start = time.perf_counter()
    result = train(cfg)
    return result, time.perf_counter() - start


def curve(history, name):
    import numpy as np

    return np.array([r.get(name, np.nan) for r in history], np.float64)


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=500_000, help="env steps per member")
    parser.add_argument("--grid", type=int, default=4, help="values per field (<= 4)")
    args = parser.parse_args()
    lrs, ents = LEARNING_RATES[: args.grid], ENTROPY_COSTS[: args.grid]
    members = len(lrs) * len(ents)
    sweep = (
        "ppo.learning_rate=" + ",".join(map(str, lrs)),
        "ppo.entropy_cost=" + ",".join(map(str, ents)),
    )
    result, sweep_wall = timed(config(args.steps, sweep=sweep))
    sweep_after = result.env_steps * members / result.sps  # seconds at the steady rate
    singles, seq_wall, seq_after, worst = [], 0.0, 0.0, 0.0
    for m, (lr, ent) in enumerate((lr, ent) for lr in lrs for ent in ents):
        alone, wall = timed(config(args.steps, **{"ppo.learning_rate": lr,
                                                   "ppo.entropy_cost": ent}))  # fmt: skip
        seq_wall += wall
        seq_after += alone.env_steps / alone.sps
        rows = [r for r in result.history if r["member"] == m]
        for name in ("losses/total", "charts/episodic_return"):
            a, b = curve(rows, name), curve(alone.history, name)
            both = np.isfinite(a) & np.isfinite(b)
            assert (np.isfinite(a) == np.isfinite(b)).all(), (m, name)
            rel = np.abs(a[both] - b[both]) / np.maximum(np.abs(b[both]), 1e-6)
            worst = max(worst, float(rel.max(initial=0.0)))
        singles.append(alone)
    steps = result.env_steps * members
    print(f"\nPPO CartPole-v1 (PureJaxRL's config), {members} members x {args.steps:,} steps")
    print(f"{'':>10} {'wall s':>8} {'aggregate SPS (after compile)':>30}")
    print(f"{'sweep':>10} {sweep_wall:>8.1f} {steps / sweep_after:>30,.0f}")
    print(f"{'sequence':>10} {seq_wall:>8.1f} {steps / seq_after:>30,.0f}")
    print(f"sweep / sequence: {seq_wall / sweep_wall:.2f}x wall clock, "
          f"{seq_after / sweep_after:.2f}x aggregate SPS after compile")  # fmt: skip
    print(f"members against their single runs: largest relative difference {worst:.2e} "
          "(losses/total, charts/episodic_return, every row)")
    finals = [np.nanmean(curve([r for r in result.history if r["member"] == m],
                               "charts/episodic_return")[-2:]) for m in range(members)]  # fmt: skip
    best = int(np.nanargmax(finals))
    print(f"best member {best}: lr {lrs[best // len(ents)]}, entropy {ents[best % len(ents)]}, "
          f"final return {finals[best]:.1f}")


if __name__ == "__main__":
    main()
