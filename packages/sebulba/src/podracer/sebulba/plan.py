"""Where a Sebulba process's work runs and how much of it there is, decided once after
the run opens: the `Plan`. The envs, the actors and the learner loop are built from
`(agent, plan)` and read nothing else, so a setting is followed from the command line to
the plan and from the plan to the line that uses it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING
from typing import Any

import jax

from podracer.sebulba.learner import global_learner_mesh
from podracer.sebulba.learner import learner_mesh
from podracer.sebulba.learner import process_devices

if TYPE_CHECKING:
    from jax.sharding import Mesh

    from podracer.sebulba.config import SebulbaConfig


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """One process's layout (one seed's where not said: each seed has its own threads)."""

    actor_devices: tuple[Any, ...]  # this process's actor devices; `threads_per_device` each
    threads_per_device: int
    learner_mesh: Mesh  # every process's learner devices: the update is split over them
    local_learner_mesh: Mesh  # this process's: where its actors put trajectories
    first_thread: int  # the global index of this process's first actor thread
    num_lanes: int  # env batches per thread, stepped in turn (2: while one steps, act)
    lane_envs: int  # envs per lane
    rollout_length: int
    trajectories_per_update: int  # from each process
    steps_per_update: int  # env steps of one update, over all processes
    queue_size: int  # trajectories an actor may run ahead of the learner
    actor_loop: str  # "auto", "xla" or "python" (`choose_loop`)
    deterministic: bool  # actors' trajectories consumed in a fixed order
    seed: int
    num_seeds: int
    members_at_once: int  # seeds the learner updates side by side, the others in turns; 0: all

    @classmethod
    def of(cls, config: SebulbaConfig, process: int, num_processes: int) -> Plan:
        """The plan of process `process` of `num_processes` for a checked `config`; fails
        naming the field when the devices do not fit it."""
        devices = process_devices(process)
        pool = actor_pool(config.actor_backend, process, devices)
        separate = None if pool is devices else len(pool)
        actor_ids, learner_ids = config.device_ids(len(devices), separate)
        num_threads = config.num_actor_threads(len(actor_ids))
        return cls(
            actor_devices=tuple(pool[i] for i in actor_ids),
            threads_per_device=config.actor_threads_per_device,
            learner_mesh=global_learner_mesh(learner_ids),
            local_learner_mesh=learner_mesh([devices[i] for i in learner_ids]),
            first_thread=process * num_threads,
            num_lanes=config.num_lanes,
            lane_envs=config.envs_per_thread // config.num_lanes,
            rollout_length=config.rollout_length,
            trajectories_per_update=config.trajectories_per_update,
            steps_per_update=config.steps_per_update(num_processes),
            queue_size=config.queue_size,
            actor_loop=config.actor_loop,
            deterministic=config.deterministic,
            seed=config.seed,
            num_seeds=config.num_seeds,
            members_at_once=config.members_at_once,
        )

    @property
    def num_threads(self) -> int:
        """This process's actor threads, per seed."""
        return len(self.actor_devices) * self.threads_per_device

    def thread_device(self, thread: int) -> Any:
        """The actor device of this process's `thread`-th thread (of a seed's)."""
        return self.actor_devices[thread // self.threads_per_device]


def actor_pool(actor_backend: str, process: int, devices: list) -> list:
    """The devices actor ids index: `devices` (this process's default-backend devices), or
    its CPU devices with `actor_backend="cpu"` when the default backend is another."""
    if actor_backend == "default" or devices[0].platform == "cpu":
        return devices
    cpus = [d for d in jax.devices("cpu") if d.process_index == process]
    return sorted(cpus, key=lambda d: d.id)
