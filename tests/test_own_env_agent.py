"""Your own environment and agent, as a user brings them: the `examples/` package (entry
points), import paths on the command line, and registration by call; every run then
evaluates, resumes and fine-tunes from other processes, on both runtimes.

Each command runs in a fresh process, as a user's would: nothing registered in one can
leak into the next except through what the run directory stores. Code a run directory
names is imported there only if trusted: an installed plugin's (the examples package),
or with --trust-code (a module of the user's, registered by call).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

BIN = os.path.dirname(sys.executable)
SMALL = ["--num-envs", "16", "--rollout-length", "16", "--updates-per-chunk", "20",
         "--total-env-steps", "10240", "--no-progress"]  # fmt: skip


def run(*args, cwd=None, env=None, check=True):
    command = [os.path.join(BIN, args[0]), *args[1:]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=env)  # fmt: skip
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def evaluate(run_dir, *args, env=None):
    out = run("podracer", "eval", str(run_dir), "--episodes", "8", *args, env=env).stdout
    record = json.loads((run_dir / "eval.json").read_text())[-1]
    assert record["episodes"] == 8, out
    return record


def lifecycle(runtime, tmp_path, args, env=None):
    """Train, evaluate, resume, fine-tune: the four things a run is for."""
    root = ["--runs-root", str(tmp_path)]
    run(runtime, *args, *root, "--run-name", "first", env=env)
    record = evaluate(tmp_path / "first", env=env)
    resumed = run(runtime, "--run-name", "first", "--resume", "--total-env-steps", "20480",
                  "--no-progress", *root, env=env)  # fmt: skip
    assert "20,480 env steps" in resumed.stdout
    run(runtime, *args, *root, "--run-name", "tuned", "--init-from", "first", env=env)
    return record


def test_the_examples_agent_sweeps_as_the_built_in_ones_do(tmp_path):
    """A2C declares its sweepable numbers and reads them from `hyper`: a sweep trains
    every point as its own member (each point's values reach its loss)."""
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train

    sweep = ("a2c.learning_rate=1e-3,3e-2", "a2c.value_cost=0.5,2")
    config = AnakinConfig(env="corridor", agent="a2c", num_envs=16, rollout_length=16,
                          updates_per_chunk=4, total_env_steps=1024, progress=False,
                          runs_root=str(tmp_path), run_name="s", sweep=sweep)  # fmt: skip
    rows = train(config).history
    last = {r["member"]: r for r in rows if r["env_steps"] == rows[-1]["env_steps"]}
    assert sorted(last) == [0, 1, 2, 3]
    assert [last[m]["sweep/a2c.value_cost"] for m in range(4)] == [0.5, 2.0, 0.5, 2.0]
    assert len({round(r["losses/value"], 6) for r in last.values()}) == 4


@pytest.mark.slow
def test_the_examples_package_trains_by_entry_point_name_on_both_runtimes(tmp_path):
    record = lifecycle("anakin", tmp_path / "a", ["--env", "corridor", "--agent", "a2c", *SMALL])
    assert record["env"] == "corridor" and record["mean"] == 1.0  # learned: every episode arrives
    sebulba = ["--env", "corridor-host", "--agent", "a2c", "--total-env-steps", "10240",
               "--no-progress"]  # fmt: skip
    record = lifecycle("sebulba", tmp_path / "s", sebulba)
    assert record["env"] == "corridor-host" and record["mean"] == 1.0


@pytest.mark.slow
def test_an_import_path_and_env_kwargs_rebuild_in_every_later_process(tmp_path):
    args = ["--env", "podracer_examples.envs:Corridor", "--env-kwargs", '{"size": 7}',
            "--agent", "podracer_examples.agents:make_a2c", "--a2c.hidden", "16",
            *SMALL]  # fmt: skip
    record = lifecycle("anakin", tmp_path, args)
    stored = json.loads((tmp_path / "first" / "config.json").read_text())
    assert stored["env_kwargs"] == {"size": 7} and stored["agent_config"]["hidden"] == 16
    # Greedy episodes of 7 cells: 6 steps where it learned the way, else the time limit
    # (4 x 7); the default 5 cells would give 4 or 20.
    assert record["env_kwargs"] == {"size": 7} and record["length_mean"] in (6.0, 28.0)
    # The host env on Sebulba, by import path too.
    run("sebulba", "--env", "podracer_examples.envs:CorridorHost", "--agent", "a2c",
        "--total-env-steps", "4096", "--no-progress", "--runs-root", str(tmp_path),
        "--run-name", "host")  # fmt: skip
    assert evaluate(tmp_path / "host")["env"] == "podracer_examples.envs:CorridorHost"


MODULE = """
import dataclasses
from podracer.agents import Agent
from podracer_examples.agents import make_a2c, A2CConfig
from podracer_examples.envs import Corridor


def long_corridor(length=9) -> Corridor:  # rebuilt by import path: annotated, checked
    return Corridor(size=length)


@dataclasses.dataclass(frozen=True)
class MyConfig(A2CConfig):
    hidden: int = 24


def make_mine(spec, config, total_updates=None) -> Agent:
    return make_a2c(spec, config, total_updates)
"""

SCRIPT = """
import sys
import mine
from podracer.agents import register_agent
from podracer.anakin import AnakinConfig, train
from podracer.envs import register

register("long-corridor", mine.long_corridor)
register_agent("mine", mine.MyConfig, mine.make_mine, "my agent")
result = train(AnakinConfig(env="long-corridor", env_kwargs={"length": 6}, agent="mine",
                            num_envs=16, rollout_length=16, updates_per_chunk=20,
                            total_env_steps=10240, progress=False, runs_root=sys.argv[1],
                            run_name="called"))
print(result.env_steps)
"""


@pytest.mark.slow
def test_an_env_and_agent_registered_by_call_evaluate_and_resume_elsewhere(tmp_path):
    (tmp_path / "mine.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    root = tmp_path / "runs"
    run("python", str(tmp_path / "script.py"), str(root), env=env)
    stored = json.loads((root / "called" / "config.json").read_text())
    assert stored["sources"]["env"] == {"name": "long-corridor", "factory": "mine:long_corridor"}
    assert stored["sources"]["agent"]["factory"] == "mine:make_mine"
    # Fresh processes that never called register: config.json's sources name `mine`, no
    # installed plugin, so a copied run dir cannot have it imported unless trusted.
    resume = ["anakin", "--run-name", "called", "--runs-root", str(root), "--resume",
              "--total-env-steps", "20480", "--no-progress"]  # fmt: skip
    for command in (["podracer", "eval", str(root / "called")], resume):
        refused = run(*command, env=env, check=False)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
        assert "'mine:long_corridor'" in refused.stderr and "--trust-code" in refused.stderr
    # Trusted: config.json's sources register them.
    assert evaluate(root / "called", "--trust-code", env=env)["length_mean"] == 5.0
    resumed = run(*resume, "--trust-code", env=env)
    assert "mine on long-corridor" in resumed.stdout
