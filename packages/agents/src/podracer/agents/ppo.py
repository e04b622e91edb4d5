"""PPO with the clipped surrogate objective (Schulman et al., 2017) and GAE.

The defaults are PureJaxRL's CartPole settings. Minibatches split the time axis with a
key shared by every device, and advantage statistics are averaged over devices, so a
run is the same on 1 or N devices for the same global batch.
"""

from __future__ import annotations

from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents import returns
from podracer.agents.configs import PPOConfig
from podracer.agents.networks import ActorCritic
from podracer.agents.networks import resolve_torso
from podracer.agents.policy import categorical_entropy
from podracer.agents.policy import log_prob
from podracer.agents.policy import sample_categorical
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec


class _Batch(NamedTuple):
    """A rollout flattened to PPO's per-transition inputs."""

    observation: chex.Array  # [T, B, *obs]
    action: chex.Array  # [T, B]
    behaviour_log_prob: chex.Array  # [T, B]
    behaviour_value: chex.Array  # [T, B]
    advantage: chex.Array  # [T, B]
    value_target: chex.Array  # [T, B]
    mask: chex.Array  # [T, B] bool


def make_ppo(
    spec: EnvSpec, config: PPOConfig = PPOConfig(), total_updates: int | None = None
) -> Agent:
    net = ActorCritic(
        spec.num_actions,
        resolve_torso(config.torso, spec, "PPOConfig"),
        len(spec.observation_shape),
        config.hidden_sizes,
        config.activation,
        config.separate_critic,
    )
    steps_per_update = config.num_epochs * config.num_minibatches
    learning_rate: float | optax.Schedule = config.learning_rate
    if config.anneal_lr and total_updates:

        def learning_rate(count):  # PureJaxRL's schedule: constant within an update
            frac = 1.0 - (count // steps_per_update) / total_updates
            return config.learning_rate * jnp.maximum(frac, 0.0)

    chain = [optax.clip_by_global_norm(config.max_grad_norm)] if config.max_grad_norm else []
    optimizer = optax.chain(*chain, optax.adam(learning_rate, eps=1e-5))

    def init(key):
        return net.init(key, jnp.zeros((1, *spec.observation_shape), spec.observation_dtype))

    def act(params, key, observation):
        logits, value = net.apply(params, observation)
        action = sample_categorical(key, logits)
        return action, {"log_prob": log_prob(logits, action), "value": value}

    def greedy_act(params, observation):
        logits, _ = net.apply(params, observation)
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def make_batch(params, trajectory: Trajectory) -> _Batch:
        ts = trajectory.timestep
        bounds = returns.boundaries(ts, config.gamma)
        values = trajectory.extras["value"]  # behaviour values [T+1, B]
        final_v = None
        if spec.can_truncate and ts.final_observation is not None:
            final_v = net.apply(params, ts.final_observation[1:], method=ActorCritic.value)
        v_t = jax.lax.stop_gradient(returns.bootstrap_values(values, final_v, ts))
        advantage = returns.lambda_advantages(values[:-1], v_t, bounds, config.gae_lambda)
        return _Batch(
            ts.observation[:-1],
            trajectory.action[:-1],
            trajectory.extras["log_prob"][:-1],
            values[:-1],
            advantage,
            advantage + values[:-1],
            bounds.mask,
        )

    def batch_loss(params, batch: _Batch, reduce=lambda x: x):
        logits, value = net.apply(params, batch.observation)
        adv = batch.advantage
        if config.normalize_advantages:
            mean = reduce(masked_mean(adv, batch.mask))
            var = reduce(masked_mean(jnp.square(adv - mean), batch.mask))
            adv = (adv - mean) / (jnp.sqrt(var) + 1e-8)
        logp = log_prob(logits, batch.action)
        ratio = jnp.exp(logp - batch.behaviour_log_prob)
        clipped_ratio = jnp.clip(ratio, 1.0 - config.clip_eps, 1.0 + config.clip_eps)
        pg_loss = masked_mean(-jnp.minimum(ratio * adv, clipped_ratio * adv), batch.mask)
        value_error = jnp.square(value - batch.value_target)
        if config.clip_value_loss:
            clipped = batch.behaviour_value + jnp.clip(
                value - batch.behaviour_value, -config.clip_eps, config.clip_eps
            )
            value_error = jnp.maximum(value_error, jnp.square(clipped - batch.value_target))
        value_loss = 0.5 * masked_mean(value_error, batch.mask)
        entropy = masked_mean(categorical_entropy(logits), batch.mask)
        total = pg_loss + config.value_cost * value_loss - config.entropy_cost * entropy
        metrics = {
            "losses/total": total,
            "losses/policy": pg_loss,
            "losses/value": value_loss,
            "losses/entropy": entropy,
            "agent/approx_kl": masked_mean((ratio - 1.0) - jnp.log(ratio), batch.mask),
            "agent/clip_fraction": masked_mean(
                (jnp.abs(ratio - 1.0) > config.clip_eps).astype(jnp.float32), batch.mask
            ),
        }
        return total, metrics

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        return batch_loss(params, make_batch(params, trajectory))

    def update(params, opt_state, trajectory: Trajectory, key, reduce_grads=lambda x: x):
        batch = make_batch(params, trajectory)
        num_steps = batch.action.shape[0]
        if num_steps % config.num_minibatches:
            raise ValueError(
                f"PPOConfig.num_minibatches ({config.num_minibatches}) must divide the rollout "
                f"length ({num_steps})"
            )

        def minibatch_step(carry, minibatch):
            params, opt_state = carry
            grad_fn = jax.grad(lambda p: batch_loss(p, minibatch, reduce_grads), has_aux=True)
            grads, metrics = grad_fn(params)
            grads, metrics = reduce_grads((grads, metrics))
            updates, opt_state = optimizer.update(grads, opt_state, params)
            metrics["losses/grad_norm"] = optax.tree.norm(grads)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, epoch_key):
            order = jax.random.permutation(epoch_key, num_steps)
            split = lambda x: x[order].reshape((config.num_minibatches, -1) + x.shape[1:])
            return jax.lax.scan(minibatch_step, carry, jax.tree.map(split, batch))

        keys = jax.random.split(key, config.num_epochs)
        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), keys)
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    return Agent(
        name="ppo",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        update=update,
    )
