"""What rows within chunks cost on Anakin: `train()` at its default (about 100 rows, the
chunk binning its metrics by row) against a row per chunk (`--log-interval` of a chunk),
interleaved in one process, at PureJaxRL's CartPole config (4 envs, 10 chunks, seed 0 on
every run). Each pair runs back to back in alternating order; printed are both sides'
median SPS and the per-pair ratio, median [lowest, highest]. The two sides train the
same (tests/test_runtime.py checks it bit for bit); only the rows differ.

    uv run python benchmarks/harness_ab.py [--pairs 5] [--steps 200000]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

from anakin_vs_plain import Setting  # beside this script
from anakin_vs_plain import anakin_config


def ab(name: str, a, b, pairs: int) -> None:
    sps = {"a": [], "b": []}
    for i in range(pairs):
        for side in ("a", "b") if i % 2 == 0 else ("b", "a"):
            sps[side].append((a if side == "a" else b)(f"{i}{side}"))
    ratios = [x / y for x, y in zip(sps["a"], sps["b"], strict=True)]
    print(f"{name}: {statistics.median(sps['a']):,.0f} / {statistics.median(sps['b']):,.0f} SPS, "
          f"ratio {statistics.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]",
          flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200_000)
    args = parser.parse_args()

    from podracer.anakin import train

    s = Setting("CartPole, 4 envs", "CartPole-v1", 4, 128, 4, 4, "tanh", 2.5e-4, args.steps)
    base = anakin_config(s, tensorboard=True)

    def run(tag: str, **changes) -> float:
        config = dataclasses.replace(base, runs_root=f"{base.runs_root}/{tag}", **changes)
        return train(config).sps

    ab("default rows (~100) / a row per chunk", lambda t: run("h" + t, log_interval=0),
       lambda t: run("c" + t, log_interval=base.steps_per_chunk), args.pairs)  # fmt: skip


if __name__ == "__main__":
    main()
