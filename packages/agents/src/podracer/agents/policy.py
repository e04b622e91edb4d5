"""Categorical policy helpers over logits `[..., A]`."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def sample_categorical(key: chex.PRNGKey, logits: chex.Array) -> chex.Array:
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def select(values: chex.Array, action: chex.Array) -> chex.Array:
    """`values[..., action]` `[...]` for `[..., A]` values and integer actions `[...]`.

    A one-hot select rather than `take_along_axis`: its gradient is elementwise, where a
    gather's is a scatter-add, which on CPU made the whole backward pass ~2x slower.
    """
    chosen = jax.nn.one_hot(action, values.shape[-1], dtype=jnp.bool_)
    return jnp.sum(jnp.where(chosen, values, 0), axis=-1)


def log_prob(logits: chex.Array, action: chex.Array) -> chex.Array:
    """log pi(action) `[...]` for logits `[..., A]` and integer actions `[...]`."""
    return select(jax.nn.log_softmax(logits, axis=-1), action)


def categorical_entropy(logits: chex.Array) -> chex.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def epsilon_greedy(key: chex.PRNGKey, q: chex.Array, epsilon: float) -> chex.Array:
    """argmax_a q `[...]` with probability 1 - epsilon, else a uniform action (int32).

    Written out because `rlax.epsilon_greedy` is pending deprecation (it warns on use).
    """
    explore_key, action_key = jax.random.split(key)
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    uniform = jax.random.randint(action_key, greedy.shape, 0, q.shape[-1], jnp.int32)
    explore = jax.random.uniform(explore_key, greedy.shape) < epsilon
    return jnp.where(explore, uniform, greedy)
