"""Small Sebulba configs for tests: a few updates of envpool CartPole (32 steps each)."""

import dataclasses

import pytest

from podracer.sebulba import SebulbaConfig

TINY = SebulbaConfig(
    envs_per_thread=4, rollout_length=8, trajectories_per_update=1, total_env_steps=8 * 4 * 6,
    log_interval=2 * 32, progress=False, tensorboard=False, stage_timeout_s=120.0,
)  # fmt: skip


@pytest.fixture
def tiny():
    def make(**changes) -> SebulbaConfig:
        return dataclasses.replace(TINY, **changes)

    return make
