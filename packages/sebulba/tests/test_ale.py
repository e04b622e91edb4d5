"""Sebulba on ale-py's native Atari vector env (`ale:<Game>`): the Nature CNN trains on
its frames through either lane layout, each thread with its own emulator threads."""

import numpy as np
import pytest

pytest.importorskip("ale_py")

from podracer.agents import ImpalaConfig  # noqa: E402
from podracer.sebulba import SebulbaConfig  # noqa: E402
from podracer.sebulba import train  # noqa: E402


@pytest.mark.parametrize("async_envs", [False, True])
def test_impala_trains_on_ale_breakout(tmp_path, async_envs, capsys):
    config = SebulbaConfig(
        env="ale:Breakout", env_kwargs={"num_threads": 1, "max_episode_steps": 20},
        agent="impala", agent_config=ImpalaConfig(torso="nature_cnn", hidden_sizes=(32,)),
        envs_per_thread=4, async_envs=async_envs, rollout_length=8,
        total_env_steps=4 * 8 * 6, log_interval=64, progress=False, tensorboard=False,
        runs_root=str(tmp_path),
    )  # fmt: skip
    result = train(config)
    assert result.env_steps == 192 and np.isfinite(result.history[-1]["losses/total"])
    # Episodes of at most 20 steps end within the run, counted per game.
    assert sum(r["charts/episodes"] for r in result.history) >= 4
    assert "stages, ms per rollout: " in capsys.readouterr().err
