"""The learning benchmark suite: standard small tasks, several seeds, against the peers.

    uv run python benchmarks/suite.py                    # every task not done yet
    uv run python benchmarks/suite.py --tasks anakin-ppo-CartPole-v1 --seeds 5
    uv run python benchmarks/suite.py --list

Each task trains one agent on one env with the preset the command line would use
(`<Config>.from_preset`), for its step budget, with `--seeds` seeds: on Anakin one run of
`num_seeds` vmapped seeds, on Sebulba one run (process) per seed. Runs live in
`runs/suite/`; a task whose runs exist but did not finish is resumed (the run harness
continues each from its newest checkpoint), a finished one is skipped (`--force` reruns).

Per task it writes `benchmarks/results/suite/<task>/`: every run's `config.json` and
`metrics.jsonl` (what the plot tool reads), `curve.png` (each seed and the IQM with its
95% bootstrap band, by `podracer plot`) and `summary.json`; and rebuilds
`benchmarks/results/suite/README.md`, the table of all tasks: final return (mean and IQM
with 95% intervals over seeds, the mean over the last 10% of each seed's logged steps),
steps and wall time to the reference where reached, SPS, and the peer's reference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import NamedTuple

RUNS = "runs/suite"
RESULTS = "benchmarks/results/suite"


class Task(NamedTuple):
    runtime: str  # "anakin" or "sebulba"
    env: str
    agent: str
    steps: int  # env steps per seed
    reference: float | None  # the peer's published final return at this budget
    source: str  # where the reference comes from
    core: str = "none"  # the agent's recurrent core (its preset's otherwise), 64 units

    @property
    def name(self) -> str:
        agent = self.agent if self.core == "none" else f"{self.agent}-{self.core}"
        return f"{self.runtime}-{agent}-{self.env.split(':')[-1]}"


GYMNAX_BLINES = "gymnax-blines PPO checkpoints"
# PPO at 1e7 steps: PureJaxRL's README plot for Breakout; for the others gymnax-blines'
# curve of its shipped config (lr 5e-4, one seed), read off its docs/lcurves.png.
_BLINES_CURVE = "gymnax-blines' PPO curve, read off its plot"
MINATAR_REFERENCES = {
    "Breakout": (40.0, "PureJaxRL's README plot"),
    "Asterix": (15.0, _BLINES_CURVE),
    "Freeway": (58.0, _BLINES_CURVE),
    "SpaceInvaders": (130.0, _BLINES_CURVE),
}
TASKS = [
    *(Task("anakin", f"gymnax:{env}", agent, 500_000, ref, GYMNAX_BLINES)
      for env, ref in (("CartPole-v1", 500.0), ("Acrobot-v1", -80.0), ("MountainCar-v0", -118.0))
      for agent in ("ppo", "impala", "pqn")),
    Task("anakin", "catch", "muzero", 400_000, 0.9, "this project's MuZero Catch target"),
    Task("anakin", "gymnax:CartPole-v1", "muzero", 1_000_000, 475.0, "CartPole's solved level"),
    *(Task("sebulba", f"envpool:{env}", agent, 1_000_000 if agent == "muzero" else 500_000, ref,
           GYMNAX_BLINES)
      for env, ref in (("CartPole-v1", 500.0), ("Acrobot-v1", -80.0), ("MountainCar-v0", -118.0))
      for agent in ("impala", "ppo", "muzero")),
    *(Task("anakin", f"gymnax:{game}-MinAtar", agent, 10_000_000, *MINATAR_REFERENCES[game])
      for agent in ("ppo", "pqn", "impala") for game in MINATAR_REFERENCES),
    # Partially observed: bsuite's MemoryChain rewards (+1/-1) at the end a bit seen only
    # at the start, so a feed-forward policy is at chance (0) and a recurrent one can be 1.
    *(Task(runtime, "gymnax:MemoryChain-bsuite", "ppo", 100_000, 1.0, "bsuite's optimum",
           core)
      for runtime in ("anakin", "sebulba") for core in ("none", "gru")),
]  # fmt: skip


def run_names(task: Task, seeds: int) -> list[str]:
    if task.runtime == "anakin":
        return [task.name]
    return [f"{task.name}-s{k}" for k in range(seeds)]


def run_watched(command: list[str], run_dir: str, stall: float) -> bool:
    """Runs `command` to its end (True), or stops it when its metrics.jsonl has not grown
    for `stall` seconds (False): SIGTERM first, so a run that is merely slow ends after
    its current chunk with a checkpoint, then SIGKILL should it not end in a minute."""
    metrics = os.path.join(run_dir, "metrics.jsonl")
    proc = subprocess.Popen(command)
    size, changed = None, time.monotonic()
    while proc.poll() is None:
        time.sleep(5.0)
        now = os.path.getsize(metrics) if os.path.exists(metrics) else -1
        if now != size:
            size, changed = now, time.monotonic()
        elif time.monotonic() - changed > stall:
            proc.terminate()
            try:
                proc.wait(timeout=60.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            return False
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, command)
    return True


def train(task: Task, seeds: int, stall: float) -> float:
    """Trains (or resumes) the task's runs; returns the wall seconds spent here."""
    start = time.perf_counter()
    for k, name in enumerate(run_names(task, seeds)):
        run_dir = os.path.join(RUNS, name)
        finished = os.path.exists(os.path.join(run_dir, "finished"))
        if finished:
            continue
        flags = ["--env", task.env, "--agent", task.agent, "--total-env-steps", str(task.steps),
                 "--runs-root", RUNS, "--run-name", name, "--no-progress",
                 "--eval-interval", str(task.steps // 10), "--eval-episodes", "32",
                 "--checkpoint-interval", str(task.steps // 5)]  # fmt: skip
        if task.core != "none":
            flags += [f"--{task.agent}.core", task.core, f"--{task.agent}.core-size", "64"]
        if task.runtime == "anakin":
            flags += ["--num-seeds", str(seeds)]
        else:
            flags += ["--seed", str(k)]
        if os.path.exists(os.path.join(run_dir, "config.json")):
            flags = ["--runs-root", RUNS, "--run-name", name, "--resume"]
        print(f"== {task.name}: {task.runtime} {' '.join(flags)}", flush=True)
        command = [sys.executable, "-m", f"podracer.{task.runtime}.cli", *flags]
        if not run_watched(command, run_dir, stall):
            # XLA:CPU has deadlocked in a run's first chunk (0% CPU, every thread on a
            # futex; Anakin's seed-by-seed init removed the case found). Should one
            # still hang, it is stopped and resumed once, from its newest checkpoint or
            # from the start.
            print(f"== {task.name}: no new metrics for {stall:.0f} s; resuming it once", flush=True)
            resume = ["--runs-root", RUNS, "--run-name", name, "--resume"]
            command = [sys.executable, "-m", f"podracer.{task.runtime}.cli", *resume]
            if not run_watched(command, run_dir, stall):
                raise SystemExit(f"{task.name}: {name} stalled twice; see {run_dir}")
        open(os.path.join(run_dir, "finished"), "w").close()
    return time.perf_counter() - start


def summarize(task: Task, seeds: int) -> dict:
    """Copies the runs' records into the results, draws the curve, computes the summary."""
    from podracer.runs.tools import aggregate
    from podracer.runs.tools import plot
    from podracer.runs.tools import records

    out = os.path.join(RESULTS, task.name)
    os.makedirs(out, exist_ok=True)
    runs = []
    for name in run_names(task, seeds):
        target = os.path.join(out, name)
        os.makedirs(target, exist_ok=True)
        for file in ("config.json", "metrics.jsonl"):
            source = os.path.join(RUNS, name, file)
            if os.path.exists(source) or not os.path.exists(os.path.join(target, file)):
                shutil.copy(source, os.path.join(target, file))  # else: the committed copy
        runs.append(target)
    result = plot.plot_runs(runs, out=out, aggregate="iqm", target=task.reference, show_seeds=True)
    os.replace(os.path.join(out, plot.figure_name(records.RETURN)), os.path.join(out, "curve.png"))
    (summary,) = result.summaries
    (group,) = result.groups
    # The last greedy evaluation (each seed's mean over the last 10% of its steps): the
    # policy without exploration, which PQN's epsilon-greedy training return understates.
    greedy = aggregate.summarize(group, "eval/episodic_return", task.reference)
    record = {
        "task": task.name, "runtime": task.runtime, "env": task.env, "agent": task.agent,
        "steps": task.steps, "seeds": summary.num_seeds, "reference": task.reference,
        "reference_source": task.source, "final_mean": summary.final_mean,
        "final_mean_ci": list(summary.final_mean_ci), "final_iqm": summary.final_iqm,
        "final_iqm_ci": list(summary.final_iqm_ci), "greedy_iqm": greedy.final_iqm,
        "greedy_iqm_ci": list(greedy.final_iqm_ci), "reached": summary.reached,
        "steps_to_reference": summary.steps_to_target,
        "seconds_to_reference": summary.seconds_to_target, "sps": summary.sps,
        "command": f"uv run python benchmarks/suite.py --tasks {task.name} --seeds {seeds}",
    }  # fmt: skip
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(record, f, indent=2)
    return record


def write_table() -> str:
    """benchmarks/results/suite/README.md from every task's summary.json."""
    rows = []
    for task in TASKS:
        path = os.path.join(RESULTS, task.name, "summary.json")
        if os.path.exists(path):
            with open(path) as f:
                rows.append(json.load(f))
    fmt = lambda x: "-" if x is None or x != x else f"{x:,.1f}"  # noqa: E731
    steps = lambda x: "-" if x is None or x != x else f"{x:,.0f}"  # noqa: E731
    lines = [
        "# Learning benchmark suite", "",
        "Made by `uv run python benchmarks/suite.py` (each row's own command in its "
        "`summary.json`) on this project's 2-core CPU machine, other work sharing it "
        "(SPS +-30%). Final return: each seed's mean over its last 10% of logged steps, "
        "then mean and IQM over seeds with 95% stratified-bootstrap intervals (rliable); "
        "greedy: the same of the greedy evaluations (32 episodes each). Reached: seeds "
        "whose training return reached the reference, and their mean env steps to it. "
        "Curves: `<task>/curve.png` (every seed and the IQM band). SPS: the mean of the "
        "run's logged `charts/SPS` (wall time with the greedy evaluations every tenth of "
        "the budget; a multi-seed Anakin run's SPS counts one seed's steps).", "",
        "| task | steps | seeds | final mean [95% CI] | final IQM [95% CI] | greedy IQM [95% CI] "
        "| reference | reached (seeds) | steps to it | SPS |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in rows:
        ci = lambda v: f"[{fmt(v[0])}, {fmt(v[1])}]"  # noqa: E731
        ref = (
            f"{fmt(r['reference'])} ({r['reference_source']})"
            if r["reference"] is not None
            else "-"
        )
        lines.append(
            f"| [{r['task']}]({r['task']}/curve.png) | {r['steps']:,} | {r['seeds']} | "
            f"{fmt(r['final_mean'])} {ci(r['final_mean_ci'])} | {fmt(r['final_iqm'])} "
            f"{ci(r['final_iqm_ci'])} | {fmt(r.get('greedy_iqm'))} "
            f"{ci(r.get('greedy_iqm_ci', [None, None]))} | {ref} | {r['reached']}/{r['seeds']} | "
            f"{steps(r['steps_to_reference'])} | {fmt(r['sps'])} |"
        )
    text = "\n".join(lines) + "\n"
    with open(os.path.join(RESULTS, "README.md"), "w") as f:
        f.write(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="*", help="task names (default: all)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--force", action="store_true", help="rerun tasks already summarised")
    parser.add_argument("--resummarize", action="store_true",
                        help="recompute the summaries of tasks already run (from runs/suite, "
                        "else the committed records): after a reference changed")  # fmt: skip
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--stall-seconds", type=float, default=900.0,
                        help="a run whose metrics do not grow for this long is stopped "
                        "and resumed once")  # fmt: skip
    args = parser.parse_args()
    known = {t.name: t for t in TASKS}
    if args.list:
        print("\n".join(f"{t.name:<44} {t.steps:>11,} steps" for t in TASKS))
        return
    unknown = sorted(set(args.tasks or ()) - set(known))
    if unknown:
        parser.error(f"unknown tasks {unknown}; --list shows them")
    for task in [known[n] for n in args.tasks] if args.tasks else TASKS:
        done = os.path.join(RESULTS, task.name, "summary.json")
        if args.resummarize:  # tasks not run yet are left alone
            if os.path.exists(done):
                with open(done) as f:
                    summarize(task, json.load(f)["seeds"])
            continue
        if os.path.exists(done) and not args.force:
            continue
        if args.force:
            for name in run_names(task, args.seeds):
                shutil.rmtree(os.path.join(RUNS, name), ignore_errors=True)
        seconds = train(task, args.seeds, args.stall_seconds)
        record = summarize(task, args.seeds)
        print(f"== {task.name}: IQM {record['final_iqm']:.1f}, mean {record['final_mean']:.1f} "
              f"({seconds:.0f} s)", flush=True)  # fmt: skip
        write_table()
    print(write_table())


if __name__ == "__main__":
    main()
