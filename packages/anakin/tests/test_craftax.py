"""The `anakin` command on Craftax (`craftax:Craftax-Symbolic-v1`): one tiny chunk of PPO, in
a subprocess as a user runs it. Compiling Craftax's step takes a minute or two on a CPU."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("craftax")


@pytest.mark.slow
def test_one_chunk_of_ppo_on_craftax_symbolic_trains_and_writes_metrics(tmp_path):
    command = [
        sys.executable, "-m", "podracer.anakin.cli", "--env", "craftax:Craftax-Symbolic-v1",
        "--agent", "ppo", "--num-envs", "4", "--rollout-length", "4", "--updates-per-chunk", "2",
        "--total-env-steps", "32", "--ppo.num-minibatches", "2", "--ppo.num-epochs", "1",
        # Episodes of 6 steps: the chunk's 8 steps per env cross a time-limit cut.
        "--env-kwargs", '{"max_timesteps": 6}', "--no-progress", "--no-tensorboard",
        "--runs-root", str(tmp_path), "--run-name", "craftax",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ppo on craftax:Craftax-Symbolic-v1: 32 env steps" in done.stdout
    run = tmp_path / "craftax"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["env_steps"] == 32
    assert rows[-1]["charts/episodes"] == 4 and rows[-1]["charts/episodic_length"] == 6
    config = json.loads((run / "config.json").read_text())
    assert config["env"] == "craftax:Craftax-Symbolic-v1"
    assert config["env_kwargs"] == {"max_timesteps": 6}
