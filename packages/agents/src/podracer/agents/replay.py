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

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.agents.configs import ReplayConfig

_MIN_PRIORITY = 1e-6  # keeps every filled row sampleable under any alpha


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
