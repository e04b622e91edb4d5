"""Anakin's layout of each preset: the sizes that go with a preset's agent config on
Anakin, named as `AnakinConfig` names them.

The agent configs and their sources are shared by both runtimes
(`podracer.agents.presets`); a preset without a layout here runs with the config's
defaults. Add your own with `podracer.runs.register_layout(AnakinConfig, agent, name, ...)`.
"""

from typing import Any

# (agent, task family or task) -> fields of AnakinConfig.
LAYOUTS: dict[tuple[str, str], dict[str, Any]] = {
    ("qlambda", "catch"): dict(
        num_envs=128, rollout_length=16, updates_per_chunk=50, total_env_steps=409_600
    ),
    ("ppo", "catch"): dict(
        num_envs=128, rollout_length=16, updates_per_chunk=50, total_env_steps=409_600
    ),
    ("impala", "catch"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=50, total_env_steps=200_000
    ),
    ("ppo", "classic"): dict(
        num_envs=4, rollout_length=128, updates_per_chunk=100, total_env_steps=500_000
    ),
    ("impala", "classic"): dict(
        num_envs=16, rollout_length=32, updates_per_chunk=100, total_env_steps=500_000
    ),
    ("ppo", "Acrobot-v1"): dict(num_envs=16, rollout_length=32, total_env_steps=500_000),
    ("muzero", "catch"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=50, total_env_steps=400_000
    ),
    ("muzero", "classic"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=50, total_env_steps=1_000_000
    ),
    ("muzero", "Acrobot-v1"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=50, total_env_steps=1_000_000
    ),
    ("muzero", "MountainCar-v0"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=50, total_env_steps=1_000_000
    ),
    ("ppo", "minatar"): dict(
        num_envs=64, rollout_length=128, updates_per_chunk=10, total_env_steps=10_000_000
    ),
    ("impala", "minatar"): dict(
        num_envs=64, rollout_length=128, updates_per_chunk=10, total_env_steps=10_000_000
    ),
    ("muzero", "minatar"): dict(
        num_envs=64, rollout_length=16, updates_per_chunk=50, total_env_steps=10_000_000
    ),
    ("pqn", "minatar"): dict(
        num_envs=128, rollout_length=32, updates_per_chunk=10, total_env_steps=10_000_000
    ),
    ("pqn", "classic"): dict(
        num_envs=32, rollout_length=64, updates_per_chunk=20, total_env_steps=500_000
    ),
    ("pqn", "MountainCar-v0"): dict(
        num_envs=32, rollout_length=64, updates_per_chunk=20, total_env_steps=500_000
    ),
    ("impala", "MountainCar-v0"): dict(
        num_envs=16, rollout_length=32, updates_per_chunk=100, total_env_steps=1_000_000
    ),
    ("pqn", "catch"): dict(
        num_envs=128, rollout_length=16, updates_per_chunk=50, total_env_steps=409_600
    ),
    ("ppo", "control"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=100, total_env_steps=1_000_000
    ),
    ("impala", "control"): dict(
        num_envs=32, rollout_length=16, updates_per_chunk=100, total_env_steps=1_000_000
    ),
    ("muzero", "control"): dict(
        num_envs=8, rollout_length=16, updates_per_chunk=20, total_env_steps=250_000
    ),
}
