"""The learner's state: the unit both runtimes update, replicate and checkpoint."""

from __future__ import annotations

from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents.types import Agent


class TrainState(NamedTuple):
    """Params, optimizer state, RNG key and the update counter.

    The environment-step count is not an array here: it passes 2**31 within minutes at
    Podracer's speeds, and int64 needs JAX's x64 mode. Runtimes count env steps on the
    host as exact Python ints and store them in the checkpoint's JSON metadata.
    """

    params: Any
    opt_state: optax.OptState
    key: chex.PRNGKey  # [2] uint32 raw key: saves and restores as a plain array
    update_step: chex.Array  # [] int32


def init_train_state(agent: Agent, key: chex.PRNGKey) -> TrainState:
    """Fresh params and optimizer state from `key` (a raw uint32 key)."""
    init_key, key = jax.random.split(key)
    params = agent.init(init_key)
    return TrainState(params, agent.optimizer.init(params), key, jnp.zeros((), jnp.int32))
