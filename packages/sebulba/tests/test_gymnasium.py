"""Sebulba on gymnasium vector envs (`gymnasium:CartPole-v1`: async worker processes, then
`podracer eval` of the run, each in a subprocess as a user runs them; and its numpy-batched
vector env, in this process)."""

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


def test_sebulba_learns_on_gymnasium_s_native_vector_cartpole(tmp_path):
    # The default mode ("auto") steps CartPole-v1 as gymnasium's numpy-batched vector env,
    # whose next-step resets Sebulba must mask. PPO learns through it as through envpool
    # (the same config, seed 0, 6e4 steps: envpool's last rows 500 / 437, these 474 / 428).
    from podracer.envs import make_host
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import train

    env = make_host("gymnasium:CartPole-v1", num_envs=4)
    assert env.vectorization_mode == "vector_entry_point"
    env.close()
    config = SebulbaConfig(
        env="gymnasium:CartPole-v1", agent="ppo", envs_per_thread=16, rollout_length=32,
        total_env_steps=60_000, progress=False, tensorboard=False, runs_root=str(tmp_path),
    )  # fmt: skip
    result = train(config)
    returns = [r["charts/episodic_return"] for r in result.history]
    assert returns[0] < 30 and max(returns[-10:]) > 200, returns
