"""PPO with the clipped surrogate objective (Schulman et al., 2017) and GAE.

The defaults are PureJaxRL's CartPole settings. Minibatches split the time axis with a
key shared by every device (the envs, for a recurrent core: whole sequences unrolled
from their start states, `podracer.agents.recurrent`), and advantage statistics are
averaged over devices, so a run is the same on 1 or N devices for the same global batch.

Discrete actions use a categorical policy; a continuous box a diagonal Gaussian
(`podracer.agents.policy`), whose behaviour log-probability is that of the sample the
env received (clipped by the env, or tanh-squashed with its Jacobian), so the ratio's
two terms score the same action. With `normalize_observations` the running statistics
are part of the params (`podracer.agents.normalization`).
"""

from __future__ import annotations

import functools
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.agents import returns
from podracer.agents.actor_critic import ActorCriticParts
from podracer.agents.actor_critic import actor_critic_parts
from podracer.agents.configs import PPOConfig
from podracer.agents.hyper import Hyper
from podracer.agents.hyper import Hyperparams
from podracer.agents.learn import minibatch_update
from podracer.agents.normalization import VALUE_KEY
from podracer.agents.normalization import normalize
from podracer.agents.normalization import update_stats
from podracer.agents.normalization import updating_statistics
from podracer.agents.surrogate import clipped_surrogate
from podracer.agents.surrogate import ratio_metrics
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec

_ACTION_EXTRAS = ("raw_action",)  # extras of `act` that log-probabilities read


class _Batch(NamedTuple):
    """A rollout flattened to PPO's per-transition inputs."""

    observation: chex.Array  # [T, B, *obs]
    first: chex.Array  # [T, B] bool, where a recurrent core resets
    core: Any  # [1, B, ...] the core state of row 0 (() feed-forward)
    action: chex.Array  # [T, B] int32, or [T, B, *action_shape] float32
    action_extras: dict  # [T, B, ...]: what log_prob needs besides the action (raw samples)
    behaviour_log_prob: chex.Array  # [T, B]
    behaviour_value: chex.Array  # [T, B]
    advantage: chex.Array  # [T, B]
    value_target: chex.Array  # [T, B]
    mask: chex.Array  # [T, B] bool


def standardized(x: chex.Array, mask: chex.Array, reduce=lambda x: x) -> chex.Array:
    """`x` less its masked mean over `mask`, over its masked std; `reduce` averages the
    moments over devices (a run the same on 1 or N devices)."""
    mean = reduce(masked_mean(x, mask))
    var = reduce(masked_mean(jnp.square(x - mean), mask))
    return (x - mean) / (jnp.sqrt(var) + 1e-8)


def value_error(
    value: chex.Array, behaviour_value: chex.Array, target: chex.Array, clip: float | None
) -> chex.Array:
    """The squared value error; with `clip`, the larger of it and that of the value kept
    within `clip` of the behaviour value (PPO's value clipping)."""
    error = jnp.square(value - target)
    if clip is None:
        return error
    clipped = behaviour_value + jnp.clip(value - behaviour_value, -clip, clip)
    return jnp.maximum(error, jnp.square(clipped - target))


def ppo_batch(
    ac: ActorCriticParts, hp: Hyperparams, can_truncate: bool, params, trajectory: Trajectory
) -> _Batch:
    """A rollout's transitions with their GAE advantages and value targets, from the
    values acting computed (a recurrent core is unrolled only for the final observations'
    values, which XLA drops when the env never truncates); `hp`: the (member's) discount
    and lambda."""
    ts = trajectory.timestep
    bounds = returns.boundaries(ts, hp.gamma)
    values = trajectory.extras["value"]  # behaviour values [T+1, B]
    cores = ()
    if ac.recurrent:
        _, cores = ac.forward_all(params, ts.observation, ts.first, trajectory.core)
    final_v = returns.final_values(
        lambda o, c: ac.apply(params, o, c, method="value"), ts, can_truncate, cores
    )
    v_t = jax.lax.stop_gradient(returns.bootstrap_values(values, final_v, ts))
    advantage = returns.lambda_advantages(values[:-1], v_t, bounds, hp.lambda_)
    return _Batch(
        ts.observation[:-1],
        ts.first[:-1],
        trajectory.core,
        trajectory.action[:-1],
        {k: trajectory.extras[k][:-1] for k in _ACTION_EXTRAS if k in trajectory.extras},
        trajectory.extras["log_prob"][:-1],
        values[:-1],
        advantage,
        advantage + values[:-1],
        bounds.mask,
    )


def ppo_loss(
    ac: ActorCriticParts,
    config: PPOConfig,
    hp: Hyperparams,
    params,
    batch: _Batch,
    reduce=lambda x: x,
) -> tuple[chex.Array, dict[str, chex.Array]]:
    """PPO's loss on a (mini)batch: the clipped surrogate, the (clipped) value error and
    the entropy bonus (`hp`: the member's clip and weights); `reduce` averages the
    advantage statistics over devices."""
    (dist, value), _ = ac.forward_all(params, batch.observation, batch.first, batch.core)
    adv = batch.advantage
    if config.normalize_advantages:
        adv = standardized(adv, batch.mask, reduce)
    logp = ac.policy.log_prob(dist, batch.action, batch.action_extras)
    ratio = jnp.exp(logp - batch.behaviour_log_prob)
    pg_loss = masked_mean(clipped_surrogate(ratio, adv, hp.clip_eps), batch.mask)
    target, behaviour_value = batch.value_target, batch.behaviour_value
    if config.normalize_values:  # the loss in normalised units
        value, target, behaviour_value = (
            normalize(params[VALUE_KEY], v) for v in (value, target, behaviour_value)
        )
    clip = hp.clip_eps if config.clip_value_loss else None
    value_loss = 0.5 * masked_mean(value_error(value, behaviour_value, target, clip), batch.mask)
    entropy = masked_mean(ac.policy.entropy(dist), batch.mask)
    total = pg_loss + hp.value_cost * value_loss - hp.entropy_cost * entropy
    metrics = {
        "losses/total": total,
        "losses/policy": pg_loss,
        "losses/value": value_loss,
        "losses/entropy": entropy,
        **ratio_metrics(ratio, batch.mask, hp.clip_eps),
    }
    return total, metrics


def make_ppo(
    spec: EnvSpec,
    config: PPOConfig = PPOConfig(),
    total_updates: int | None = None,
    hyper: Hyper | None = None,
) -> Agent:
    hp = Hyperparams(config, hyper)
    ac = actor_critic_parts(spec, config, "PPOConfig", total_updates, 1e-5, hp)
    make_batch = functools.partial(ppo_batch, ac, hp, spec.can_truncate)
    batch_loss = functools.partial(ppo_loss, ac, config, hp)

    def act(params, key, observation, step=0, core=None, first=None):
        del step  # no schedule in acting
        (dist, value), core = ac.forward(params, observation, core, first)
        action, extras = ac.policy.sample(key, dist)
        logp = ac.policy.log_prob(dist, action, extras)
        return action, {**extras, "log_prob": logp, "value": value}, core

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        return batch_loss(params, make_batch(params, trajectory))

    minibatches = minibatch_update(
        batch_loss, ac.optimizer, config.num_epochs, config.num_minibatches,
        split=config.minibatch_split,
    )  # fmt: skip

    def update(params, opt_state, trajectory: Trajectory, key, reduce_grads=lambda x: x):
        batch = make_batch(params, trajectory)
        if config.normalize_values:  # before the update: its loss scales these targets
            stats = update_stats(params[VALUE_KEY], batch.value_target, reduce_grads, batch.mask)
            params = {**params, VALUE_KEY: stats}
        return minibatches(params, opt_state, batch, key, reduce_grads)

    return Agent(
        name="ppo",
        spec=spec,
        config=config,
        init=ac.init,
        act=act,
        greedy_act=ac.greedy_act,
        loss=loss,
        optimizer=ac.optimizer,
        learning_rate=ac.learning_rate,
        # Observation statistics merge after the update: its loss saw what the actors saw.
        update=updating_statistics(update, config.normalize_observations),
        initial_core=ac.initial_core,
    )
