"""Q(lambda), the Podracer paper's Anakin demo agent, and PQN as its options.

A Q-network trained towards Peng's Q(lambda) returns (rlax.lambda_returns on
max_a Q(s_{t+1}, a)), acting epsilon-greedily; epsilon 0 is the demo's greedy acting.
Unlike the demo, which takes one backward pass per environment (vmap of grad), the loss
is the mean over the whole device batch: one backward pass per update.

PQN (Gallici et al., 2025, "Simplifying Deep Temporal Difference Learning") is this
agent with LayerNorm in the network (its stabiliser: no target network, no replay),
`num_epochs` passes of `num_minibatches` minibatches over each rollout towards targets
computed once from the Q-values of the params that acted, an epsilon falling linearly
from `epsilon_start` over the first `epsilon_decay` of the updates, RAdam and an
annealed learning rate. Minibatches split the time axis, as PPO's do, so a run is the
same on any number of devices (PQN shuffles all transitions of a device instead).
"""

from __future__ import annotations

import functools
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
import rlax

from podracer.agents import returns
from podracer.agents.configs import PQNConfig
from podracer.agents.configs import QLambdaConfig
from podracer.agents.hyper import Hyper
from podracer.agents.hyper import Hyperparams
from podracer.agents.learn import config_learning_rate
from podracer.agents.learn import make_optimizer
from podracer.agents.learn import minibatch_update
from podracer.agents.networks import QNetwork
from podracer.agents.networks import core_initializer
from podracer.agents.networks import resolve_torso
from podracer.agents.policy import epsilon_greedy
from podracer.agents.policy import select
from podracer.agents.recurrent import act_step
from podracer.agents.recurrent import unroll
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec


class _Batch(NamedTuple):
    """A rollout's transitions and their fixed targets."""

    observation: chex.Array  # [T, B, *obs]
    first: chex.Array  # [T, B] bool, where a recurrent core resets
    core: Any  # [1, B, ...] the core state of row 0 (() feed-forward)
    action: chex.Array  # [T, B]
    target: chex.Array  # [T, B] Q(lambda) returns, from the params that acted
    mask: chex.Array  # [T, B] bool


def epsilon_schedule(config: QLambdaConfig, epsilon: Any, total_updates: int | None):
    """`epsilon(update_step)`: the final `epsilon` (the config's, or a member's swept one)
    constant, or linear to it from `epsilon_start` over the first `epsilon_decay` of the
    run's updates (then constant)."""
    if config.epsilon_start is None or not total_updates:
        return lambda step: jnp.float32(epsilon)
    # `span` a Python float, as optax needs (`epsilon` may be a traced value); exactly
    # `epsilon` from its end on, where the linear part alone can miss it by a rounding.
    span = max(1.0, config.epsilon_decay * total_updates)
    falling = optax.join_schedules(
        [optax.linear_schedule(config.epsilon_start, epsilon, span),
         optax.constant_schedule(epsilon)],
        [span],
    )  # fmt: skip
    return lambda step: falling(jnp.asarray(step, jnp.float32))


def q_network(spec: EnvSpec, config: QLambdaConfig) -> QNetwork:
    """The Q-network `config` asks for on `spec` (its torso resolved for the observations)."""
    return QNetwork(
        spec.num_actions,
        resolve_torso(config.torso, spec, "QLambdaConfig"),
        len(spec.observation_shape),
        config.hidden_sizes,
        config.activation,
        config.layer_norm,
        config.core,
        config.core_size,
    )


def qlambda_batch(
    net: QNetwork,
    config: QLambdaConfig,
    hp: Hyperparams,
    can_truncate: bool,
    params,
    trajectory: Trajectory,
) -> _Batch:
    """A rollout's transitions and their Peng's Q(lambda) targets from `params`' Q-values
    (the network unrolled from the trajectory's start state for a recurrent core); `hp`:
    the (member's) discount, lambda and reward scale."""
    forward_all = unroll(net.apply, config.core != "none")
    ts = trajectory.timestep
    q, cores = forward_all(params, ts.observation, ts.first, trajectory.core)  # [T+1, B, A]
    bounds = returns.boundaries(ts, hp.gamma)
    bounds = bounds._replace(reward=bounds.reward * hp.reward_scale)
    final_v = returns.final_values(
        lambda o, c: jnp.max(net.apply(params, o, c), axis=-1), ts, can_truncate, cores
    )
    v_t = returns.bootstrap_values(jnp.max(q, axis=-1), final_v, ts)
    lambda_t = hp.lambda_ * (1.0 - bounds.cut.astype(jnp.float32))
    targets = jax.vmap(rlax.lambda_returns, in_axes=1, out_axes=1)(
        bounds.reward, bounds.discount, v_t, lambda_t
    )
    return _Batch(ts.observation[:-1], ts.first[:-1], trajectory.core, trajectory.action[:-1],
                  jax.lax.stop_gradient(targets), bounds.mask)  # fmt: skip


def make_qlambda(
    spec: EnvSpec,
    config: QLambdaConfig = QLambdaConfig(),
    total_updates: int | None = None,
    hyper: Hyper | None = None,
) -> Agent:
    hp = Hyperparams(config, hyper)
    net = q_network(spec, config)
    learning_rate = config_learning_rate(config, hp.learning_rate, total_updates)
    optimizer = make_optimizer(learning_rate, config.max_grad_norm, name=config.optimizer)
    epsilon = epsilon_schedule(config, hp.epsilon, total_updates)
    recurrent = config.core != "none"
    forward, forward_all = act_step(net.apply, recurrent), unroll(net.apply, recurrent)
    make_batch = functools.partial(qlambda_batch, net, config, hp, spec.can_truncate)

    def init(key):
        dummy = jnp.zeros((1, *spec.observation_shape), spec.observation_dtype)
        return net.init(key, dummy)

    def act(params, key, observation, step=0, core=None, first=None):
        q, core = forward(params, observation, core, first)
        return epsilon_greedy(key, q, epsilon(step)), {}, core

    def greedy_act(params, observation, core=None, first=None):
        q, core = forward(params, observation, core, first)
        return jnp.argmax(q, axis=-1).astype(jnp.int32), core

    def batch_loss(params, batch: _Batch, reduce=lambda x: x):
        del reduce
        q, _ = forward_all(params, batch.observation, batch.first, batch.core)
        q_tm1 = select(q, batch.action)
        value_loss = 0.5 * masked_mean(jnp.square(batch.target - q_tm1), batch.mask)
        metrics = {"losses/value": value_loss, "agent/q_mean": masked_mean(q_tm1, batch.mask)}
        return value_loss, metrics

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        return batch_loss(params, make_batch(params, trajectory))

    minibatches = minibatch_update(
        batch_loss, optimizer, config.num_epochs, config.num_minibatches,
        split=config.minibatch_split, num_microbatches=config.num_microbatches,
    )  # fmt: skip

    def update(params, opt_state, trajectory: Trajectory, key, reduce_grads=lambda x: x):
        batch = jax.lax.stop_gradient(make_batch(params, trajectory))
        params, opt_state, metrics = minibatches(params, opt_state, batch, key, reduce_grads)
        return params, opt_state, {**metrics, "losses/total": metrics["losses/value"]}

    return Agent(
        name="pqn" if isinstance(config, PQNConfig) else "qlambda",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        learning_rate=learning_rate,
        update=update,
        initial_core=core_initializer(net),
    )
