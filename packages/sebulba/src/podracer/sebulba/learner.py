"""The learner: K actor trajectories -> one `shard_map`'d update over the learner mesh.

Each trajectory arrives already split along its batch axis over this process's learner
devices (`P(None, "learner")` on the local learner mesh); inside `shard_map` every device
concatenates its K local shards and runs the agent's `update` on them, averaging
gradients with `lax.pmean` over "learner". Params, optimizer state and key are
replicated (`P()`).

Multi-host: the learner mesh spans the learner devices of every process, process by
process. Each process feeds only its own shards: a local trajectory `[T+1, B]` becomes
block `p` of a global `[T+1, P*B]` array (`to_global`), so the update, and its pmean,
runs over all hosts' learner devices at once. The same update carries each process's
stop vote (SIGINT/SIGTERM) to all others, so every process stops after the same update.

Agents with replay (MuZero) keep a buffer on every learner device, sharded like the
trajectories: each device adds its shards of the K trajectories to its own buffer and
learns from sequences sampled there (`podracer.agents.make_learn`, as in Anakin). The
buffers live in the learner, not in checkpoints: a resumed run refills them.

Several seeds (`num_seeds` S > 1): the train state has a leading member axis `[S]`
(replicated like the rest), each seed has its own actors, and one update takes K
trajectories of every seed and runs the agent's learn step `vmap`ped over the members
inside `shard_map` (seed k's trajectories `[T+1, B]` stacked to `[S, T+1, B]`); the
replay buffers, if any, get a member axis after the device one (`[D, S, ...]`).

Trajectories are taken round-robin from the actors' queues (trajectory g from actor
g mod N), the order cleanba and Stoix use; it also makes deterministic mode exact.

`learn` is the learner's loop, run in the main thread under the run harness: collect,
update, publish the params, log, evaluate, checkpoint.
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
from podracer.agents import init_local_replays
from podracer.agents import init_train_state
from podracer.agents import make_learn
from podracer.agents import pmean_flat
from podracer.agents import vmap_in_turns
from podracer.sebulba.actor import Actor
from podracer.sebulba.actor import Rollout
from podracer.sebulba.lifetime import Supervisor

AXIS = "learner"


def learner_mesh(devices: Sequence[jax.Device]) -> Mesh:
    return Mesh(np.asarray(devices), (AXIS,))


def process_devices(process: int) -> list[jax.Device]:
    """The devices of `process`, in the order every process agrees on (by id)."""
    return sorted((d for d in jax.devices() if d.process_index == process), key=lambda d: d.id)


def global_learner_mesh(learner_ids: Sequence[int]) -> Mesh:
    """The learner devices `learner_ids` (local indices) of every process, process-major.

    Process p's devices are positions `[p L, (p + 1) L)`, so splitting a global batch
    along the mesh gives process p the contiguous block p: its own trajectories.
    """
    return learner_mesh(
        [process_devices(p)[i] for p in range(jax.process_count()) for i in learner_ids]
    )


def to_global(tree: Any, mesh: Mesh) -> Any:
    """This process's `[T+1, B, ...]` arrays (on its learner devices) as block p of global
    `[T+1, P*B, ...]` arrays on `mesh`; no copy. The identity with one process."""
    if jax.process_count() == 1:
        return tree
    sharding = trajectory_sharding(mesh)
    count = jax.process_count()

    def leaf(x: jax.Array) -> jax.Array:
        shape = (x.shape[0], x.shape[1] * count, *x.shape[2:])
        return jax.make_array_from_single_device_arrays(
            shape, sharding, [s.data for s in x.addressable_shards]
        )

    return jax.tree.map(leaf, tree)


def local_replica(tree: Any) -> Any:
    """One local copy of replicated (possibly multi-process) arrays, for this host's actors."""
    return jax.tree.map(lambda x: x.addressable_shards[0].data, tree)


def trajectory_sharding(mesh: Mesh) -> NamedSharding:
    """Time-major `[T+1, B, ...]` arrays split along B over the learner devices."""
    return NamedSharding(mesh, P(None, AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def make_update(agent: Agent, mesh: Mesh, num_seeds: int = 1, members_at_once: int = 0):
    """`update(state, trajectories, stop_votes, replay) -> (state, metrics, stop, replay)`,
    jitted and sharded over `mesh`. `stop_votes` `[num learner devices]` int32 (split
    over them) are OR-ed into the replicated `stop`: the vote rides on the update's
    collectives. `replay`: the per-device buffers (`[D, ...]`, donated), or None.

    With `num_seeds > 1`, `state` has a leading member axis, `trajectories` is one tuple
    of trajectories per seed, and the learn step is vmapped over the members (metrics
    `[S]`, replay `[D, S, ...]`), or mapped over them `members_at_once` at a time (0: all
    side by side)."""
    # One all-reduce for all gradients and metrics.
    learn = make_learn(agent, mesh.size, AXIS, pmean_flat(AXIS))
    concat = lambda ts: jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *ts)  # noqa: E731

    def members(state, trajectory, replay):  # the replay's member axis is its second
        if not 0 < members_at_once < num_seeds:
            return jax.vmap(learn, in_axes=(0, 0, 1), out_axes=(0, 0, 1))(state, trajectory, replay)
        # In turns: only a group's temporaries are live, state and replay updated in place
        turns = vmap_in_turns(learn, num_seeds, members_at_once, in_axes=(0, 0, 1),
                              out_axes=(0, 0, 1), in_place={0: 0, 2: 2})  # fmt: skip
        return turns(state, trajectory, replay)

    def update(state: TrainState, trajectories: tuple, stop_votes: jax.Array, replay):
        if num_seeds == 1:
            state, metrics, replay = learn(state, concat(trajectories), replay)
        else:
            per_seed = [concat(ts) for ts in trajectories]
            trajectory = jax.tree.map(lambda *xs: jnp.stack(xs), *per_seed)  # [S, T+1, b]
            state, metrics, replay = members(state, trajectory, replay)
        stop = jax.lax.pmax(jnp.max(stop_votes), AXIS)
        return state, metrics, stop, replay

    sharded = jax.shard_map(
        update, mesh=mesh, in_specs=(P(), P(None, AXIS), P(AXIS), P(AXIS)),
        out_specs=(P(), P(), P(), P(AXIS)),
        # Envs emit device-invariant constants (e.g. never-truncating `truncated`) that the
        # varying-axis check would reject; outputs are replicated by the pmeans above.
        check_vma=False,
    )  # fmt: skip
    return jax.jit(sharded, donate_argnums=3)


def stop_votes(vote: bool, mesh: Mesh) -> jax.Array:
    """This process's vote on each of its learner devices, as a global `[devices]` array."""
    sharding = NamedSharding(mesh, P(AXIS))
    local = np.full(len(sharding.addressable_devices), int(vote), np.int32)
    return jax.make_array_from_process_local_data(sharding, local, (mesh.size,))


class Learner:
    """Collects rollouts from this process's actors' queues and applies updates."""

    def __init__(
        self,
        agent: Agent,
        mesh: Mesh,
        actors: Sequence[Actor],
        supervisor: Supervisor,
        num_seeds: int = 1,
        members_at_once: int = 0,
    ):
        self.mesh = mesh  # every process's learner devices
        self.num_seeds = num_seeds
        # Each seed's actors: `actors` holds them seed by seed, the same number each.
        per_seed = len(actors) // num_seeds
        self._actors = [tuple(actors[k * per_seed : (k + 1) * per_seed]) for k in range(num_seeds)]
        self._supervisor = supervisor
        self.agent = agent
        self._update = make_update(agent, mesh, num_seeds, members_at_once)
        self._replay = None  # per-device buffers, made on the first update (agent.replay)
        # Both possible votes, placed once: nothing goes host-to-device for them per update.
        self._votes = {vote: stop_votes(vote, mesh) for vote in (False, True)}

    def collect(self, first: int, count: int) -> list[list[Rollout]]:
        """Each seed's global trajectories `first .. first + count - 1`, each from its
        actor g mod N: one list per seed."""
        return [
            [self._take(actors[g % len(actors)]) for g in range(first, first + count)]
            for actors in self._actors
        ]

    def _take(self, actor: Actor) -> Rollout:
        stage = lambda: f"learner waiting for a trajectory from {actor.name}; {actor.stage()}"
        return self._supervisor.get(actor.queue, stage)

    def update(
        self, state: TrainState, rollouts: Sequence[Sequence[Rollout]], stop: bool = False
    ) -> tuple[TrainState, list[dict[str, float]], float, bool]:
        """One update of every seed (`rollouts`: each seed's, as `collect` gives them) with
        this process's stop vote; returns the new state, each seed's metrics (host
        floats), its seconds and whether any process voted to stop."""
        start = time.perf_counter()
        trajectories = tuple(
            tuple(to_global(r.trajectory, self.mesh) for r in seed) for seed in rollouts
        )
        if self._replay is None and self.agent.replay is not None:
            self._replay = self._init_replay(trajectories[0][0])
        state, metrics, stopped, self._replay = self._update(
            state,
            trajectories[0] if self.num_seeds == 1 else trajectories,
            self._votes[bool(stop)],
            self._replay,
        )
        metrics, stopped = jax.device_get((metrics, stopped))
        per_seed = [
            {k: float(np.reshape(v, -1)[m]) for k, v in metrics.items()}
            for m in range(self.num_seeds)
        ]
        return state, per_seed, time.perf_counter() - start, bool(stopped)

    def _init_replay(self, trajectory: Any) -> Any:
        """Empty buffers, one per learner device (and seed), for sequences shaped like
        `trajectory`'s."""
        shapes = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), trajectory)
        seeds = self.num_seeds

        def init():
            replays = init_local_replays(self.agent, shapes, self.mesh.size)
            if seeds == 1:
                return replays
            return jax.tree.map(lambda x: jnp.repeat(x[:, None], seeds, axis=1), replays)

        return jax.jit(init, out_shardings=NamedSharding(self.mesh, P(AXIS)))()


def init_state(agent: Agent, key: jax.Array, mesh: Mesh) -> TrainState:
    """A fresh train state, computed directly into its replicated sharding over `mesh`
    (every process computes the same values; nothing is copied between hosts). `key`
    `[S, 2]`: one state per seed, on a leading member axis."""
    init = lambda k: init_train_state(agent, k)  # noqa: E731
    if key.ndim == 2:
        init = jax.vmap(init)
    return jax.jit(init, out_shardings=replicated(mesh))(key)


def seed_keys(seed: int, num_seeds: int) -> jax.Array:
    """The run's key, or one per seed `[S, 2]`: seed k's is seed+k's own."""
    if num_seeds == 1:
        return jax.random.PRNGKey(seed)
    return jnp.stack([jax.random.PRNGKey(seed + k) for k in range(num_seeds)])
