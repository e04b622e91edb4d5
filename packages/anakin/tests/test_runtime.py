"""Chunks, resume and evaluation on a tiny Catch config."""

import json
import math
import os
import shutil

import jax
import numpy as np
import pytest

from podracer.anakin import AnakinConfig, make_chunk, make_init, make_mesh, train
from podracer.agents import make_agent
from podracer.envs import make

TINY = AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5, total_env_steps=3 * 160,
                    progress=False, tensorboard=False)


def test_chunk_compiles_once_and_counts_updates():
    env = make("catch")
    agent = make_agent("qlambda", env.spec)
    mesh = make_mesh(1)
    state = make_init(agent, env, 8, mesh)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, 4, 5, mesh)
    for _ in range(3):
        state, metrics = chunk(state)
    assert chunk.compiled_count() == 1
    assert int(state.train.update_step) == 15
    # Catch episodes last exactly 9 steps; 15 updates x 4 steps x 8 envs = 480 steps.
    assert float(metrics.episode_length_sum) == 9.0 * float(metrics.episode_count)
    assert np.isfinite(float(metrics.losses["losses/value"]))


def test_run_writes_config_metrics_and_evaluates(tmp_path):
    config = AnakinConfig(**{**TINY.__dict__, "run_name": "tiny", "runs_root": str(tmp_path),
                             "eval_every_chunks": 1, "eval_envs": 4, "tensorboard": True})
    result = train(config)
    run = tmp_path / "tiny"
    assert json.loads((run / "config.json").read_text())["env"] == "catch"
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["env_steps"] for m in lines] == [160, 320, 480]
    assert all(-1.0 <= m["eval/episodic_return"] <= 1.0 for m in lines)
    assert any(f.startswith("events") for f in os.listdir(run / "tensorboard"))
    assert result.env_steps == 480 and not math.isnan(result.sps)


@pytest.mark.parametrize("agent", ["qlambda", "ppo"])
def test_resume_is_bit_exact(tmp_path, agent):
    config = AnakinConfig(**{**TINY.__dict__, "agent": agent, "run_name": "a",
                             "runs_root": str(tmp_path), "checkpoint_every_chunks": 1})
    if agent == "ppo":  # minibatches must divide the rollout
        config = AnakinConfig(**{**config.__dict__, "rollout_length": 8, "total_env_steps": 3 * 320})
    full = train(config)
    # Pretend the run died after its first checkpoint: keep only checkpoint 1, resume.
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for step in ("2", "3"):
        shutil.rmtree(tmp_path / "b" / "checkpoints" / step)
    resumed = train(AnakinConfig(**{**config.__dict__, "run_name": "b", "resume": True}))
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(full.state), jax.device_get(resumed.state))
    lines = lambda run: (tmp_path / run / "metrics.jsonl").read_text().splitlines()
    strip = lambda line: {k: v for k, v in json.loads(line).items() if not k.startswith(("timing/", "charts/SPS"))}
    assert [strip(x) for x in lines("a")] == [strip(x) for x in lines("b")]
