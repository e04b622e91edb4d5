"""Sebulba's configuration: the shared `RunConfig` plus Sebulba's actor and learner layout.

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
from typing import Any
from typing import ClassVar
from typing import Literal

from podracer.agents import ConfigError
from podracer.agents.validation import check_int
from podracer.agents.validation import fail
from podracer.runs import RunConfig
from podracer.sebulba.presets import LAYOUTS

ActorLoop = Literal["auto", "xla", "python"]


@dataclasses.dataclass(frozen=True)
class SebulbaConfig(RunConfig):
    """A Sebulba training run. Defaults: envpool CartPole-v1 with IMPALA, minutes on a CPU."""

    env: str = "envpool:CartPole-v1"  # envpool:<task>, or any JaxEnv name (catch, gymnax:...)
    agent: str = "impala"  # a registered agent (or an import path); its flags: --NAME.*
    # Indices into jax.local_devices(). None: device 0 (shared with the learner on one
    # device), else the devices the learners do not use.
    actor_device_ids: tuple[int, ...] | None = None
    # Indices into jax.local_devices(). None: device 0 on one device, else all devices
    # but the actors'.
    learner_device_ids: tuple[int, ...] | None = None
    # Where actors run: "default" (the default backend's devices) or "cpu": this host's CPU,
    # with the accelerator left to the learners. A CPU actor runs envpool's XLA loop, a
    # whole rollout per compiled call, so actor threads do not wait on one another for the
    # interpreter lock as per-step Python loops do (each call releases it for the rollout).
    actor_backend: Literal["default", "cpu"] = "default"
    actor_threads_per_device: int = 1  # each thread owns envs_per_thread environments
    envs_per_thread: int = 16  # the actor batch B of one trajectory
    # Split each thread's envs into two halves stepped with send/recv, so one half's env
    # step overlaps the other half's inference.
    async_envs: bool = False
    # Rollout loop: "xla" runs recv -> policy -> send as one compiled scan (envpool's XLA
    # interface); "python" steps the HostEnv from Python; "auto": xla where available.
    actor_loop: ActorLoop = "auto"
    rollout_length: int = 32  # T: env steps per trajectory
    trajectories_per_update: int = 1  # K: actor trajectories in one learner batch
    # Lag fixed at one update (trajectory g acts with params g // K - 1): runs repeat exactly.
    deterministic: bool = False
    queue_size: int = 2  # trajectories buffered per actor thread (bounds the policy lag)
    stage_timeout_s: float = 300.0  # any wait longer than this fails, naming the stage
    # Independent runs of seeds seed, seed+1, ... in one process (metrics, a TensorBoard
    # run and checkpoints per seed): each seed has its own actor threads and envs, seeded
    # as the single run with seed+k seeds its own, and the learner updates all seeds in
    # one vmapped step, so seed k trains as a run with seed+k would; total_env_steps
    # counts one seed's steps, as Anakin's.
    num_seeds: int = 1
    members_at_once: int = 0  # seeds updated side by side; fewer: in turns (as Anakin's)

    RUNTIME: ClassVar[str] = "sebulba"
    # Each preset's sizes on this runtime (podracer/sebulba/presets.py).
    LAYOUTS: ClassVar[dict[tuple[str, str], dict[str, Any]]] = LAYOUTS
    # Placement may change on resume, and so may how the global batch of an update is
    # gathered (a run moved from 2 hosts x 1 thread to 1 host x 2 threads, say).
    MAY_CHANGE_ON_RESUME: ClassVar[frozenset[str]] = RunConfig.MAY_CHANGE_ON_RESUME | {
        "actor_device_ids", "learner_device_ids", "actor_loop", "queue_size", "stage_timeout_s",
        "actor_threads_per_device", "trajectories_per_update", "actor_backend", "members_at_once",
    }  # fmt: skip

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self, "actor_threads_per_device", "envs_per_thread", "rollout_length",
                  "trajectories_per_update", "queue_size", "num_seeds")  # fmt: skip
        self.check_members_at_once("num_seeds")
        if not isinstance(self.stage_timeout_s, int | float) or not self.stage_timeout_s > 0:
            fail(self, "stage_timeout_s", "> 0")
        if self.actor_loop not in ("auto", "xla", "python"):
            fail(self, "actor_loop", "'auto', 'xla' or 'python'")
        if self.async_envs and self.envs_per_thread % 2:
            fail(self, "envs_per_thread", "even with async_envs (two halves)")
        if self.deterministic and self.async_envs:
            fail(self, "async_envs", "False with deterministic=True")
        for name in ("actor_device_ids", "learner_device_ids"):
            ids = getattr(self, name)
            if ids is None:
                continue
            ids = tuple(ids)
            object.__setattr__(self, name, ids)
            if not ids or any(not isinstance(i, int) or i < 0 for i in ids):
                fail(self, name, "a non-empty tuple of device indices >= 0")
            if len(set(ids)) != len(ids):
                fail(self, name, "free of repeated ids")

    @property
    def num_members(self) -> int:
        """Independent trainings on the train state's leading axis: the seeds."""
        return self.num_seeds

    def member_tags(self) -> list[dict[str, Any]]:
        """Each seed's rows carry `seed` (its index) in a multi-seed run."""
        return [{"seed": k} for k in range(self.num_seeds)] if self.num_seeds > 1 else [{}]

    @property
    def num_lanes(self) -> int:
        """Env batches per actor thread stepped in turn (2 with async_envs)."""
        return 2 if self.async_envs else 1

    def device_ids(
        self, num_devices: int, num_actor_devices: int | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """`(actor_ids, learner_ids)` among `num_devices` local devices; fails naming the field.

        `num_actor_devices`: the size of a separate pool the actor ids index (CPU actors
        beside accelerator learners): then actors default to its device 0 and learners to
        every device. Within one pool the two roles may share a device only as the
        single-device layout (both `(d,)`).
        """
        actor, learner = self.actor_device_ids, self.learner_device_ids
        if num_actor_devices is not None:
            return self._separate_ids(num_devices, num_actor_devices)
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
                raise ConfigError(
                    f"SebulbaConfig.{name}={ids} names device(s) {missing} but only "
                    f"{num_devices} local device(s) exist (ids 0..{num_devices - 1})"
                )
        shared = set(actor) & set(learner)
        if shared and not (len(actor) == len(learner) == 1):
            raise ConfigError(
                f"SebulbaConfig.actor_device_ids={actor} and learner_device_ids={learner} overlap "
                f"on {sorted(shared)}; roles may share only one device: (d,), (d,)"
            )
        if self.envs_per_thread % len(learner):
            raise ConfigError(
                f"SebulbaConfig.envs_per_thread ({self.envs_per_thread}) must be divisible by the "
                f"number of learner devices ({len(learner)}): trajectories split along it"
            )
        self.check_rollout(self.rollout_length, self.learner_envs(len(learner)),
                           envs_field="envs_per_thread")  # fmt: skip
        replay = getattr(self.agent_config, "replay", None)
        if replay is not None and replay.enabled:
            owner = f"{type(self.agent_config).__name__}.replay"
            for name in ("capacity", "sequences_per_update"):
                value = getattr(replay, name)
                if value % len(learner):
                    raise ConfigError(
                        f"{owner}.{name}={value} must be divisible by the {len(learner)} "
                        f"learner devices"
                    )
        return tuple(actor), tuple(learner)

    def _separate_ids(self, num_devices: int, num_actor_devices: int):
        actor = self.actor_device_ids or (0,)
        learner = self.learner_device_ids or tuple(range(num_devices))
        for name, ids, n in (("actor_device_ids", actor, num_actor_devices),
                             ("learner_device_ids", learner, num_devices)):  # fmt: skip
            if any(i >= n for i in ids):
                raise ConfigError(f"SebulbaConfig.{name}={ids} names a device beyond the {n} there")
        if self.envs_per_thread % len(learner):
            raise ConfigError(
                f"SebulbaConfig.envs_per_thread ({self.envs_per_thread}) must be divisible by the "
                f"number of learner devices ({len(learner)}): trajectories split along it"
            )
        self.check_rollout(self.rollout_length, self.learner_envs(len(learner)),
                           envs_field="envs_per_thread")  # fmt: skip
        return tuple(actor), tuple(learner)

    def learner_envs(self, num_learner_devices: int) -> int:
        """Envs in each learner device's share of an update: its split of K trajectories."""
        return self.trajectories_per_update * self.envs_per_thread // num_learner_devices

    def num_actor_threads(self, num_actor_devices: int) -> int:
        return num_actor_devices * self.actor_threads_per_device

    def steps_per_update(self, num_processes: int = 1) -> int:
        """Env steps in one learner update: K trajectories from each process."""
        per_process = self.trajectories_per_update * self.rollout_length * self.envs_per_thread
        return num_processes * per_process

    def update_size(self, num_processes: int = 1) -> tuple[int, str]:
        fields = (f"trajectories_per_update {self.trajectories_per_update} x envs_per_thread "
                  f"{self.envs_per_thread:,} x rollout_length {self.rollout_length}")  # fmt: skip
        if num_processes > 1:
            fields += f" x {num_processes} processes"
        return self.steps_per_update(num_processes), fields

    def num_updates(self, num_processes: int = 1) -> int:
        return self.planned_env_steps(num_processes) // self.steps_per_update(num_processes)
