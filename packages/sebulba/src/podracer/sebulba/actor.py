"""Actor threads: params in, trajectories out, each split along B onto the learner mesh.

An `Actor` owns a rollout loop (its HostEnv lanes and jitted policy on its actor device)
and runs it in a worker thread. Per rollout it reads params from the `ParameterServer`
(the newest, or in deterministic mode the exact version its schedule names), runs the
loop, ships the trajectory to the learner devices with one `device_put` onto
`NamedSharding(learner_mesh, P(None, "learner"))` and puts a `Rollout` on its own bounded
queue. It publishes its current stage, so a timeout elsewhere can say where it is stuck.
"""

from __future__ import annotations

import itertools
import queue
import time
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import numpy as np

from podracer.agents import Trajectory
from podracer.sebulba.lifetime import Supervisor
from podracer.sebulba.params import ParameterServer
from podracer.sebulba.rollout import PythonLoop
from podracer.sebulba.rollout import XlaLoop
from podracer.sebulba.timing import PhaseTimer


class Rollout(NamedTuple):
    """One actor trajectory as the learner receives it."""

    trajectory: Trajectory  # [T+1, B, ...] on the learner mesh, split along B
    actor: int  # index of the actor thread
    index: int  # the thread's rollout counter: 0, 1, ...
    version: int  # params version the actor acted with
    env_steps: int  # T * B
    episode_returns: np.ndarray  # [n] returns of the episodes that ended in this rollout
    episode_lengths: np.ndarray  # [n]
    timing: dict[str, float]  # seconds per actor phase since the previous rollout was queued


def deterministic_schedule(
    actor: int, num_actors: int, per_update: int, first_version: int
) -> Callable[[int], int]:
    """Rollout n of actor i is global trajectory g = n * num_actors + i; it acts with
    version `first_version + max(0, g // per_update - 1)`.

    Update u (0-based) consumes trajectories g in [u K, (u + 1) K) and holds version
    `first_version + u` then, so every trajectory after the first update's is exactly one
    update behind the learner that consumes it (the first K + K use the initial params).
    """

    def version(n: int) -> int:
        g = n * num_actors + actor
        return first_version + max(0, g // per_update - 1)

    return version


class Actor:
    """One actor thread; `start` runs it under the supervisor."""

    def __init__(
        self,
        index: int,
        loop: PythonLoop | XlaLoop,
        device: jax.Device,
        learner_sharding: jax.sharding.Sharding,
        params: ParameterServer,
        supervisor: Supervisor,
        queue_size: int,
        timer: PhaseTimer,
        schedule: Callable[[int], int] | None = None,
        member: int | None = None,
    ):
        self.index = index
        # In a multi-seed run, the seed this actor acts for: its params are that member's
        # of the published stack (`[S, ...]` leaves).
        self.member = member
        self.loop = loop
        self.queue: queue.Queue[Rollout] = queue.Queue(maxsize=queue_size)
        self._device = device
        self._sharding = learner_sharding
        self._params = params
        self._supervisor = supervisor
        self._timer = timer
        self._schedule = schedule
        self._stage = ("not started", time.monotonic())
        self._steps = None
        # Actor and learner sharing one device (the single-CPU layout): params and an
        # on-device trajectory are already where they are needed, and skipping the
        # device_put saves its per-leaf dispatch (~0.3-0.8 ms a rollout on CartPole, 10%).
        self._shared_device = jax.process_count() == 1 and learner_sharding.device_set == {device}

    @property
    def name(self) -> str:
        seed = "" if self.member is None else f"-seed-{self.member}"
        return f"actor-{self.index}{seed}"

    def stage(self) -> str:
        """What the thread is doing now and for how long, for timeout messages."""
        what, since = self._stage
        return f"{self.name} is in {what!r} for {time.monotonic() - since:.1f}s"

    def _enter(self, what: str) -> None:
        self._stage = (what, time.monotonic())

    def start(self) -> None:
        self._supervisor.spawn(self.name, self._run)

    def _acting_params(self, n: int, cache: list) -> tuple[int, Any]:
        if self._schedule is None:
            version, params = self._params.latest()
        else:
            version = self._schedule(n)
            self._enter(f"waiting for params version {version}")
            params = self._params.get(version, self._supervisor, self.stage)
        if cache[0] != version:  # copy to the actor device once per version
            if self.member is not None:
                params = jax.tree.map(lambda x: x[self.member], params)
            if not self._shared_device:
                params = jax.device_put(params, self._device)
            cache[:] = [version, params]
        return version, cache[1]

    def _run(self) -> None:
        self._enter("env reset")
        self.loop.start()
        timer = self._timer
        timer.restart()
        cache: list = [None, None]
        for n in itertools.count():
            self._supervisor.check()
            version, params = self._acting_params(n, cache)
            timer.lap("params")
            self._enter("rollout (env step and inference)")
            out = self.loop.rollout(params, version)
            self._enter("shipping to the learner devices")
            trajectory = out.trajectory
            if not (self._shared_device and self.loop.trajectory_on_device):
                trajectory = self.loop.ship(trajectory, self._sharding)
            timer.lap("ship")
            if self._steps is None:
                self._steps = (out.trajectory.action.shape[0] - 1) * out.trajectory.action.shape[1]
            rollout = Rollout(
                trajectory, actor=self.index, index=n, version=version, env_steps=self._steps,
                episode_returns=out.episode_returns, episode_lengths=out.episode_lengths,
                timing=timer.take(),
            )  # fmt: skip
            self._enter("queue put (waiting for the learner)")
            self._supervisor.put(self.queue, rollout, self.stage)
            timer.lap("queue_put")
