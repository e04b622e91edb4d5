"""A hyperparameter sweep as one Anakin program against its members run one by one.

PureJaxRL's CartPole PPO (4 envs x 128 steps, 4 epochs x 4 minibatches, lr annealed) at
a grid of 4 learning rates x 4 entropy costs, `--steps` env steps per member:

* sweep: `--sweep ppo.learning_rate=... --sweep ppo.entropy_cost=...`, one program of 16
  members;
* sequence: the 16 single runs with the same values and seed, one after another, in this
  process (each compiles its own program, as separate runs do).

Prints the wall time of each (compiles included: what a researcher waits for), the
aggregate SPS after compiling (`RunResult.sps`, a run's rate after its first chunk, times
its members; for the sequence, all steps over the sum of each run's steps at its rate),
their ratios, and how long each member's curve stays equal to its single run's: the rows
before `losses/total` first differs by more than 1e-4 (relative). The two programs round
differently in the last bit (vmapped over members; the single run's values are
compile-time constants) and training amplifies that: the curves agree exactly at first
and part later, as a multi-seed run's seeds part from their single runs
(packages/anakin/tests/test_seeds.py holds both to 1e-4 over short runs).

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
    sweep_after = result.env_steps / result.sps  # seconds at the steady rate
    seq_wall, seq_after, agree, finals = 0.0, 0.0, [], []
    for m, (lr, ent) in enumerate((lr, ent) for lr in lrs for ent in ents):
        alone, wall = timed(config(args.steps, **{"ppo.learning_rate": lr,
                                                   "ppo.entropy_cost": ent}))  # fmt: skip
        seq_wall += wall
        seq_after += alone.env_steps / alone.sps
        rows = [r for r in result.history if r["member"] == m]
        a, b = curve(rows, "losses/total"), curve(alone.history, "losses/total")
        apart = np.abs(a - b) > 1e-4 * np.abs(b)
        agree.append(int(np.argmax(apart)) if apart.any() else len(a))
        last = lambda h: np.nanmean(curve(h, "charts/episodic_return")[-10:])  # noqa: E731
        finals.append((last(rows), last(alone.history)))
    steps = result.env_steps * members
    print(f"\nPPO CartPole-v1 (PureJaxRL's config), {members} members x {args.steps:,} steps")
    print(f"{'':>10} {'wall s':>8} {'aggregate SPS (after compile)':>30}")
    print(f"{'sweep':>10} {sweep_wall:>8.1f} {steps / sweep_after:>30,.0f}")
    print(f"{'sequence':>10} {seq_wall:>8.1f} {steps / seq_after:>30,.0f}")
    print(f"sweep / sequence: {seq_wall / sweep_wall:.2f}x wall clock, "
          f"{seq_after / sweep_after:.2f}x aggregate SPS after compile")  # fmt: skip
    rows = len([r for r in result.history if r["member"] == 0])
    print(f"rows equal (losses/total within 1e-4) before a member's curve parts from its single "
          f"run's, of {rows}: min {min(agree)}, median {int(np.median(agree))}")  # fmt: skip
    print("final return (last 10 rows), sweep against sequence, by member:")
    for m, (ours, alone) in enumerate(finals):
        print(
            f"  lr {lrs[m // len(ents)]:<7g} entropy {ents[m % len(ents)]:<6g} "
            f"{ours:7.1f} {alone:7.1f}"
        )


if __name__ == "__main__":
    main()
