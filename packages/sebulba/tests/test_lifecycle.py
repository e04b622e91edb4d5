"""The run lifecycle through the `sebulba` command: signals, resume, a registered agent.

Each signal case runs the real command in a subprocess, interrupts it and resumes it.
Sebulba's envs run in envpool, whose state cannot be saved, so a resumed run restarts
its episodes: the train state continues exactly, and every step is logged once.
"""

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from podracer.agents import AGENTS
from podracer.agents import ImpalaConfig
from podracer.agents import make_impala
from podracer.agents import register_agent
from podracer.runs import Checkpointer
from podracer.runs import read_tensorboard
from podracer.sebulba.cli import main

UPDATE = 4 * 8  # env steps per update of the tiny config
TINY = ["--envs-per-thread", "4", "--rollout-length", "8", "--log-interval", str(UPDATE)]


def sebulba(*args):
    return subprocess.Popen(
        [sys.executable, "-m", "podracer.sebulba.cli", *TINY, *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def rows(run):
    """The rows written so far: whole lines only (the run may be writing the last one)."""
    text = (run / "metrics.jsonl").read_text()
    return [json.loads(x) for x in text[: text.rfind("\n") + 1].splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_ends_with_a_checkpoint_and_the_run_resumes_from_it(tmp_path, name):
    root, run = str(tmp_path), tmp_path / "sig"
    child = sebulba("--total-env-steps", str(10**9), "--run-name", "sig", "--runs-root", root,
                    "--no-progress")  # fmt: skip
    deadline = time.monotonic() + 120
    try:
        while not (run / "metrics.jsonl").exists() or len(rows(run)) < 3:
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.05)
    except BaseException:  # no child left running (or its pipes open) for later tests
        child.kill()
        child.communicate()
        raise
    child.send_signal(getattr(signal, name))
    _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err[-3000:]
    assert "Traceback" not in err
    stopped = rows(run)[-1]["env_steps"]
    assert f"interrupted at env step {stopped:,}" in err
    assert f"Resume with: sebulba --run-name sig --runs-root {root} --resume" in err
    with Checkpointer(run / "checkpoints") as checkpoints:
        assert checkpoints.all_steps() == [stopped // UPDATE]
        saved, _, _ = checkpoints.restore()  # as saved: a dict of the TrainState's fields

    total = stopped + 3 * UPDATE
    resumed = sebulba("--run-name", "sig", "--runs-root", root, "--resume", "--progress",
                      "--total-env-steps", str(total))  # fmt: skip
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err[-3000:]
    assert f"resumed at env step {stopped:,}" in err
    steps = [r["env_steps"] for r in rows(run)]
    assert steps == list(range(UPDATE, total + 1, UPDATE))  # each step once
    tensorboard = [s for t, s, _ in read_tensorboard(run / "tensorboard") if t == "losses/total"]
    assert tensorboard == steps
    with Checkpointer(run / "checkpoints") as checkpoints:
        final, _, meta = checkpoints.restore()
    assert meta["env_steps"] == total and int(final["update_step"]) == int(saved["update_step"]) + 3


def test_a_reused_name_is_refused_before_compiling(tmp_path, capsys):
    args = [*TINY, "--total-env-steps", str(UPDATE), "--runs-root", str(tmp_path),
            "--run-name", "r"]  # fmt: skip
    assert main([*args, "--no-progress"]) == 0
    capsys.readouterr()
    assert main(args) == 2
    assert "names an existing run" in capsys.readouterr().err


@dataclasses.dataclass(frozen=True)
class TinyConfig:
    """A registered toy agent's hyperparameters."""

    hidden: int = 8  # units of its one hidden layer


def make_tiny(spec, config, total_updates=None):
    return make_impala(spec, ImpalaConfig(hidden_sizes=(config.hidden,)), total_updates)


def test_a_registered_agent_trains_from_the_command_line(tmp_path):
    register_agent("tiny", TinyConfig, make_tiny, "a toy agent")
    try:
        args = [*TINY, "--total-env-steps", str(2 * UPDATE), "--runs-root", str(tmp_path),
                "--run-name", "t", "--agent", "tiny", "--tiny.hidden", "4",
                "--no-progress"]  # fmt: skip
        assert main(args) == 0
    finally:
        del AGENTS["tiny"]
    stored = json.loads((tmp_path / "t" / "config.json").read_text())
    assert stored["agent"] == "tiny" and stored["agent_config"] == {"hidden": 4}
    assert len(rows(tmp_path / "t")) == 2 and np.isfinite(rows(tmp_path / "t")[-1]["losses/policy"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "envpool:CartPol-v1"], "SebulbaConfig.env"),
        (["--impala.torso", "nature_cnn"],
         "ImpalaConfig.torso='nature_cnn' needs image observations"),
        (["--learner-device-ids", "3"], "learner_device_ids=(3,) names device(s) [3]"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_compiling(tmp_path, capsys, args, message):
    assert main([*args, "--runs-root", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sebulba: error: ") and err.count("\n") == 1 and message in err
    assert not os.listdir(tmp_path)


def test_help_imports_no_jax():
    code = (
        "import sys\nfrom podracer.sebulba.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('IMPORTED', sorted(m for m in sys.modules if m in ('jax', 'flax', 'orbax')))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert "--envs-per-thread" in child.stdout
    assert child.stdout.splitlines()[-1] == "IMPORTED []"
