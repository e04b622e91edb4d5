"""Anakin's configuration: one frozen dataclass, validated before anything compiles."""

from __future__ import annotations

import dataclasses
from typing import Annotated
from typing import Literal

import tyro

from podracer.agents import AGENTS
from podracer.agents import DistributedConfig
from podracer.agents import ImpalaConfig
from podracer.agents import MuZeroConfig
from podracer.agents import PPOConfig
from podracer.agents import QLambdaConfig

AgentName = Literal["qlambda", "impala", "ppo", "muzero"]


@dataclasses.dataclass(frozen=True)
class AnakinConfig:
    """Anakin training run. Defaults: the Podracer demo (Catch with Q(lambda)).

    Sizes are global: `num_envs` environments are split evenly over the devices, so the
    same config gives the same learning curve on 1, 2 or 4 devices.
    """

    env: str = "catch"  # a JaxEnv name: "catch", "gymnax:CartPole-v1", ...
    agent: AgentName = "qlambda"
    num_envs: int = 128  # global batch of environments, split over devices
    rollout_length: int = 16  # T: environment steps per update
    updates_per_chunk: int = 50  # K: updates per compiled chunk (one host call)
    total_env_steps: int = 409_600  # rounded up to whole chunks
    # Wall-clock budget in seconds (compile included); 0: none. The run stops after the
    # chunk that passes it, with its final checkpoint, as if that were the last chunk.
    max_wall_seconds: float = 0.0
    seed: int = 0
    num_devices: int | None = None  # None: every device of every process
    eval_every_chunks: int = 0  # 0: no periodic greedy evaluation
    eval_envs: int = 64
    eval_max_steps: int = 1000  # per-episode cap for envs without a time limit
    checkpoint_every_chunks: int = 0  # 0: only a final checkpoint (when a run name is set)
    keep_checkpoints: int = 3
    run_name: str | None = None  # writes runs/<run_name>/ when set
    runs_root: str = "runs"
    resume: bool = False  # continue runs/<run_name>/ from its last checkpoint
    tensorboard: bool = True
    progress: bool = True
    # --distributed, --coordinator-address, --num-processes, --process-id
    cluster: Annotated[DistributedConfig, tyro.conf.arg(name="")] = DistributedConfig()
    qlambda: QLambdaConfig = QLambdaConfig()
    impala: ImpalaConfig = ImpalaConfig()
    ppo: PPOConfig = PPOConfig()
    muzero: MuZeroConfig = MuZeroConfig()

    def __post_init__(self) -> None:
        if self.agent not in AGENTS:
            raise ValueError(
                f"AnakinConfig.agent must be one of {sorted(AGENTS)}, got {self.agent!r}"
            )
        for name in (
            "num_envs",
            "rollout_length",
            "updates_per_chunk",
            "total_env_steps",
            "eval_envs",
            "eval_max_steps",
            "keep_checkpoints",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"AnakinConfig.{name} must be a positive int, got {value!r}")
        for name in ("eval_every_chunks", "checkpoint_every_chunks", "max_wall_seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"AnakinConfig.{name} must be >= 0, got {getattr(self, name)!r}")
        if self.num_devices is not None and self.num_devices < 1:
            raise ValueError(
                f"AnakinConfig.num_devices must be >= 1 or None, got {self.num_devices!r}"
            )
        replay = getattr(self.agent_config, "replay", None)
        if replay is not None and replay.enabled and replay.capacity < self.num_envs:
            raise ValueError(
                f"{type(self.agent_config).__name__}.replay.capacity={replay.capacity} must be "
                f">= AnakinConfig.num_envs={self.num_envs} (a rollout adds one sequence per env)"
            )
        if self.resume and not self.run_name:
            raise ValueError("AnakinConfig.resume needs AnakinConfig.run_name (the run to resume)")

    @property
    def agent_config(self):
        return getattr(self, self.agent)

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.rollout_length

    @property
    def steps_per_chunk(self) -> int:
        return self.steps_per_update * self.updates_per_chunk

    @property
    def num_chunks(self) -> int:
        return -(-self.total_env_steps // self.steps_per_chunk)

    def check_devices(self, num_available: int) -> int:
        """The device count to use; fails naming the field when the split is uneven."""
        n = num_available if self.num_devices is None else self.num_devices
        if n > num_available:
            raise ValueError(f"AnakinConfig.num_devices={n} but only {num_available} devices exist")
        if self.num_envs % n:
            raise ValueError(
                f"AnakinConfig.num_envs={self.num_envs} must be divisible by the {n} devices"
            )
        replay = getattr(self.agent_config, "replay", None)
        if replay is not None and replay.enabled:
            owner = f"{type(self.agent_config).__name__}.replay"
            for name in ("capacity", "sequences_per_update"):
                value = getattr(replay, name)
                if value % n:
                    raise ValueError(f"{owner}.{name}={value} must be divisible by the {n} devices")
        if self.eval_every_chunks and self.eval_envs % n:
            raise ValueError(
                f"AnakinConfig.eval_envs={self.eval_envs} must be divisible by the {n} devices"
            )
        return n
