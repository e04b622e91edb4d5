"""The learner: K actor trajectories -> one `shard_map`'d update over the learner mesh.

Each trajectory arrives already split along its batch axis over the learner devices
(`P(None, "learner")`); inside `shard_map` every device concatenates its K local shards
and runs the agent's `update` on them, averaging gradients with `lax.pmean` over
"learner". Params, optimizer state and key are replicated (`P()`).

Trajectories are taken round-robin from the actors' queues (trajectory g from actor
g mod N), the order cleanba and Stoix use; it also makes deterministic mode exact.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from podracer.agents import Agent
from podracer.agents import TrainState
from podracer.sebulba.actor import Actor
from podracer.sebulba.actor import Rollout
from podracer.sebulba.lifetime import Supervisor

AXIS = "learner"


def learner_mesh(devices: Sequence[jax.Device]) -> Mesh:
    return Mesh(np.asarray(devices), (AXIS,))


def trajectory_sharding(mesh: Mesh) -> NamedSharding:
    """Time-major `[T+1, B, ...]` arrays split along B over the learner devices."""
    return NamedSharding(mesh, P(None, AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def make_update(agent: Agent, mesh: Mesh):
    """`update(state, trajectories) -> (state, metrics)`, jitted and sharded over `mesh`."""
    reduce_grads = lambda tree: jax.lax.pmean(tree, AXIS)

    def update(state: TrainState, trajectories: tuple) -> tuple[TrainState, dict]:
        trajectory = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)
        key, update_key = jax.random.split(state.key)
        params, opt_state, metrics = agent.update(
            state.params, state.opt_state, trajectory, update_key, reduce_grads
        )
        return TrainState(params, opt_state, key, state.update_step + 1), metrics

    sharded = jax.shard_map(
        update, mesh=mesh, in_specs=(P(), P(None, AXIS)), out_specs=(P(), P()),
        # Envs emit device-invariant constants (e.g. never-truncating `truncated`) that the
        # varying-axis check would reject; outputs are replicated by the pmeans above.
        check_vma=False,
    )  # fmt: skip
    return jax.jit(sharded)


class Learner:
    """Collects rollouts from the actors' queues and applies updates."""

    def __init__(self, agent: Agent, mesh: Mesh, actors: Sequence[Actor], supervisor: Supervisor):
        self.mesh = mesh
        self._actors = tuple(actors)
        self._supervisor = supervisor
        self._update = make_update(agent, mesh)

    def collect(self, first: int, count: int) -> list[Rollout]:
        """Global trajectories `first .. first + count - 1`, each from actor g mod N."""
        out = []
        for g in range(first, first + count):
            actor = self._actors[g % len(self._actors)]
            stage = lambda a=actor: f"learner waiting for a trajectory from {a.name}; {a.stage()}"
            out.append(self._supervisor.get(actor.queue, stage))
        return out

    def update(
        self, state: TrainState, rollouts: Sequence[Rollout]
    ) -> tuple[TrainState, dict[str, float], float]:
        """One update; returns the new state, its metrics (host floats) and its seconds."""
        start = time.perf_counter()
        state, metrics = self._update(state, tuple(r.trajectory for r in rollouts))
        metrics = {k: float(v) for k, v in jax.device_get(metrics).items()}
        return state, metrics, time.perf_counter() - start


def place_state(state: Any, mesh: Mesh) -> Any:
    """Replicates the train state over the learner mesh."""
    return jax.device_put(state, replicated(mesh))
