"""Many seeds in one program on Anakin: aggregate steps per second against one seed.

PureJaxRL's CartPole PPO (4 envs x 128 steps, 4 epochs x 4 minibatches) trained for
`--steps` env steps per seed, as 1, 8 and 32 seeds vmapped into one compiled program
(`--num-seeds`). Aggregate SPS counts every seed's steps; the run's wall time after the
first (compiling) chunk. Also prints each seed count's compile time and final return
(mean over seeds).

    uv run python benchmarks/seeds.py [--seeds 1 8 32] [--steps 500000]
"""

from __future__ import annotations

import argparse
import tempfile


def run(num_seeds: int, steps: int) -> dict:
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train
    from podracer.runs import final_return

    config, _ = AnakinConfig.from_preset(
        env="gymnax:CartPole-v1", agent="ppo", num_seeds=num_seeds, total_env_steps=steps,
        updates_per_chunk=max(1, steps // (4 * 128 * 10)), progress=False, tensorboard=False,
        runs_root=tempfile.mkdtemp(prefix="seeds-"),
    )  # fmt: skip
    result = train(config)
    return {
        "seeds": num_seeds,
        "sps_per_seed": result.sps,
        "aggregate_sps": result.sps * num_seeds,
        "compile_s": result.compile_seconds,
        "final_return": final_return(result, last=2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument("--steps", type=int, default=500_000, help="env steps per seed")
    args = parser.parse_args()
    rows = [run(n, args.steps) for n in args.seeds]
    base = rows[0]["aggregate_sps"]
    print(f"\nAnakin PPO, gymnax CartPole-v1, PureJaxRL's config, {args.steps:,} steps per seed")
    print(f"{'seeds':>6} {'aggregate SPS':>14} {'vs 1 seed':>10} {'SPS/seed':>10} "
          f"{'compile s':>10} {'return':>8}")  # fmt: skip
    for r in rows:
        speedup = r["aggregate_sps"] / base
        print(
            f"{r['seeds']:>6} {r['aggregate_sps']:>14,.0f} {speedup:>9.1f}x "
            f"{r['sps_per_seed']:>10,.0f} {r['compile_s']:>10.1f} {r['final_return']:>8.1f}"
        )


if __name__ == "__main__":
    main()
