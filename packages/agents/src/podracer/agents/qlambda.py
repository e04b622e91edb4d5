"""Q(lambda): the Podracer paper's Anakin demo agent.

A Q-network trained towards Peng's Q(lambda) returns (rlax.lambda_returns on
max_a Q(s_{t+1}, a)), acting epsilon-greedily; epsilon 0 is the demo's greedy acting.
Unlike the demo, which takes one backward pass per environment (vmap of grad), the loss
is the mean over the whole device batch: one backward pass per update.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import rlax

from podracer.agents import returns
from podracer.agents.configs import QLambdaConfig
from podracer.agents.learn import make_optimizer
from podracer.agents.learn import sgd_update
from podracer.agents.networks import QNetwork
from podracer.agents.networks import resolve_torso
from podracer.agents.policy import epsilon_greedy
from podracer.agents.policy import select
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec


def make_qlambda(
    spec: EnvSpec, config: QLambdaConfig = QLambdaConfig(), total_updates: int | None = None
) -> Agent:
    del total_updates  # constant learning rate
    net = QNetwork(
        spec.num_actions,
        resolve_torso(config.torso, spec, "QLambdaConfig"),
        len(spec.observation_shape),
        config.hidden_sizes,
        config.activation,
    )
    optimizer = make_optimizer(config.learning_rate, config.max_grad_norm)

    def init(key):
        dummy = jnp.zeros((1, *spec.observation_shape), spec.observation_dtype)
        return net.init(key, dummy)

    def act(params, key, observation):
        return epsilon_greedy(key, net.apply(params, observation), config.epsilon), {}

    def greedy_act(params, observation):
        return jnp.argmax(net.apply(params, observation), axis=-1).astype(jnp.int32)

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        ts = trajectory.timestep
        q = net.apply(params, ts.observation)  # [T+1, B, A]
        bounds = returns.boundaries(ts, config.gamma)
        final_v = None
        if spec.can_truncate and ts.final_observation is not None:
            final_v = jnp.max(net.apply(params, ts.final_observation[1:]), axis=-1)
        v_t = returns.bootstrap_values(jnp.max(q, axis=-1), final_v, ts)
        lambda_t = config.lambda_ * (1.0 - bounds.cut.astype(jnp.float32))
        targets = jax.vmap(rlax.lambda_returns, in_axes=1, out_axes=1)(
            bounds.reward, bounds.discount, v_t, lambda_t
        )
        targets = jax.lax.stop_gradient(targets)
        a_tm1 = trajectory.action[:-1]
        q_tm1 = select(q[:-1], a_tm1)
        td = targets - q_tm1
        value_loss = 0.5 * masked_mean(jnp.square(td), bounds.mask)
        metrics = {
            "losses/value": value_loss,
            "agent/q_mean": masked_mean(q_tm1, bounds.mask),
        }
        return value_loss, metrics

    return Agent(
        name="qlambda",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        update=sgd_update(loss, optimizer),
    )
