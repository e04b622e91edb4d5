"""Running statistics as agent state: observation normalisation and value scaling.

The statistics live in the agent's params (`params["obs_norm"]`, `params["value_norm"]`),
so actors read the same ones the learner trains with, and checkpoints, restores and warm
starts carry them like any weight. The optimizer leaves them alone (`frozen_statistics`).

* Observations: the learner merges each rollout's observations at the end of the update
  that trained on it, so a loss always sees the statistics its behaviour policy acted
  with (PPO's first ratio is exactly 1).
* Values (PPO's `normalize_values`): the critic's head predicts normalised values, the
  agent reads mu + sigma * head; the value targets of a rollout are merged *before* the
  update trains on them, and the value loss is taken in normalised units, so its scale
  (and the value clip) does not depend on the task's reward scale. The statistics are
  not output-preserving (PopArt's correction is not applied): they move slowly.

Merging a batch into the running moments is Chan et al.'s parallel algorithm (the one
gym's `RunningMeanStd` uses). With several devices the batch moments are averaged with
the update's `reduce` first, so every device holds the same statistics; `count` then
counts one device's share (devices hold equal shares, so the weights are the same).
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents.types import ReduceFn

Stats = dict[str, chex.Array]  # {"mean": [*shape], "var": [*shape], "count": []} float32
STATS_KEY = "obs_norm"  # where an agent's params hold its observation statistics
VALUE_KEY = "value_norm"  # ... and its value statistics
_EPSILON = 1e-8


def init_stats(shape: tuple[int, ...]) -> Stats:
    """Mean 0, variance 1 and a tiny count (1e-4, as gym's): the first batch replaces them."""
    return {
        "mean": jnp.zeros(shape, jnp.float32),
        "var": jnp.ones(shape, jnp.float32),
        "count": jnp.full((), 1e-4, jnp.float32),
    }


def update_stats(
    stats: Stats, x: chex.Array, reduce: ReduceFn = lambda t: t, mask: chex.Array | None = None
) -> Stats:
    """`stats` merged with the samples `x` `[..., *shape]` (leading dims are samples; only
    where `mask` `[...]` is true, when given), the batch moments averaged with `reduce`.

    mean' = mean + delta n_b / n', var' = (var n + var_b n_b + delta^2 n n_b / n') / n',
    n' = n + n_b, where delta = mean_b - mean (Chan, Golub & LeVeque, 1979).
    """
    event_ndim = stats["mean"].ndim
    x = jax.lax.stop_gradient(x.astype(jnp.float32))
    axes = tuple(range(x.ndim - event_ndim))
    lead = x.shape[: len(axes)]
    w = jnp.ones(lead, jnp.float32) if mask is None else mask.astype(jnp.float32)
    w = w.reshape(lead + (1,) * event_ndim)
    batch_count, weighted_sum = reduce((jnp.sum(w), jnp.sum(w * x, axis=axes)))
    batch_mean = weighted_sum / jnp.maximum(batch_count, 1e-6)
    centred = x - batch_mean.reshape((1,) * len(axes) + batch_mean.shape)
    batch_var = reduce(jnp.sum(w * jnp.square(centred), axis=axes)) / jnp.maximum(batch_count, 1e-6)
    count = stats["count"] + batch_count
    delta = batch_mean - stats["mean"]
    mean = stats["mean"] + delta * (batch_count / count)
    m2 = stats["var"] * stats["count"] + batch_var * batch_count
    var = (m2 + jnp.square(delta) * stats["count"] * batch_count / count) / count
    return {"mean": mean, "var": var, "count": count}


def normalize(stats: Stats, x: chex.Array, clip: float | None = None) -> chex.Array:
    """(x - mean) / sqrt(var + 1e-8) `[..., *shape]`, clipped to [-clip, clip] when given;
    no gradient flows into the statistics."""
    stats = jax.lax.stop_gradient(stats)
    lead = (1,) * (x.ndim - stats["mean"].ndim)  # explicit ranks: rank promotion raises
    mean, var = (stats[k].reshape(lead + stats[k].shape) for k in ("mean", "var"))
    y = (x.astype(jnp.float32) - mean) / jnp.sqrt(var + _EPSILON)
    return y if clip is None else jnp.clip(y, -clip, clip)


def denormalize(stats: Stats, y: chex.Array) -> chex.Array:
    """mean + sqrt(var + 1e-8) y: the inverse of `normalize` (without clipping)."""
    stats = jax.lax.stop_gradient(stats)
    lead = (1,) * (y.ndim - stats["mean"].ndim)
    mean, var = (stats[k].reshape(lead + stats[k].shape) for k in ("mean", "var"))
    return mean + jnp.sqrt(var + _EPSILON) * y


def frozen_statistics(
    optimizer: optax.GradientTransformation, keys: tuple[str, ...] = (STATS_KEY, VALUE_KEY)
) -> optax.GradientTransformation:
    """`optimizer` on every top-level entry of a params dict but `keys`, whose updates are
    zero: running statistics are data the learner sets, not weights to descend on."""

    def labels(params: dict[str, Any]) -> dict[str, Any]:
        return {k: jax.tree.map(lambda _, k=k: "frozen" if k in keys else "trained", v)
                for k, v in params.items()}  # fmt: skip

    return optax.multi_transform({"trained": optimizer, "frozen": optax.set_to_zero()}, labels)


def normalized_network(
    net: Any, spec: Any, observations: bool, values: bool = False, clip: float | None = None
):
    """`(init, apply)` of the actor-critic module `net` for `spec`'s observations.

    `init(key) -> params`: the module's variables (`{"params": ...}`) plus the statistics
    asked for (`STATS_KEY` with `observations`, `VALUE_KEY` with `values`).
    `apply(params, observation, *args, method=None)` normalises the observation (clipped
    to `clip`) before the module sees it and returns its values denormalised (`__call__`'s
    `(dist, value)`, `value`'s `value` or `unroll`'s `((dist, value), cores)`); with
    neither, both are the module's own and params keep the module's layout.
    """

    def init(key: chex.PRNGKey) -> dict[str, Any]:
        dummy = jnp.zeros((1, *spec.observation_shape), spec.observation_dtype)
        variables = dict(net.init(key, dummy))
        if observations:
            variables[STATS_KEY] = init_stats(tuple(spec.observation_shape))
        if values:
            variables[VALUE_KEY] = init_stats(())
        return variables

    def apply(params: dict[str, Any], observation: chex.Array, *args, method: str | None = None):
        if observations:
            observation = normalize(params[STATS_KEY], observation, clip)
        variables = {k: v for k, v in params.items() if k not in (STATS_KEY, VALUE_KEY)}
        out = net.apply(variables, observation, *args, method=method)
        if not values:
            return out
        if method == "value":
            return denormalize(params[VALUE_KEY], out)
        (dist, value), cores = out if method == "unroll" else (out, None)
        value = denormalize(params[VALUE_KEY], value)
        return ((dist, value), cores) if method == "unroll" else (dist, value)

    return init, apply


def merge_observations(
    params: dict[str, Any], trajectory: Any, reduce: ReduceFn = lambda t: t
) -> dict[str, Any]:
    """`params` with the trajectory's observations `[T, B, ...]` merged into its
    observation statistics (all rows but the last, which the next rollout starts from)."""
    observations = trajectory.timestep.observation[:-1]
    return {**params, STATS_KEY: update_stats(params[STATS_KEY], observations, reduce)}


def updating_statistics(update, enabled: bool):
    """`update(params, opt_state, trajectory, key, reduce_grads)` followed, when `enabled`,
    by `merge_observations` of the trajectory into the statistics the update started from
    (averaged over devices)."""
    if not enabled:
        return update

    def update_then_observe(params, opt_state, trajectory, key, reduce_grads=lambda x: x):
        new_params, opt_state, metrics = update(params, opt_state, trajectory, key, reduce_grads)
        stats = merge_observations(params, trajectory, reduce_grads)[STATS_KEY]
        return {**new_params, STATS_KEY: stats}, opt_state, metrics

    return update_then_observe
