"""An agent of your own: advantage actor-critic (A2C), written against the `Agent` contract.

An `Agent` is a bundle of pure functions that both runtimes compile as they are:
`init`, `act` (sampling, with extras the loss reads back), `greedy_act` (evaluation),
`loss` and `update` on a time-major `[T+1, B]` trajectory, and the optimizer. Episode
bookkeeping (terminations, truncations and their bootstrap values) comes from
`podracer.agents.returns`, the same code the built-in agents use.

`podracer_examples.config.A2C` names this factory and its config class for the entry
point (`--agent a2c`, flags `--a2c.*`); `--agent podracer_examples.agents:make_a2c`
names the factory itself, whose `config` annotation gives the config class. The
numbers its config declares `SWEEPABLE` come through `hyper`, so `anakin --sweep
a2c.learning_rate=...` and PBT train it as they train the built-in agents.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from podracer.agents import Agent
from podracer.agents import Hyper
from podracer.agents import Hyperparams
from podracer.agents import returns
from podracer.agents.learn import sgd_update
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec
from podracer_examples.config import A2CConfig


class _ActorCritic(nn.Module):
    num_actions: int
    hidden: int
    obs_ndim: int  # trailing observation dims, flattened; leading dims are batch dims

    @nn.compact
    def __call__(self, observation):
        x = observation.reshape(observation.shape[: observation.ndim - self.obs_ndim] + (-1,))
        x = nn.tanh(nn.Dense(self.hidden)(x.astype(jnp.float32)))
        x = nn.tanh(nn.Dense(self.hidden)(x))
        return nn.Dense(self.num_actions)(x), nn.Dense(1)(x)[..., 0]


def make_a2c(
    spec: EnvSpec,
    config: A2CConfig,
    total_updates: int | None = None,
    hyper: Hyper | None = None,
) -> Agent:
    """A2C: one actor-critic gradient step per rollout, GAE advantages (an example agent)."""
    del total_updates  # a constant learning rate
    if not spec.is_discrete:
        raise ConfigError(f"a2c acts in discrete action spaces; {spec.name} has continuous ones")
    # A sweep's or a population's member gets its own numbers (arrays inside the program);
    # the config's everywhere else. Structure (`hidden`) comes from the config alone.
    hp = Hyperparams(config, hyper)
    net = _ActorCritic(spec.num_actions, config.hidden, len(spec.observation_shape))
    optimizer = optax.chain(
        optax.clip_by_global_norm(hp.max_grad_norm), optax.adam(hp.learning_rate)
    )

    def init(key):
        return net.init(key, jnp.zeros((1, *spec.observation_shape), jnp.float32))

    def act(params, key, observation, step=0, core=None, first=None):
        logits, value = net.apply(params, observation)
        action = jax.random.categorical(key, logits)
        return action, {"value": value}, ()

    def greedy_act(params, observation, core=None, first=None):
        logits, _ = net.apply(params, observation)
        return jnp.argmax(logits, axis=-1), ()

    def loss(params, trajectory, key):
        del key
        ts = trajectory.timestep
        logits, values = net.apply(params, ts.observation)  # [T+1, B, A], [T+1, B]
        bounds = returns.boundaries(ts, hp.gamma)
        final = returns.final_values(lambda o, c: net.apply(params, o)[1], ts, spec.can_truncate)
        v_t = jax.lax.stop_gradient(returns.bootstrap_values(values, final, ts))
        advantage = returns.lambda_advantages(
            jax.lax.stop_gradient(values[:-1]), v_t, bounds, hp.lambda_
        )
        log_probs = jax.nn.log_softmax(logits[:-1])
        taken = jnp.take_along_axis(log_probs, trajectory.action[:-1, ..., None], -1)[..., 0]
        mask = bounds.mask
        mean = lambda x: jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)  # noqa: E731
        policy = -mean(taken * advantage)
        value = 0.5 * mean(jnp.square(advantage + jax.lax.stop_gradient(values[:-1]) - values[:-1]))
        entropy = mean(-jnp.sum(jnp.exp(log_probs) * log_probs, -1))
        total = policy + hp.value_cost * value - hp.entropy_cost * entropy
        return total, {"losses/policy": policy, "losses/value": value, "losses/entropy": entropy}

    return Agent(
        name="a2c",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        learning_rate=hp.learning_rate,
        update=sgd_update(loss, optimizer),
    )
