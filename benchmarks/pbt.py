"""Population-based training against the same initial configs trained without it.

PPO on Breakout-MinAtar with its preset (`podracer.agents.presets`), 8 members: 4 learning
rates x 2 entropy costs, seed 0, `--steps` env steps per member, as one program each:

* sweep: the 8 configs as they start (`--sweep`), each trained alone;
* PBT: the same 8 with `--pbt-interval` (every `--steps / 10` env steps by default): the
  worst quarter copy one of the best quarter and scale its values by 0.8 or 1.2.

Prints each program's wall time and aggregate SPS, every member's final return (its mean
over the last 10% of its env steps, as `podracer plot` defines it), the best of each, and
the PBT run's lineage (who copied whom at each step, and the learning rates after it).

    uv run python benchmarks/pbt.py [--steps 10000000] [--env gymnax:Breakout-MinAtar]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

SWEEP = ("ppo.learning_rate=1e-4,3e-4,1e-3,3e-3", "ppo.entropy_cost=0.003,0.01")


def run(env: str, steps: int, pbt_interval: int):
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train

    config, _ = AnakinConfig.from_preset(
        env=env, agent="ppo", total_env_steps=steps, sweep=SWEEP, pbt_interval=pbt_interval,
        progress=False, tensorboard=False, runs_root=tempfile.mkdtemp(prefix="pbt-"),
        run_name="run",
    )  # fmt: skip
    start = time.perf_counter()
    result = train(config)
    return result, time.perf_counter() - start


def finals(history) -> list[float]:
    from podracer.runs.result import history_return

    members = sorted({r["member"] for r in history})
    return [history_return([r for r in history if r["member"] == m]) for m in members]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="gymnax:Breakout-MinAtar")
    parser.add_argument("--steps", type=int, default=10_000_000, help="env steps per member")
    parser.add_argument("--pbt-interval", type=int, default=0, help="default: steps / 10")
    args = parser.parse_args()
    interval = args.pbt_interval or args.steps // 10
    table = {}
    for name, pbt in (("sweep", 0), ("PBT", interval)):
        result, wall = run(args.env, args.steps, pbt)
        table[name] = (result, wall, finals(result.history))
    print(f"\nPPO on {args.env}, 8 members x {args.steps:,} steps, PBT every {interval:,} steps")
    for name, (result, wall, f) in table.items():
        print(f"{name:>6}: {wall:6.0f} s wall, {result.sps * 8:9,.0f} aggregate SPS; finals "
              f"{' '.join(f'{x:.1f}' for x in f)}; best {max(f):.1f}")  # fmt: skip
    path = os.path.join(table["PBT"][0].run_dir, "pbt.jsonl")
    with open(path) as fh:
        for line in map(json.loads, fh):
            copies = {m: s for m, s in enumerate(line["sources"]) if s != m}
            lrs = line["values"]["sweep/ppo.learning_rate"]
            print(f"  step {line['env_steps']:>10,}: copies {copies}; lr "
                  f"{' '.join(f'{v:.2g}' for v in lrs)}")  # fmt: skip


if __name__ == "__main__":
    main()
