"""The run lifecycle through the `anakin` command: signals, reuse, refused resumes, errors.

Each signal case runs the real command in a subprocess, interrupts it, resumes it, and
compares the result with an uninterrupted run of the same length (exact: Anakin's
checkpoint holds env states and keys).
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from podracer.agents import AGENTS
from podracer.agents import ImpalaConfig
from podracer.agents import make_impala
from podracer.agents import register_agent
from podracer.anakin import AnakinConfig
from podracer.anakin import train
from podracer.anakin.cli import main
from podracer.envs import register
from podracer.envs import registry
from podracer.envs.catch import Catch
from podracer.runs import read_tensorboard

CHUNK = 8 * 4 * 5  # env steps per chunk of the tiny config
# A row per chunk (a call ends at each row).
TINY = ["--num-envs", "8", "--rollout-length", "4", "--updates-per-chunk", "5", "--log-interval",
        str(CHUNK)]  # fmt: skip
VOLATILE = ("time", "charts/SPS", "timing/")  # wall-clock columns


def learning_columns(rows):
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def anakin(*args, **kwargs):
    return subprocess.Popen(
        [sys.executable, "-m", "podracer.anakin.cli", *TINY, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_ends_with_a_checkpoint_and_the_resumed_run_equals_an_uninterrupted_one(
    tmp_path, name
):
    root = str(tmp_path)
    run = tmp_path / "sig"
    child = anakin("--total-env-steps", str(10**9), "--run-name", "sig", "--runs-root", root,
                   "--no-progress")  # fmt: skip
    deadline = time.monotonic() + 120
    metrics = run / "metrics.jsonl"
    while not metrics.exists() or len(metrics.read_text().splitlines()) < 3:
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.05)
    child.send_signal(getattr(signal, name))
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    steps = [json.loads(x)["env_steps"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    stopped = steps[-1]
    assert f"interrupted at env step {stopped:,}" in err
    assert f"Resume with: anakin --run-name sig --runs-root {root} --resume" in err
    assert os.listdir(run / "checkpoints") == [str(stopped // CHUNK)]

    total = stopped + 2 * CHUNK
    resumed = anakin("--run-name", "sig", "--runs-root", root, "--resume",
                     "--total-env-steps", str(total))  # fmt: skip
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-3000:]
    reference = train(AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5,
                                   log_interval=CHUNK, total_env_steps=total, runs_root=root,
                                   run_name="ref", progress=False))  # fmt: skip
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["env_steps"] for r in rows] == list(range(CHUNK, total + 1, CHUNK))  # each once
    assert learning_columns(rows) == learning_columns(reference.history)
    tags = [(t, s) for t, s, _ in read_tensorboard(run / "tensorboard") if t == "losses/total"]
    assert tags == [("losses/total", s) for s in range(CHUNK, total + 1, CHUNK)]


def test_a_second_signal_exits_at_once(tmp_path):
    # A chunk of ~2 s on this machine: both signals arrive while it runs.
    child = anakin("--num-envs", "256", "--updates-per-chunk", "500", "--total-env-steps",
                   str(10**9), "--runs-root", str(tmp_path), "--run-name", "twice")  # fmt: skip
    while not (tmp_path / "twice" / "metrics.jsonl").exists():
        assert child.poll() is None, child.communicate()
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 128 + signal.SIGINT
    assert "second SIGINT: exiting now without a final checkpoint" in err
    assert "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize("stop", ["budget", "SIGTERM"])
def test_a_chunk_of_hours_is_stopped_in_bounded_time(tmp_path, stop):
    # 10^7 updates per chunk (hours): the loop runs it in calls of at most a quarter of the
    # wall-clock budget, so the budget, or a signal, ends the run within one such call.
    budget = "6" if stop == "budget" else "40"  # calls of <= 1.5 s, or <= 10 s
    start = time.monotonic()
    child = anakin("--updates-per-chunk", str(10**7), "--total-env-steps", str(10**12),
                   "--max-wall-seconds", budget, "--runs-root", str(tmp_path),
                   "--run-name", "long", "--no-progress")  # fmt: skip
    if stop == "SIGTERM":
        while not (tmp_path / "long" / "metrics.jsonl").exists():
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        signaled = time.monotonic()
        child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0 and "Traceback" not in err, err[-3000:]
    assert "a chunk of 10,000,000 updates would take about" in err
    if stop == "SIGTERM":
        assert time.monotonic() - signaled < 25  # one call (<= 10 s) and the final save
        assert "interrupted at env step" in err
    else:
        assert time.monotonic() - start < 60  # start-up, compile, 6 s, one call, save
    (step,) = os.listdir(tmp_path / "long" / "checkpoints")  # the final checkpoint
    rows = (tmp_path / "long" / "metrics.jsonl").read_text().splitlines()
    # Each call is a loop step that ends with a row (rows every chunk of 5 updates).
    assert len(rows) >= int(step) >= 1 and int(json.loads(rows[-1])["env_steps"]) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_during_start_up_is_one_line_and_writes_nothing(tmp_path, name):
    # The preset line is printed right after parsing; JAX, the env and the agent's init
    # take seconds more before the loop begins.
    child = anakin("--env", "gymnax:CartPole-v1", "--agent", "ppo", "--runs-root",
                   str(tmp_path), "--run-name", "early")  # fmt: skip
    line = child.stderr.readline()
    assert line.startswith("anakin: preset"), line + child.communicate()[1]
    child.send_signal(getattr(signal, name))
    _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + getattr(signal, name), err[-3000:]
    # One line, as the signal came; it says so when the chunk's compile, on its own
    # thread, was still running (the exit waits for it).
    assert err.strip() in (
        f"{name} before training began: nothing was written; stopping (again to exit at once)",
        f"{name} before training began: nothing was written; exiting once XLA has compiled "
        "the chunk (again to exit at once)",
    ), err
    assert not (tmp_path / "early").exists() and os.listdir(tmp_path) == []


def test_a_reused_name_is_refused_before_compiling(tmp_path, capsys):
    args = [*TINY, "--total-env-steps", str(CHUNK), "--runs-root", str(tmp_path), "--run-name", "r"]
    assert main([*args, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "names an existing run" in err and "--resume" in err and "another --run-name" in err


def test_a_resumed_sweep_ranks_its_points_over_the_whole_run(tmp_path, capsys):
    # The table the run prints is `podracer sweep-best`'s, earlier sessions' rows included
    # (the resumed session's rows alone put each member's last 10% elsewhere).
    from podracer.runs.tools.sweep_best import main as sweep_best

    args = [*TINY, "--runs-root", str(tmp_path), "--run-name", "s", "--no-progress"]
    sweep = ["--sweep", "qlambda.learning_rate=1e-3,3e-2", "--num-seeds", "2"]
    # A row a chunk: the run's last 10% holds rows 11 and 12, the second session's row 12
    assert main([*args, *sweep, "--total-env-steps", str(10 * CHUNK)]) == 0
    capsys.readouterr()
    assert main([*args, "--resume", "--total-env-steps", str(12 * CHUNK)]) == 0
    printed = capsys.readouterr().out
    assert sweep_best([str(tmp_path / "s")]) == 0
    table = capsys.readouterr().out.splitlines()[:3]
    assert table[0].startswith("qlambda.learning_rate") and len(table) == 3
    assert "\n".join(table) in printed


def test_a_resume_with_another_agent_or_network_is_refused_naming_the_fields(tmp_path, capsys):
    args = [*TINY, "--runs-root", str(tmp_path), "--run-name", "r", "--no-progress"]
    assert main([*args, "--total-env-steps", str(CHUNK)]) == 0
    capsys.readouterr()
    assert main([*args, "--resume", "--qlambda.hidden-sizes", "32", "32"]) == 2
    err = capsys.readouterr().err
    assert "agent_config.hidden_sizes: [256] -> [32, 32]" in err
    assert main([*args, "--resume", "--agent", "ppo"]) == 2
    assert "agent: 'qlambda' -> 'ppo'" in capsys.readouterr().err


def test_a_corrupt_newest_checkpoint_falls_back_to_the_previous(tmp_path, capsys):
    config = AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5, log_interval=CHUNK,
                          progress=False, total_env_steps=3 * CHUNK, checkpoint_interval=CHUNK,
                          runs_root=str(tmp_path), run_name="c")  # fmt: skip
    full = train(config)
    checkpoints = tmp_path / "c" / "checkpoints"
    (checkpoints / "3" / "metadata" / "metadata").write_text('{"format": 2, "step"')
    resumed = train(dataclasses.replace(config, resume=True))
    assert "skipping checkpoint" in capsys.readouterr().err
    assert sorted(os.listdir(checkpoints)) == ["1", "2", "3", "3.corrupt"]
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(full.state.train),
                 jax.device_get(resumed.state.train))  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated data", "garbled metadata"])
def test_evaluating_an_unreadable_checkpoint_is_one_line(tmp_path, damage):
    config = AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5, log_interval=CHUNK,
                          progress=False, total_env_steps=CHUNK, runs_root=str(tmp_path),
                          run_name="u")  # fmt: skip
    train(config)
    checkpoint = tmp_path / "u" / "checkpoints" / "1"
    if damage == "truncated data":  # Orbax then left its other reads to fail when collected
        for root, _, files in os.walk(checkpoint / "train"):
            for name in files:
                if os.path.basename(root) == "d":
                    os.truncate(os.path.join(root, name), 3)
    else:
        (checkpoint / "metadata" / "metadata").write_text("{garbage")
    out = subprocess.run(
        [sys.executable, "-m", "podracer.runs.tools.cli", "eval", str(tmp_path / "u"),
         "--episodes", "2"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith(f"podracer eval: error: {checkpoint}")


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB file system (tmpfs; needs root, else the test is skipped)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3M", "tmpfs", str(disk)],
                             capture_output=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (not root)")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_the_run_resumes_once_there_is_space(small_disk):
    # A Q-network of 512 x 512 units: its train state (~3.3 MB) cannot fit in 3 MB.
    flags = ["--runs-root", str(small_disk), "--run-name", "full", "--no-progress",
             "--total-env-steps", str(4 * CHUNK), "--checkpoint-interval", str(CHUNK),
             "--qlambda.hidden-sizes", "512", "512"]  # fmt: skip
    _, err = (child := anakin(*flags)).communicate(timeout=300)
    assert child.returncode == 2, err[-3000:]
    assert err.strip().count("\n") == 0, err[-3000:]  # one line, no Orbax noise after it
    assert "no space left on device (a checkpoint of this run needs about" in err
    assert os.listdir(small_disk / "full" / "checkpoints") == []  # no partial checkpoint
    subprocess.run(["mount", "-o", "remount,size=30M", str(small_disk)], check=True)
    _, err = (child := anakin(*flags, "--resume")).communicate(timeout=300)
    assert child.returncode == 0, err[-3000:]
    assert str(4) in os.listdir(small_disk / "full" / "checkpoints")


@dataclasses.dataclass(frozen=True)
class TinyConfig:
    """A registered toy agent's hyperparameters."""

    hidden: int = 8  # units of its one hidden layer


def make_tiny(spec, config, total_updates=None):
    return make_impala(spec, ImpalaConfig(hidden_sizes=(config.hidden,)), total_updates)


def test_a_registered_agent_trains_from_the_command_line(tmp_path):
    register_agent("tiny", TinyConfig, make_tiny, "a toy agent")
    try:
        args = [*TINY, "--total-env-steps", str(2 * CHUNK), "--runs-root", str(tmp_path),
                "--run-name", "t", "--agent", "tiny", "--tiny.hidden", "4",
                "--no-progress"]  # fmt: skip
        assert main(args) == 0
    finally:
        del AGENTS["tiny"]
    stored = json.loads((tmp_path / "t" / "config.json").read_text())
    assert stored["agent"] == "tiny" and stored["agent_config"] == {"hidden": 4}
    rows = [json.loads(x) for x in (tmp_path / "t" / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and np.isfinite(rows[-1]["losses/policy"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "envpool:CartPole-v1"], "host environment"),
        (["--env", "gymnax:CartPole-v1", "--qlambda.torso", "nature_cnn"],
         "QLambdaConfig.torso='nature_cnn' needs image observations"),
        (["--num-envs", "1000000000"], "AnakinConfig.num_envs=1000000000 needs at least"),
        (["--env", "gymnax:Pendulum-v1"], "agent 'qlambda' acts in discrete action spaces"),
        (["--env-kwargs", '{"nope": 1}'], "AnakinConfig.env_kwargs={'nope': 1}: Catch.__init__()"),
        (["--env", "no_such_pkg.envs:Corridor"], "cannot import 'no_such_pkg.envs'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_compiling(tmp_path, capsys, args, message):
    assert main([*args, "--runs-root", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("anakin: error: ") and err.count("\n") == 1 and message in err
    assert not os.listdir(tmp_path)  # no run directory left behind


class _Drifting(Catch):
    """A user's env whose step returns another observation shape than its reset."""

    def step(self, state, action, key):
        state, timestep = super().step(state, action, key)
        return state, timestep._replace(observation=timestep.observation.reshape(-1))


def test_an_env_whose_step_changes_reset_s_shapes_is_one_line_before_compiling(tmp_path, capsys):
    register("drifting", _Drifting)
    try:
        assert main(["--env", "drifting", "--runs-root", str(tmp_path), "--no-progress"]) == 2
    finally:
        registry._REGISTERED.pop("drifting")
    err = capsys.readouterr().err
    assert err == (
        "anakin: error: AnakinConfig.env: env 'catch': step returns timestep.observation as "
        "float32[50], reset as float32[10, 5]: a step keeps reset's shapes and dtypes\n"
    )
    assert not os.listdir(tmp_path)  # no run directory left behind


def test_help_imports_no_jax():
    code = (
        "import sys\nfrom podracer.anakin.cli import main\n"
        "try:\n    main(['--agent', 'muzero', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('IMPORTED', sorted(m for m in sys.modules if m in ('jax', 'flax', 'orbax')))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert "--agent" in child.stdout and "--muzero.search.policy" in child.stdout
    assert child.stdout.splitlines()[-1] == "IMPORTED []"
