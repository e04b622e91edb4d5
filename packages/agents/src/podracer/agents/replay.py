"""A device-resident replay of fixed-length sequences, uniform or prioritised, in pure JAX.

Flashbax (the maintained pure-JAX buffer library) was the first choice. Version 0.1.3
installs beside jax 0.10.2 and runs, but its prioritised `add` relies on implicit rank
promotion (`(11,) + (4, 1)` in `_calculate_new_item_indices`), which this project's
strict `JAX_NUMPY_RANK_PROMOTION=raise` rejects, and its sum-tree state keeps per-buffer
scalars (`max_recorded_priority`) that Anakin's per-device buffers would have to shard
anyway. So this is a small buffer of our own, with its prioritised semantics:

* the buffer is a ring of `capacity` rows; a row is one whole sequence (a pytree whose
  leaves have a leading row axis), written in insertion order, oldest overwritten first;
* sampling draws `batch_size` rows with replacement, row i with probability
  P(i) = p_i^alpha / sum_j p_j^alpha over the filled rows (Schaul et al., 2016); alpha = 0
  is uniform sampling over the filled rows;
* new rows get the largest priority in the buffer (1 when empty), so every sequence is
  likely to be seen at least once before its learned priority is known;
* importance weights w_i = (N P(i))^-beta / max_batch w correct the sampling bias.

All functions are pure and jittable; `init`/`add`/`sample`/`update_priorities` are
closures over the static sizes, in the style of optax's `init`/`update`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.agents.config import check_range
from podracer.agents.config import fail
from podracer.agents.train_state import TrainState

_MIN_PRIORITY = 1e-6  # keeps every filled row sampleable under any alpha


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Sequence replay for an agent's learner; sizes are global (split over devices).

    `capacity=0` turns replay off: the learner uses each actor trajectory once, as it
    arrives. With replay, each actor rollout of `[T+1, num_envs]` is added as `num_envs`
    sequences and the learner makes `updates_per_rollout` updates, each on
    `sequences_per_update` sequences sampled from the buffer, so the learner batch and the
    reuse of each sample (replay ratio) are independent of the actor batch.
    """

    capacity: int = 0  # sequences held (all devices together); 0: no replay
    sequences_per_update: int = 32  # learner batch, in sequences of length T+1
    updates_per_rollout: int = 1  # learner updates per actor rollout
    priority_exponent: float = 0.0  # alpha: 0 uniform, 1 proportional to priority
    importance_exponent: float = 0.0  # beta: 0 no correction, 1 full correction

    def __post_init__(self) -> None:
        for name in ("capacity", "sequences_per_update", "updates_per_rollout"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                fail(self, name, "an int >= 0")
        for name in ("sequences_per_update", "updates_per_rollout"):
            if getattr(self, name) < 1:
                fail(self, name, "an int >= 1")
        check_range(self, "priority_exponent", 0.0, float("inf"))
        check_range(self, "importance_exponent", 0.0, 1.0)

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    @property
    def prioritised(self) -> bool:
        return self.priority_exponent > 0


class ReplayState(NamedTuple):
    """The buffer's contents; rows [0, size) are filled."""

    items: Any  # pytree, leaves [C, ...]: one stored sequence per row
    priorities: chex.Array  # [C] float32, 0 for empty rows
    insert_index: chex.Array  # [] int32, the row the next add writes first
    size: chex.Array  # [] int32, filled rows (saturates at C)


class ReplaySample(NamedTuple):
    items: Any  # pytree, leaves [S, ...]
    indices: chex.Array  # [S] int32, rows sampled (for update_priorities)
    probabilities: chex.Array  # [S] float32, P(row) under which each was drawn
    weights: chex.Array  # [S] float32, importance weights, max 1


class Replay(NamedTuple):
    init: Callable[[Any], ReplayState]  # init(one item, no row axis) -> empty state
    add: Callable[[ReplayState, Any], ReplayState]  # add(state, items [B, ...])
    sample: Callable[[ReplayState, chex.PRNGKey], ReplaySample]
    update_priorities: Callable[[ReplayState, chex.Array, chex.Array], ReplayState]


def make_replay(
    capacity: int,
    batch_size: int,
    priority_exponent: float = 0.0,
    importance_exponent: float = 0.0,
) -> Replay:
    """A buffer of `capacity` rows sampling `batch_size` rows at a time (per device)."""
    if capacity < 1 or batch_size < 1:
        raise ValueError(
            f"make_replay needs capacity >= 1 and batch_size >= 1, got {capacity}, {batch_size}"
        )
    alpha, beta = float(priority_exponent), float(importance_exponent)

    def init(item) -> ReplayState:
        items = jax.tree.map(
            lambda x: jnp.zeros((capacity, *jnp.shape(x)), jnp.asarray(x).dtype), item
        )
        return ReplayState(items, jnp.zeros(capacity, jnp.float32), jnp.int32(0), jnp.int32(0))

    def add(state: ReplayState, items) -> ReplayState:
        num = jax.tree.leaves(items)[0].shape[0]
        if num > capacity:
            raise ValueError(f"cannot add {num} rows to a replay of capacity {capacity}")
        rows = (state.insert_index + jnp.arange(num)) % capacity
        stored = jax.tree.map(lambda buf, x: buf.at[rows].set(x), state.items, items)
        new_priority = jnp.where(state.size > 0, jnp.max(state.priorities), 1.0)
        return ReplayState(
            stored,
            state.priorities.at[rows].set(new_priority),
            (state.insert_index + num) % capacity,
            jnp.minimum(state.size + num, capacity),
        )

    def sample(state: ReplayState, key: chex.PRNGKey) -> ReplaySample:
        filled = jnp.arange(capacity) < state.size
        # alpha = 0: every filled row weighs p^0 = 1, i.e. uniform sampling.
        logits = alpha * jnp.log(jnp.maximum(state.priorities, _MIN_PRIORITY))
        logits = jnp.where(filled, logits, -jnp.inf)
        log_probs = jax.nn.log_softmax(logits)
        indices = jax.random.categorical(key, logits, shape=(batch_size,)).astype(jnp.int32)
        probabilities = jnp.exp(log_probs[indices])
        weights = (state.size * probabilities) ** (-beta)
        weights = weights / jnp.max(weights)
        items = jax.tree.map(lambda buf: buf[indices], state.items)
        return ReplaySample(items, indices, probabilities, weights)

    def update_priorities(
        state: ReplayState, indices: chex.Array, priorities: chex.Array
    ) -> ReplayState:
        chex.assert_equal_shape([indices, priorities])
        # A row drawn twice gets one of its new priorities (both are errors of one row).
        new = state.priorities.at[indices].set(jnp.maximum(priorities, _MIN_PRIORITY))
        return state._replace(priorities=new)

    return Replay(init, add, sample, update_priorities)


def batch_major(tree: Any) -> Any:
    """`[T+1, B, ...]` <-> `[B, T+1, ...]`: one replay row per environment's sequence."""
    return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), tree)


def local_replay(config: ReplayConfig, num_devices: int) -> Replay:
    """One device's buffer: the config's global sizes split evenly over the devices."""
    return make_replay(
        config.capacity // num_devices,
        config.sequences_per_update // num_devices,
        config.priority_exponent,
        config.importance_exponent,
    )


def init_local_replays(agent, trajectory_shapes: Any, num_devices: int) -> ReplayState | None:
    """Empty buffers for `num_devices` devices (every leaf `[D, ...]`, to be sharded along
    D), sized for sequences shaped like one column of `trajectory_shapes` `[T+1, B, ...]`;
    None when `agent` learns without replay."""
    if agent.replay is None:
        return None
    item = jax.tree.map(lambda x: jnp.zeros(x.shape[:1] + x.shape[2:], x.dtype), trajectory_shapes)
    one = local_replay(agent.replay, num_devices).init(item)
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (num_devices, *x.shape)), one)


def make_learn(agent, num_devices: int, axis_name: str, reduce_grads: Callable[[Any], Any]):
    """The learner's step on one device's share of a rollout, shared by both runtimes:

        learn(train, trajectory [T+1, B], replay_block) -> (train, losses, replay_block)

    Runs inside `shard_map` over `axis_name`. Without replay (`agent.replay` None) it is
    one `agent.update` on the trajectory. With replay, this device adds the trajectory's
    B sequences to its own buffer (`replay_block`: the `[1, ...]` block of the sharded
    buffers), then makes `updates_per_rollout` updates, each on sequences sampled from it
    with this device's key (importance weights in `extras["replay_weight"]`, priorities
    refreshed from the updated params when prioritised). Gradients are averaged over
    devices either way.
    """

    def learn_on_trajectory(train, trajectory, replay_block):
        key, update_key = jax.random.split(train.key)
        params, opt_state, losses = agent.update(
            train.params, train.opt_state, trajectory, update_key, reduce_grads=reduce_grads
        )
        return TrainState(params, opt_state, key, train.update_step + 1), losses, replay_block

    if agent.replay is None:
        return learn_on_trajectory
    config: ReplayConfig = agent.replay
    replay = local_replay(config, num_devices)

    def learn_from_replay(train, trajectory, replay_block):
        local = jax.tree.map(lambda x: x[0], replay_block)  # this device's buffer
        local = replay.add(local, batch_major(trajectory))
        key, replay_key = jax.random.split(train.key)
        # Devices sample their own buffers with their own keys.
        replay_key = jax.random.fold_in(replay_key, jax.lax.axis_index(axis_name))

        def one(carry, step_key):
            params, opt_state, local = carry
            sample_key, update_key = jax.random.split(step_key)
            sample = replay.sample(local, sample_key)
            batch = batch_major(sample.items)  # back to time-major [T+1, S]
            weights = jnp.broadcast_to(sample.weights, batch.action.shape)
            batch = batch._replace(extras={**batch.extras, "replay_weight": weights})
            params, opt_state, losses = agent.update(
                params, opt_state, batch, update_key, reduce_grads=reduce_grads
            )
            if config.prioritised:
                priorities = jax.lax.stop_gradient(agent.priority(params, batch))
                local = replay.update_priorities(local, sample.indices, priorities)
            return (params, opt_state, local), losses

        # A Python loop, not lax.scan: XLA:CPU runs convolution gradients ~15x slower
        # inside a while loop's body (measured: Nature CNN, 336 frames, 18 s against 1.2 s),
        # and the count is small and static.
        carry, losses = (train.params, train.opt_state, local), []
        for step_key in jax.random.split(replay_key, config.updates_per_rollout):
            carry, step_losses = one(carry, step_key)
            losses.append(step_losses)
        params, opt_state, local = carry
        losses = jax.tree.map(lambda *xs: jnp.mean(jnp.stack(xs), axis=0), *losses)
        train = TrainState(params, opt_state, key, train.update_step + config.updates_per_rollout)
        return train, losses, jax.tree.map(lambda x: x[None], local)

    return learn_from_replay
