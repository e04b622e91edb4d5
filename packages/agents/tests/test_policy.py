"""Categorical policy helpers against numpy, and epsilon-greedy frequencies."""

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.policy import categorical_entropy
from podracer.agents.policy import epsilon_greedy
from podracer.agents.policy import log_prob
from podracer.agents.policy import sample_categorical
from podracer.agents.policy import select


def test_log_prob_and_entropy_match_numpy():
    logits = jnp.array([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, -1.0]])
    p = np.exp([1.0, 2.0, 3.0, -1.0]) / np.exp([1.0, 2.0, 3.0, -1.0]).sum()
    np.testing.assert_allclose(
        log_prob(logits, jnp.array([3, 2])), [np.log(0.25), np.log(p[2])], rtol=1e-6
    )
    np.testing.assert_allclose(
        categorical_entropy(logits), [np.log(4), -np.sum(p * np.log(p))], rtol=1e-6
    )


def test_samples_follow_the_logits():
    logits = jnp.log(jnp.array([0.1, 0.6, 0.3]))
    actions = jax.jit(lambda k: sample_categorical(k, jnp.broadcast_to(logits, (4000, 3))))(
        jax.random.key(0)
    )
    assert actions.dtype == jnp.int32
    np.testing.assert_allclose(
        np.bincount(np.asarray(actions), minlength=3) / 4000, [0.1, 0.6, 0.3], atol=0.03
    )


def test_epsilon_greedy_frequencies():
    q = jnp.broadcast_to(jnp.array([0.0, 5.0, 1.0]), (4000, 3))
    sample = jax.jit(epsilon_greedy)
    np.testing.assert_array_equal(sample(jax.random.key(0), q, 0.0), 1)
    for eps in (0.3, 1.0):
        actions = np.asarray(sample(jax.random.key(1), q, eps))
        expected = np.full(3, eps / 3) + np.array([0.0, 1.0 - eps, 0.0])
        np.testing.assert_allclose(np.bincount(actions, minlength=3) / 4000, expected, atol=0.03)


def test_select_picks_the_action_and_routes_its_gradient():
    values = jnp.arange(24.0).reshape(2, 3, 4)
    action = jnp.array([[0, 3, 1], [2, 2, 0]])
    np.testing.assert_array_equal(
        select(values, action),
        np.take_along_axis(np.asarray(values), np.asarray(action)[..., None], -1)[..., 0],
    )
    grad = jax.grad(lambda v: jnp.sum(select(v, action) * 2.0))(values)
    np.testing.assert_array_equal(grad, 2.0 * jax.nn.one_hot(action, 4))
