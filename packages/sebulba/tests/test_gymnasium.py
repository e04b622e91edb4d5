"""Sebulba on a gymnasium vector env (`gymnasium:CartPole-v1`, async worker processes), then
`podracer eval` of the run, each in a subprocess as a user runs them."""

import json
import subprocess
import sys

import pytest

pytest.importorskip("gymnasium")


def _run(*args):
    done = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_sebulba_trains_on_gymnasium_cartpole_and_podracer_eval_plays_it(tmp_path):
    out = _run(
        "podracer.sebulba.cli", "--env", "gymnasium:CartPole-v1", "--env-kwargs",
        '{"vectorization_mode": "async"}', "--async-envs", "--envs-per-thread", "8",
        "--rollout-length", "16", "--total-env-steps", "2048", "--no-progress",
        "--no-tensorboard", "--runs-root", str(tmp_path), "--run-name", "gym",
    )  # fmt: skip
    assert "impala on gymnasium:CartPole-v1: 2,048 env steps" in out
    run = tmp_path / "gym"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert rows[-1]["env_steps"] == 2048 and rows[-1]["charts/episodes"] > 0
    config = json.loads((run / "config.json").read_text())
    assert config["env_kwargs"] == {"vectorization_mode": "async"}
    out = _run("podracer.runs.tools.cli", "eval", str(run), "--episodes", "3")
    assert "on gymnasium:CartPole-v1: 3 greedy episodes" in out
    record = json.loads((run / "eval.json").read_text())[-1]
    assert record["env"] == "gymnasium:CartPole-v1" and record["episodes"] == 3
    assert record["env_kwargs"] == {"vectorization_mode": "async"}
    assert 1 <= record["min"] <= record["max"] <= 500  # CartPole: 1 per step, at most 500
