"""IMPALA: V-trace actor-critic (Espeholt et al., 2018).

Off-policy correct for Sebulba's policy lag: the behaviour policy's logits travel in the
trajectory's extras, and importance ratios pi/mu correct both the value targets (v_s)
and the policy-gradient advantages.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from podracer.agents import returns
from podracer.agents.configs import ImpalaConfig
from podracer.agents.learn import make_optimizer
from podracer.agents.learn import sgd_update
from podracer.agents.networks import ActorCritic
from podracer.agents.networks import resolve_torso
from podracer.agents.policy import categorical_entropy
from podracer.agents.policy import log_prob
from podracer.agents.policy import sample_categorical
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec


def make_impala(
    spec: EnvSpec, config: ImpalaConfig = ImpalaConfig(), total_updates: int | None = None
) -> Agent:
    del total_updates  # constant learning rate
    net = ActorCritic(
        spec.num_actions,
        resolve_torso(config.torso, spec, "ImpalaConfig"),
        len(spec.observation_shape),
        config.hidden_sizes,
        config.activation,
        config.separate_critic,
    )
    optimizer = make_optimizer(config.learning_rate, config.max_grad_norm)

    def init(key):
        return net.init(key, jnp.zeros((1, *spec.observation_shape), spec.observation_dtype))

    def act(params, key, observation):
        logits, _ = net.apply(params, observation)
        return sample_categorical(key, logits), {"logits": logits}

    def greedy_act(params, observation):
        logits, _ = net.apply(params, observation)
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        ts = trajectory.timestep
        logits, values = net.apply(params, ts.observation)  # [T+1, B, A], [T+1, B]
        bounds = returns.boundaries(ts, config.gamma)
        final_v = None
        if spec.can_truncate and ts.final_observation is not None:
            final_v = net.apply(params, ts.final_observation[1:], method=ActorCritic.value)
        v_t = jax.lax.stop_gradient(returns.bootstrap_values(values, final_v, ts))
        a_tm1 = trajectory.action[:-1]
        logp_tm1 = log_prob(logits[:-1], a_tm1)
        behaviour_logp_tm1 = log_prob(trajectory.extras["logits"][:-1], a_tm1)
        rho_tm1 = jnp.exp(jax.lax.stop_gradient(logp_tm1) - behaviour_logp_tm1)
        vt = returns.vtrace(
            jax.lax.stop_gradient(values[:-1]),
            v_t,
            bounds,
            rho_tm1,
            config.lambda_,
            config.clip_rho_threshold,
            config.clip_pg_rho_threshold,
        )
        pg_loss = -masked_mean(logp_tm1 * vt.pg_advantage, bounds.mask)
        baseline_loss = 0.5 * masked_mean(jnp.square(vt.value_target - values[:-1]), bounds.mask)
        entropy = masked_mean(categorical_entropy(logits[:-1]), bounds.mask)
        total = pg_loss + config.baseline_cost * baseline_loss - config.entropy_cost * entropy
        metrics = {
            "losses/policy": pg_loss,
            "losses/value": baseline_loss,
            "losses/entropy": entropy,
            "agent/rho_mean": masked_mean(rho_tm1, bounds.mask),
            "agent/value_mean": masked_mean(values[:-1], bounds.mask),
        }
        return total, metrics

    return Agent(
        name="impala",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        update=sgd_update(loss, optimizer),
    )
