"""Categorical policy helpers over logits `[..., A]`."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def sample_categorical(key: chex.PRNGKey, logits: chex.Array) -> chex.Array:
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def log_prob(logits: chex.Array, action: chex.Array) -> chex.Array:
    """log pi(action) `[...]` for logits `[..., A]` and integer actions `[...]`."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: chex.Array) -> chex.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)
