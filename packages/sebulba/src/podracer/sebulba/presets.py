"""Sebulba's layout of each preset: the sizes that go with a preset's agent config on
Sebulba, named as `SebulbaConfig` names them.

The agent configs and their sources are shared by both runtimes
(`podracer.agents.presets`); a preset without a layout here runs with the config's
defaults. Add your own with `podracer.runs.register_layout(SebulbaConfig, agent, name, ...)`.
"""

from typing import Any

# (agent, task family or task) -> fields of SebulbaConfig.
LAYOUTS: dict[tuple[str, str], dict[str, Any]] = {
    ("qlambda", "catch"): dict(envs_per_thread=128, rollout_length=16, total_env_steps=409_600),
    ("ppo", "catch"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=409_600),
    ("impala", "catch"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=200_000),
    ("ppo", "classic"): dict(envs_per_thread=16, rollout_length=32, total_env_steps=500_000),
    ("impala", "classic"): dict(envs_per_thread=16, rollout_length=32, total_env_steps=500_000),
    ("ppo", "Acrobot-v1"): dict(envs_per_thread=16, rollout_length=32, total_env_steps=500_000),
    ("muzero", "catch"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=400_000),
    ("muzero", "classic"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=1_000_000),
    ("muzero", "Acrobot-v1"): dict(
        envs_per_thread=32, rollout_length=16, total_env_steps=1_000_000
    ),
    ("muzero", "MountainCar-v0"): dict(
        envs_per_thread=32, rollout_length=16, total_env_steps=1_000_000
    ),
    ("ppo", "minatar"): dict(envs_per_thread=64, rollout_length=128, total_env_steps=10_000_000),
    ("impala", "minatar"): dict(envs_per_thread=64, rollout_length=128, total_env_steps=10_000_000),
    ("impala", "atari"): dict(envs_per_thread=32, rollout_length=20, total_env_steps=10_000_000),
    ("muzero", "minatar"): dict(envs_per_thread=64, rollout_length=16, total_env_steps=10_000_000),
    ("pqn", "minatar"): dict(envs_per_thread=128, rollout_length=32, total_env_steps=10_000_000),
    ("pqn", "classic"): dict(envs_per_thread=32, rollout_length=64, total_env_steps=500_000),
    ("pqn", "MountainCar-v0"): dict(envs_per_thread=32, rollout_length=64, total_env_steps=500_000),
    ("impala", "MountainCar-v0"): dict(
        envs_per_thread=16, rollout_length=32, total_env_steps=1_000_000
    ),
    ("pqn", "catch"): dict(envs_per_thread=128, rollout_length=16, total_env_steps=409_600),
    ("ppo", "control"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=1_000_000),
    ("muzero", "control"): dict(envs_per_thread=8, rollout_length=16, total_env_steps=250_000),
    ("ppo", "mujoco"): dict(envs_per_thread=8, rollout_length=256, total_env_steps=1_000_000),
    ("impala", "control"): dict(envs_per_thread=32, rollout_length=16, total_env_steps=1_000_000),
}
