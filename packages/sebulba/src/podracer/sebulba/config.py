"""Sebulba's configuration: one frozen dataclass, validated before anything compiles.

Batch sizes: each actor thread steps `envs_per_thread` environments and ships
trajectories `[rollout_length + 1, envs_per_thread]`; the learner concatenates
`trajectories_per_update` of them along the batch axis for one update. So the actor batch
(`envs_per_thread`) and the learner batch (`trajectories_per_update * envs_per_thread`)
are set independently, and every trajectory is split evenly over the learner devices.

Multi-host (`--distributed`): device ids are indices into each process's local devices
(the same layout on every host); every process runs its own actor threads, so one update
trains on `trajectories_per_update` trajectories from each process, and
`total_env_steps` counts the steps of all processes.
"""

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

AgentName = Literal["impala", "ppo", "qlambda", "muzero"]
ActorLoop = Literal["auto", "xla", "python"]


# Actor layout (envs_per_thread, rollout_length) when not given. MuZero takes Anakin's
# 32 envs x 16 steps: its replay adds one sequence of T+1 steps per env and samples a fixed
# number of sequences per rollout, so 32 x 16 replays each step ~2x, like Anakin, where
# 16 x 32 replayed each step ~4x and cost twice the learner time per env step.
DEFAULT_LAYOUT = (16, 32)
AGENT_LAYOUTS = {"muzero": (32, 16)}


def _fail(field: str, expected: str, value) -> None:
    raise ValueError(f"SebulbaConfig.{field} must be {expected}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class SebulbaConfig:
    """A Sebulba training run. Defaults: envpool CartPole-v1 with IMPALA, minutes on a CPU."""

    env: str = "envpool:CartPole-v1"  # envpool:<task>, or any JaxEnv name (catch, gymnax:...)
    agent: AgentName = "impala"  # its options: --impala.*, --ppo.*, --qlambda.*, --muzero.*
    # Indices into jax.local_devices(). None: device 0 (shared with the learner on one
    # device), else the devices the learners do not use.
    actor_device_ids: tuple[int, ...] | None = None
    # Indices into jax.local_devices(). None: device 0 on one device, else all devices
    # but the actors'.
    learner_device_ids: tuple[int, ...] | None = None
    actor_threads_per_device: int = 1  # each thread owns envs_per_thread environments
    envs_per_thread: int | None = None  # the actor batch B of one trajectory; None: 16 (muzero 32)
    # Split each thread's envs into two halves stepped with send/recv, so one half's env
    # step overlaps the other half's inference.
    async_envs: bool = False
    # Rollout loop: "xla" runs recv -> policy -> send as one compiled scan (envpool's XLA
    # interface); "python" steps the HostEnv from Python; "auto": xla where available.
    actor_loop: ActorLoop = "auto"
    rollout_length: int | None = None  # T: env steps per trajectory; None: 32 (muzero 16)
    trajectories_per_update: int = 1  # K: actor trajectories in one learner batch
    total_env_steps: int = 500_000  # rounded up to whole updates
    seed: int = 0
    # Lag fixed at one update (trajectory g acts with params g // K - 1): runs repeat exactly.
    deterministic: bool = False
    queue_size: int = 2  # trajectories buffered per actor thread (bounds the policy lag)
    stage_timeout_s: float = 300.0  # any wait longer than this fails, naming the stage
    log_interval: int = 10  # updates between metric rows
    eval_interval: int = 0  # updates between greedy evaluations (0: none)
    eval_episodes: int = 16
    checkpoint_interval: int = 0  # updates between checkpoints (0: only the final one)
    keep_checkpoints: int = 3
    run_name: str | None = None  # writes runs_root/run_name/ when set
    runs_root: str = "runs"
    resume: bool = False  # continue runs_root/run_name/ from its last checkpoint
    tensorboard: bool = True
    progress: bool = True
    # --distributed, --coordinator-address, --num-processes, --process-id (multi-host)
    cluster: Annotated[DistributedConfig, tyro.conf.arg(name="")] = DistributedConfig()
    # IMPALA with lr 1e-3, a separate critic and clip 0.5 reaches 500 on envpool CartPole
    # within 5e5 steps (3 seeds of 3); ImpalaConfig's defaults stall near 150-250 there.
    impala: ImpalaConfig = ImpalaConfig(learning_rate=1e-3, separate_critic=True, max_grad_norm=0.5)
    ppo: PPOConfig = PPOConfig(anneal_lr=False)  # constant lr: annealed, 480 not 500 at 5e5
    qlambda: QLambdaConfig = QLambdaConfig()  # Q(lambda)'s options (with --agent qlambda)
    muzero: MuZeroConfig = MuZeroConfig()  # MuZero's options (with --agent muzero)

    def __post_init__(self) -> None:
        if self.agent not in AGENTS:
            _fail("agent", f"one of {sorted(AGENTS)}", self.agent)
        if not isinstance(self.env, str) or not self.env:
            _fail("env", "an environment name", self.env)
        layout = AGENT_LAYOUTS.get(self.agent, DEFAULT_LAYOUT)
        for name, default in zip(("envs_per_thread", "rollout_length"), layout, strict=True):
            if getattr(self, name) is None:
                object.__setattr__(self, name, default)
        for name in ("actor_threads_per_device", "envs_per_thread", "rollout_length",
                     "trajectories_per_update", "total_env_steps", "queue_size",
                     "log_interval", "eval_episodes", "keep_checkpoints"):  # fmt: skip
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                _fail(name, "a positive int", value)
        for name in ("eval_interval", "checkpoint_interval"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                _fail(name, "an int >= 0", value)
        if not self.stage_timeout_s > 0:
            _fail("stage_timeout_s", "> 0", self.stage_timeout_s)
        if self.actor_loop not in ("auto", "xla", "python"):
            _fail("actor_loop", "'auto', 'xla' or 'python'", self.actor_loop)
        if self.async_envs and self.envs_per_thread % 2:
            _fail("envs_per_thread", "even with async_envs (two halves)", self.envs_per_thread)
        if self.deterministic and self.async_envs:
            raise ValueError("SebulbaConfig.async_envs must be False with deterministic=True")
        for name in ("actor_device_ids", "learner_device_ids"):
            ids = getattr(self, name)
            if ids is None:
                continue
            ids = tuple(ids)
            object.__setattr__(self, name, ids)
            if not ids or any(not isinstance(i, int) or i < 0 for i in ids):
                _fail(name, "a non-empty tuple of device indices >= 0", ids)
            if len(set(ids)) != len(ids):
                _fail(name, "free of repeated ids", ids)
        if not isinstance(self.cluster, DistributedConfig):
            _fail("cluster", "a podracer.agents.DistributedConfig", self.cluster)
        if self.resume and not self.run_name:
            raise ValueError(
                "SebulbaConfig.resume needs SebulbaConfig.run_name (the run to resume)"
            )
        minibatches = getattr(self.agent_config, "num_minibatches", None)
        if minibatches and self.rollout_length % minibatches:
            raise ValueError(
                f"SebulbaConfig.rollout_length ({self.rollout_length}) must be divisible by "
                f"{self.agent}.num_minibatches ({minibatches})"
            )

    @property
    def agent_config(self):
        return getattr(self, self.agent)

    @property
    def num_lanes(self) -> int:
        """Env batches per actor thread stepped in turn (2 with async_envs)."""
        return 2 if self.async_envs else 1

    def device_ids(self, num_devices: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """`(actor_ids, learner_ids)` among `num_devices` local devices; fails naming the field.

        The two roles may share a device only as the single-device layout (both `(d,)`).
        """
        actor, learner = self.actor_device_ids, self.learner_device_ids
        if actor is None and learner is None:
            actor, learner = (
                ((0,), (0,)) if num_devices == 1 else ((0,), tuple(range(1, num_devices)))
            )
        elif actor is None:
            rest = tuple(i for i in range(num_devices) if i not in learner)
            actor = rest[:1] or learner[:1]
        elif learner is None:
            rest = tuple(i for i in range(num_devices) if i not in actor)
            learner = rest or actor[:1]
        for name, ids in (("actor_device_ids", actor), ("learner_device_ids", learner)):
            missing = [i for i in ids if i >= num_devices]
            if missing:
                raise ValueError(
                    f"SebulbaConfig.{name}={ids} names device(s) {missing} but only "
                    f"{num_devices} local device(s) exist (ids 0..{num_devices - 1})"
                )
        shared = set(actor) & set(learner)
        if shared and not (len(actor) == len(learner) == 1):
            raise ValueError(
                f"SebulbaConfig.actor_device_ids={actor} and learner_device_ids={learner} overlap "
                f"on {sorted(shared)}; roles may share only one device: (d,), (d,)"
            )
        if self.envs_per_thread % len(learner):
            raise ValueError(
                f"SebulbaConfig.envs_per_thread ({self.envs_per_thread}) must be divisible by the "
                f"number of learner devices ({len(learner)}): trajectories split along it"
            )
        return tuple(actor), tuple(learner)

    def num_actor_threads(self, num_actor_devices: int) -> int:
        return num_actor_devices * self.actor_threads_per_device

    def steps_per_update(self, num_processes: int = 1) -> int:
        """Env steps in one learner update: K trajectories from each process."""
        per_process = self.trajectories_per_update * self.rollout_length * self.envs_per_thread
        return num_processes * per_process

    def num_updates(self, num_processes: int = 1) -> int:
        return -(-self.total_env_steps // self.steps_per_update(num_processes))
