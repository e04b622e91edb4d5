"""Continuous control with PPO (Gaussian policy) on both runtimes, with the presets.

* Anakin (gymnax, several seeds as one vmapped program, `--num-seeds`): Pendulum-v1 and
  MountainCarContinuous-v0 with the `control` preset (gymnax-blines' PPO layout: 32 envs
  x 16 steps, 1e6 steps). Targets -200 and 90 (gymnax-blines' PPO: -130 and 92).
* Sebulba (envpool MuJoCo, one process per seed, `sebulba --seed k`): HalfCheetah-v4
  (target 1500 after 1e6 steps, about CleanRL's continuous PPO) and Hopper-v4 (measured)
  with the `mujoco` preset (CleanRL's ppo_continuous_action as 8 envs x 256 steps).

Each task's runs go to `<runs-root>/<time>/`; the curves (training return and greedy
evaluation, mean over seeds with a 95% bootstrap band) and `summary.csv` of each task go
to `<out>/<task>/` through `podracer.runs.tools.plot.plot_runs`. Prints one line per
task: the final training return (each seed's mean over the last 10% of its steps, then
the mean over seeds), each seed's, the last greedy evaluation, SPS and wall time.

    uv run python benchmarks/continuous.py [--tasks pendulum mountaincar halfcheetah hopper]
        [--seeds 3] [--steps N] [--out benchmarks/results/continuous]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from typing import NamedTuple

import numpy as np


class Task(NamedTuple):
    runtime: str  # "anakin" or "sebulba"
    env: str
    target: float | None  # the figure to reach (final training return, mean over seeds)
    reference: str  # where the target comes from
    eval_episodes: int


TASKS = {
    "pendulum": Task("anakin", "gymnax:Pendulum-v1", -200.0, "gymnax-blines PPO -130", 64),
    "mountaincar": Task(
        "anakin", "gymnax:MountainCarContinuous-v0", 90.0, "gymnax-blines PPO 92", 64
    ),
    "halfcheetah": Task(
        "sebulba", "envpool:HalfCheetah-v4", 1500.0, "CleanRL PPO ~1500 at 1e6", 10
    ),
    "hopper": Task("sebulba", "envpool:Hopper-v4", None, "measured", 10),
}
METRICS = ("charts/episodic_return", "eval/episodic_return")


def run_anakin(task: Task, name: str, root: str, seeds: int, steps: int | None) -> str:
    """All seeds as one program; the preset of the env's family (`control`)."""
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train

    overrides = {} if steps is None else {"total_env_steps": steps}
    config, source = AnakinConfig.from_preset(
        env=task.env, agent="ppo", num_seeds=seeds, run_name=name, runs_root=root,
        eval_episodes=task.eval_episodes, tensorboard=False, **overrides,
    )  # fmt: skip
    print(f"{name}: {source}", flush=True)
    # A greedy evaluation every fifth of the run (and so at its end).
    steps_per_chunk = config.steps_per_chunk
    chunks = max(1, config.num_chunks // 5)
    train(dataclasses.replace(config, eval_interval=chunks * steps_per_chunk))
    return os.path.join(root, name)


def run_sebulba(task: Task, name: str, root: str, seed: int, steps: int | None) -> str:
    """One seed as its own `sebulba` process with the preset of the env's family."""
    argv = [sys.executable, "-m", "podracer.sebulba.cli", "--env", task.env, "--agent", "ppo",
            "--seed", str(seed), "--run-name", name, "--runs-root", root, "--no-tensorboard",
            "--eval-episodes", str(task.eval_episodes)]  # fmt: skip
    total = steps or 1_000_000  # the mujoco preset's budget
    argv += ["--total-env-steps", str(total), "--eval-interval", str(total // 5)]
    subprocess.run(argv, check=True)
    return os.path.join(root, name)


def last_evals(paths: list[str]) -> list[float]:
    """The last greedy evaluation of each seed."""
    from podracer.runs.tools.aggregate import series
    from podracer.runs.tools.records import load_runs

    values = []
    for run in load_runs(paths):
        _, evals = series(run, "eval/episodic_return")
        values.append(float(evals[-1]) if len(evals) else float("nan"))
    return values


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, help="env steps per seed (default: the preset's)")
    parser.add_argument("--runs-root", default="runs/continuous")
    parser.add_argument("--out", default="benchmarks/results/continuous")
    args = parser.parse_args()

    from podracer.runs.tools.plot import plot_runs

    root = os.path.join(args.runs_root, time.strftime("%Y%m%d-%H%M%S"))
    lines = []
    for name in args.tasks:
        task = TASKS[name]
        start = time.perf_counter()
        if task.runtime == "anakin":
            paths = [run_anakin(task, f"{name}_ppo", root, args.seeds, args.steps)]
        else:
            paths = [run_sebulba(task, f"{name}_ppo-{k}", root, k, args.steps)
                     for k in range(args.seeds)]  # fmt: skip
        wall = time.perf_counter() - start
        result = plot_runs(paths, METRICS, out=os.path.join(args.out, name), target=task.target,
                           labels=[f"{task.runtime} ppo {task.env}"])  # fmt: skip
        print(result.table, flush=True)
        summary = result.summaries[0]
        evals = last_evals(paths)
        verdict = ""
        if task.target is not None:
            verdict = "reached" if summary.final_mean >= task.target else "NOT reached"
            verdict = f"target {task.target:g} {verdict} ({task.reference})"
        lines.append(
            f"{task.runtime:8s} {task.env:32s} {summary.num_seeds} seeds: final return "
            f"{summary.final_mean:8.1f} (seeds {', '.join(f'{v:.1f}' for v in summary.final)}), "
            f"greedy {np.nanmean(evals):8.1f}, {summary.sps:,.0f} SPS per seed, {wall:.0f} s; "
            f"{verdict}"
        )
        print(lines[-1], flush=True)
    print("\nPPO on continuous control (final: each seed's last 10% of steps, mean over seeds)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
