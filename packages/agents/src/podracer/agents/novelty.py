"""Random network distillation (Burda et al., 2019): a novelty bonus for exploration.

A fixed, randomly initialised network f and a predictor g trained to match it on the
observations the learner sees. The squared error |g(o) - f(o)|^2 (averaged over the
embedding) stays large where the predictor has seen few observations like `o`, so an
agent rewarded with it seeks states it has rarely visited: on tasks whose reward is -1 on
every step until a goal (Acrobot, MountainCar) random play gives the value nothing to
learn from, and the bonus is what sets states apart until the goal is found.

As in the paper, observations are whitened by running statistics and clipped to [-5, 5]
before both networks, and the bonus is the error divided by the running standard
deviation of the errors seen so far (not centred): it starts on a unit scale whatever the
observations, and shrinks as the predictor catches up. With a `window`, that standard
deviation weighs about the last `window` errors only (its count is capped there, so each
new batch weighs batch / (window + batch) and older ones fade geometrically): where the
predictor catches up within a few updates (MountainCar's two-dimensional observations)
the all-time scale, set by the first large errors, leaves almost no bonus, and a window
keeps it on the scale of the errors of now.

The networks and statistics are entries of the agent's params (`init_novelty`), next to
the agent's own variables: actors and learner read the same ones, checkpoints carry them,
and the optimizer trains the predictor only (`FROZEN_KEYS` for `frozen_statistics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp

from podracer.agents.hyper import is_zero
from podracer.agents.networks import MLP
from podracer.agents.networks import preprocess
from podracer.agents.normalization import init_stats
from podracer.agents.normalization import normalize
from podracer.agents.normalization import update_stats
from podracer.agents.types import ReduceFn
from podracer.agents.types import masked_mean

TARGET_KEY, PREDICTOR_KEY = "rnd_target", "rnd_predictor"
OBS_KEY, ERROR_KEY = "rnd_obs", "rnd_error"
# {"count": []}: how many batches `observe` has seen, a schedule's clock (a dict: flax
# takes every top-level entry of the params for a collection of variables)
UPDATES_KEY = "rnd_updates"
# What the optimizer leaves alone: the fixed network, the statistics and the count.
FROZEN_KEYS = (TARGET_KEY, OBS_KEY, ERROR_KEY, UPDATES_KEY)
OBS_CLIP = 5.0


class NoveltyNet(nn.Module):
    """The target's and the predictor's shape: a ReLU MLP on the flattened observation,
    then a linear embedding `[..., embedding_size]`."""

    hidden_sizes: Sequence[int] = (64, 64)
    embedding_size: int = 32

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        return nn.Dense(self.embedding_size)(MLP(self.hidden_sizes, "relu")(x))


def _flat(observation: chex.Array, observation_ndim: int) -> chex.Array:
    x = preprocess(observation)
    return x.reshape(x.shape[: x.ndim - observation_ndim] + (-1,))


_NET = NoveltyNet()


def enabled(weight: Any) -> bool:
    """Whether a config's `novelty_weight` asks for the bonus: anything but the Python
    number 0 (a swept weight is an array: the bonus's networks are built for every member)."""
    return not is_zero(weight)


def init_novelty(key: chex.PRNGKey, observation_shape: tuple[int, ...]) -> dict[str, Any]:
    """The params entries of the bonus: both networks (independent random draws) and the
    observation and error statistics."""
    target_key, predictor_key = jax.random.split(key)
    dummy = jnp.zeros((1, *observation_shape), jnp.float32).reshape(1, -1)
    return {
        TARGET_KEY: _NET.init(target_key, dummy),
        PREDICTOR_KEY: _NET.init(predictor_key, dummy),
        OBS_KEY: init_stats((dummy.shape[-1],)),
        ERROR_KEY: init_stats(()),
        UPDATES_KEY: {"count": jnp.zeros((), jnp.float32)},
    }


def prediction_errors(
    params: dict[str, Any],
    observation: chex.Array,
    observation_ndim: int,
) -> chex.Array:
    """The predictor's mean squared error against the fixed network `[...]` on whitened
    `observation` `[..., *obs_shape]`; the gradient reaches the predictor only."""
    x = normalize(params[OBS_KEY], _flat(observation, observation_ndim), OBS_CLIP)
    target = jax.lax.stop_gradient(_NET.apply(params[TARGET_KEY], x))
    return jnp.mean(jnp.square(_NET.apply(params[PREDICTOR_KEY], x) - target), axis=-1)


def novelty_bonus(params: dict[str, Any], errors: chex.Array) -> chex.Array:
    """Errors `[...]` over the running standard deviation of the errors: the bonus, no
    gradient."""
    scale = jnp.sqrt(params[ERROR_KEY]["var"] + 1e-8)
    return jax.lax.stop_gradient(errors / scale)


def observe(
    params: dict[str, Any],
    observation: chex.Array,
    observation_ndim: int,
    mask: chex.Array | None = None,
    reduce: ReduceFn = lambda t: t,
    window: int = 0,
) -> dict[str, Any]:
    """`params` with `observation` `[..., *obs_shape]` (where `mask` `[...]`) merged into
    the observation statistics, then the predictor's errors on them, under the merged
    statistics, into the error statistics (batch moments averaged with `reduce`; their
    count first capped at `window` where it is > 0), and the batch counted."""
    flat = _flat(observation, observation_ndim)
    params = {**params, OBS_KEY: update_stats(params[OBS_KEY], flat, reduce, mask)}
    errors = prediction_errors(params, observation, observation_ndim)
    stats = params[ERROR_KEY]
    count = stats["count"] if window <= 0 else jnp.minimum(stats["count"], float(window))
    return {
        **params,
        ERROR_KEY: update_stats({**stats, "count": count}, errors, reduce, mask),
        UPDATES_KEY: {"count": params[UPDATES_KEY]["count"] + 1.0},
    }


def faded_weight(
    params: dict[str, Any], weight: Any, fade: Any, total_updates: int | None
) -> chex.Array:
    """`weight` falling linearly to 0 over the first `fade` (a fraction) of the run's
    `total_updates`, by the batches counted so far; constant where `fade` is 0 or the
    run's length is not known. Written out rather than `optax.linear_schedule`: a sweep
    traces `fade`, so the horizon is traced, and optax branches on its `transition_steps`."""
    if total_updates is None:
        return jnp.asarray(weight, jnp.float32)
    horizon = jnp.maximum(jnp.asarray(fade, jnp.float32) * total_updates, 1.0)
    left = jnp.clip(1.0 - params[UPDATES_KEY]["count"] / horizon, 0.0, 1.0)
    return weight * jnp.where(jnp.asarray(fade) > 0, left, 1.0)


def reached_observations(timestep: Any) -> chex.Array:
    """The observation each step's transition led to `[T+1, B, ...]`: the episode's last
    where the env reset within the step, else the step's own (envpool resets on the next
    step and gives no `final_observation`)."""
    if timestep.final_observation is None:
        return timestep.observation
    return timestep.final_observation


def with_bonus(
    params: dict[str, Any], trajectory: Any, weight: Any, observation_ndim: int
) -> tuple[Any, chex.Array]:
    """`trajectory` `[T+1, B]` with `weight` times the bonus of the observation each
    transition led to added to its reward, and the predictor's errors `[T+1, B]`."""
    ts = trajectory.timestep
    errors = prediction_errors(params, reached_observations(ts), observation_ndim)
    reward = ts.reward + weight * novelty_bonus(params, errors)
    return trajectory._replace(timestep=ts._replace(reward=reward)), errors


def predictor_loss(
    trajectory: Any, augmented: Any, errors: chex.Array
) -> tuple[chex.Array, dict[str, chex.Array]]:
    """What an agent adds to its loss for the bonus (`with_bonus`'s `augmented`
    trajectory and `errors`): the predictor's mean error over the transitions, and the
    metrics `losses/novelty` and `agent/novelty_bonus` (the mean bonus a reward got)."""
    mask = trajectory.timestep.transition_mask[1:]
    loss = masked_mean(errors[1:], mask)
    bonus = augmented.timestep.reward[1:] - trajectory.timestep.reward[1:]
    return loss, {"losses/novelty": loss, "agent/novelty_bonus": masked_mean(bonus, mask)}


def observing(update, observation_ndim: int, window: int = 0):
    """`update(params, opt_state, trajectory, key, reduce_grads)` after `observe` of the
    trajectory's reached observations (its learnable transitions; the error scale over
    `window`): the bonus the update trains with is on the scale of what it has seen, this
    batch included."""

    def observe_then_update(params, opt_state, trajectory, key, reduce_grads=lambda x: x):
        ts = trajectory.timestep
        reached = reached_observations(ts)[1:]
        mask = ts.transition_mask[1:]
        params = observe(params, reached, observation_ndim, mask, reduce_grads, window)
        return update(params, opt_state, trajectory, key, reduce_grads)

    return observe_then_update
