"""Tests for `sampled_search` (Sampled MuZero): a small tree worked out by hand, the
root's samples and the chosen action, and a Gaussian prior searched for its best action."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.search import SampledMuZeroModel
from podracer.search import SearchConfig
from podracer.search import sampled_search

CANDIDATES = np.array([-1.0, -0.5, 0.2, 0.8], np.float32)  # the hand tree's root samples
TARGETS = np.array([0.7, 0.3], np.float32)  # [B]: reward -(a - target)^2, then terminal


def _bandit_model(sample) -> SampledMuZeroModel:
    """One-step bandits: the latent is the target, an action pays -(a - target)^2 and ends
    the episode (discount 0); value 0 everywhere, so only the search ranks the samples."""

    def dynamics(params, target, action):  # action [B, 1]
        reward = -jnp.square(action[:, 0] - target)
        return reward, jnp.zeros_like(reward), target

    def prediction(params, target):
        return {"mean": jnp.zeros_like(target)}, jnp.zeros_like(target)

    return SampledMuZeroModel(lambda params, obs: obs, dynamics, prediction, sample)


def _fixed_samples(key, prior, num_samples):
    """The same candidates at every node, whatever the key."""
    batch = prior["mean"].shape[0]
    return jnp.broadcast_to(jnp.asarray(CANDIDATES)[:num_samples, None], (batch, num_samples, 1))


def _gaussian_samples(key, prior, num_samples):
    """N(mean, 1) draws, `[B, K, 1]`."""
    noise = jax.random.normal(key, (prior["mean"].shape[0], num_samples, 1))
    return prior["mean"][:, None, None] + noise


@functools.partial(jax.jit, static_argnames=("model", "config", "num_samples"))
def _search(key, observation, model, config, num_samples):
    return sampled_search(None, key, model, observation, config, num_samples)


@pytest.mark.parametrize("floor", [None, 10.0])
def test_hand_computed_tree(floor):
    """Gumbel, no noise, 4 simulations over 4 samples: Sequential Halving's first phase
    visits each sample once. Q = reward; the policy target is softmax of the completed,
    min-max rescaled Q-values times (maxvisit_init + max visits) * value_scale; the
    rescaling divides by the spread of Q, or by `rescale_floor` where that is larger."""
    config = SearchConfig(num_simulations=4, gumbel_scale=0.0)  # value_scale 0.1, init 50
    if floor is not None:
        config = dataclasses.replace(config, rescale_floor=floor)
    out = _search(jax.random.key(0), TARGETS, _bandit_model(_fixed_samples), config, 4)
    rewards = -np.square(CANDIDATES[None, :] - TARGETS[:, None])  # [B, K]
    np.testing.assert_array_equal(out.search.visit_counts, np.ones((2, 4)))
    np.testing.assert_allclose(out.search.q_values, rewards, rtol=1e-6)
    low, high = rewards.min(-1, keepdims=True), rewards.max(-1, keepdims=True)
    logits = (50.0 + 1.0) * 0.1 * (rewards - low) / np.maximum(high - low, floor or 0.0)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(out.search.action_weights, expected, rtol=1e-5)
    # The best sample: 0.8 for target 0.7, 0.2 for target 0.3.
    np.testing.assert_array_equal(out.search.action, [3, 2])
    np.testing.assert_array_equal(out.action[:, 0], CANDIDATES[[3, 2]])
    np.testing.assert_array_equal(out.samples[:, :, 0], np.broadcast_to(CANDIDATES, (2, 4)))
    # The root value averages the prior value 0 with the visited Q-values.
    np.testing.assert_allclose(out.search.root_value, rewards.sum(-1) / 5.0, rtol=1e-5)


def test_puct_target_is_visits_and_action_most_visited():
    """PUCT over a uniform prior on the samples: the policy target is the root's visit
    distribution, and (temperature 0) the action is the most visited sample."""
    config = SearchConfig(policy="muzero", num_simulations=12, dirichlet_fraction=0.0,
                          temperature=0.0)  # fmt: skip
    out = _search(jax.random.key(0), TARGETS, _bandit_model(_fixed_samples), config, 4)
    visits = np.asarray(out.search.visit_counts)
    np.testing.assert_array_equal(visits.sum(-1), [12, 12])
    np.testing.assert_allclose(out.search.action_weights, visits / 12.0, rtol=1e-6)
    np.testing.assert_array_equal(out.search.action, visits.argmax(-1))
    np.testing.assert_array_equal(out.action[:, 0], CANDIDATES[visits.argmax(-1)])


def test_gaussian_prior_root_samples_and_best_action():
    """Root samples are the sampler's draws with the first half of the key; the chosen
    action is the best of them (noise-free Gumbel, every sample visited)."""
    config = SearchConfig(num_simulations=32, gumbel_scale=0.0)
    key = jax.random.key(3)
    out = _search(key, TARGETS, _bandit_model(_gaussian_samples), config, 8)
    root_key, _ = jax.random.split(key)
    expected = _gaussian_samples(root_key, {"mean": jnp.zeros(2)}, 8)
    np.testing.assert_allclose(out.samples, expected, rtol=1e-6)
    best = np.abs(np.asarray(out.samples)[..., 0] - TARGETS[:, None]).argmin(-1)
    np.testing.assert_array_equal(out.search.action, best)
    np.testing.assert_allclose(out.action, np.asarray(out.samples)[np.arange(2), best])
    np.testing.assert_allclose(out.search.action_weights.sum(-1), 1.0, rtol=1e-6)
