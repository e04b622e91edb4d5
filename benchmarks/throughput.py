"""Throughput regression check: Anakin's PPO against the same PPO written plainly,
interleaved in one process, several repeats each; medians and ratios with their spread.

One repeat of a setting runs, back to back and in a rotating order (so neither side always
runs first after the other warmed the caches):

* plain: `anakin_vs_plain.plain_ppo`, the whole run as one program (PureJaxRL's shape),
  compiled once before the repeats;
* chunks: the project's compiled Anakin chunk called in a bare loop (compiled once; the
  first chunk of each repeat is excluded, as the harness excludes it);
* train: `podracer.anakin.train(config)`, everything the command line does per chunk
  (metric transfers, rows, writers, progress, checkpoints at their default interval); its
  SPS is the harness's own figure (env steps over their time, the measured compile left out).

Each figure is env steps per second. "train / chunks" is what the harness costs per
chunk; "chunks / plain" and "train / plain" what the project costs against the plain
program. The spread is the lowest and highest ratio over the repeats, each repeat's own
pair compared (machine noise moves both sides of a repeat together).

    uv run python benchmarks/throughput.py [--repeats 5] [--scale 1.0]
    python benchmarks/throughput.py --gpu --repeats 3 --profile DIR   # on an accelerator

`--gpu` runs accelerator-sized CartPole batches instead (16,384 and 131,072 envs);
`--profile DIR` adds one more `train` of each setting under cProfile and writes its host
time by function to DIR (where the harness's time goes, if `train/chunks` is short).
"""

from __future__ import annotations

import argparse
import statistics
import time

from anakin_vs_plain import Setting  # beside this script
from anakin_vs_plain import anakin_config
from anakin_vs_plain import plain_ppo


def settings(scale: float) -> list[Setting]:
    """PureJaxRL's CartPole config at 4 and 64 envs, and its MinAtar config."""
    return [
        Setting("CartPole, 4 envs", "CartPole-v1", 4, 128, 4, 4, "tanh", 2.5e-4, int(2e5 * scale)),
        Setting("CartPole, 64 envs", "CartPole-v1", 64, 128, 4, 4, "tanh", 2.5e-4,
                int(1e6 * scale)),
        Setting("Breakout-MinAtar", "Breakout-MinAtar", 64, 128, 4, 8, "relu", 5e-3,
                int(5e5 * scale)),
    ]  # fmt: skip


def gpu_settings(scale: float) -> list[Setting]:
    """PureJaxRL's CartPole PPO at accelerator batch sizes: 100 and 20 updates."""
    return [
        Setting("CartPole, 16,384 envs", "CartPole-v1", 16_384, 128, 4, 4, "tanh", 2.5e-4,
                int(16_384 * 128 * 100 * scale)),
        Setting("CartPole, 131,072 envs", "CartPole-v1", 131_072, 128, 4, 4, "tanh", 2.5e-4,
                int(131_072 * 128 * 20 * scale)),
    ]  # fmt: skip


def profile_train(s: Setting, directory: str) -> None:
    """One `train` of `s` under cProfile: its host time by function, cumulative and own."""
    import cProfile
    import os
    import pstats

    from podracer.anakin import train

    profiler = cProfile.Profile()
    result = profiler.runcall(train, anakin_config(s, tensorboard=True))
    os.makedirs(directory, exist_ok=True)
    name = "".join(c if c.isalnum() else "_" for c in s.name).strip("_")
    with open(os.path.join(directory, f"train_{name}.txt"), "w") as f:
        f.write(f"{s.name}: SPS {result.sps:,.0f}, compile {result.compile_seconds:.1f} s\n")
        stats = pstats.Stats(profiler, stream=f).strip_dirs()
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)


def plain_runner(s: Setting):
    import jax

    train, updates = plain_ppo(s)
    compiled = jax.jit(train).lower(jax.random.PRNGKey(0)).compile()
    steps = updates * s.num_envs * s.num_steps

    def run() -> float:
        start = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.PRNGKey(0)))
        return steps / (time.perf_counter() - start)

    return run


def chunk_runner(s: Setting):
    import jax

    from podracer.anakin.run import build
    from podracer.anakin.run import make_env
    from podracer.anakin.run import member_keys

    config = anakin_config(s)
    _, program = build(config, make_env(config))
    jax.block_until_ready(program.chunk(program.init(member_keys(config))))  # compiles

    def run() -> float:
        state, _ = jax.block_until_ready(program.chunk(program.init(member_keys(config))))
        start = time.perf_counter()
        for _ in range(config.num_chunks - 1):
            state, metrics = program.chunk(state)
        jax.block_until_ready((state, metrics))
        return (config.num_chunks - 1) * config.steps_per_chunk / (time.perf_counter() - start)

    return run


def train_runner(s: Setting):
    from podracer.anakin import train

    return lambda: train(anakin_config(s, tensorboard=True)).sps  # every writer


def spread(a: list[float], b: list[float]) -> str:
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}, {max(ratios):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0, help="times each setting's steps")
    parser.add_argument("--gpu", action="store_true", help="accelerator-sized batches")
    parser.add_argument("--profile", metavar="DIR", help="cProfile one more train per setting")
    args = parser.parse_args()
    print(f"{'PPO (steps)':<28} {'plain SPS':>10} {'chunks SPS':>11} {'train SPS':>10}  "
          f"{'chunks/plain':<20} {'train/plain':<20} {'train/chunks':<20}")  # fmt: skip
    for s in (gpu_settings if args.gpu else settings)(args.scale):
        runners = {"plain": plain_runner(s), "chunks": chunk_runner(s), "train": train_runner(s)}
        sps = {name: [] for name in runners}
        names = list(runners)
        for r in range(args.repeats):
            for name in names[r % 3 :] + names[: r % 3]:
                sps[name].append(runners[name]())
        med = {name: statistics.median(v) for name, v in sps.items()}
        print(
            f"{f'{s.name} ({s.total:,})':<28} {med['plain']:>10,.0f} {med['chunks']:>11,.0f} "
            f"{med['train']:>10,.0f}  {spread(sps['chunks'], sps['plain']):<20} "
            f"{spread(sps['train'], sps['plain']):<20} {spread(sps['train'], sps['chunks']):<20}",
            flush=True,
        )
        if args.profile:
            profile_train(s, args.profile)


if __name__ == "__main__":
    main()
