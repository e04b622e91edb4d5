"""MuZero's acting (`podracer.agents.muzero_acting`): the search's action and policy on
every observation, the exploration schedule, and acting past the fade as the greedy
search."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import Hyperparams
from podracer.agents import make_muzero
from podracer.agents.muzero_acting import exploration_left
from podracer.search import SearchConfig

A = 2  # vector_spec's actions


@pytest.fixture(scope="module")
def params(vector_spec, muzero_small):
    return make_muzero(vector_spec, muzero_small).init(jax.random.key(1))


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_act_returns_valid_actions_and_a_search_policy(muzero_small, vector_spec, params, policy):
    config = dataclasses.replace(
        muzero_small, search=SearchConfig(policy=policy, num_simulations=4)
    )
    agent = make_muzero(vector_spec, config)
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(16, 3)), jnp.float32)
    action, extras, _ = jax.jit(agent.act)(params, jax.random.key(2), obs)
    assert action.shape == (16,) and action.dtype == jnp.int32
    assert np.all((action >= 0) & (action < A))
    assert set(extras) == {"policy", "root_value"}
    chex.assert_shape([extras["policy"], extras["root_value"]], [(16, A), (16,)])
    np.testing.assert_allclose(np.sum(extras["policy"], -1), 1.0, rtol=1e-5)
    greedy = agent.greedy_act(params, obs)[0]
    np.testing.assert_array_equal(greedy, agent.greedy_act(params, obs)[0])
    assert greedy.shape == (16,) and np.all((greedy >= 0) & (greedy < A))


def test_exploration_fades_linearly_to_its_final_share(muzero_small):
    config = dataclasses.replace(muzero_small, exploration_fade=0.5, exploration_final=0.2)
    hp = Hyperparams(config)
    # 10 updates: the fade spans the first 5, from 1 to 0.2, then stays there
    for step, want in [(0, 1.0), (2.5, 0.6), (5, 0.2), (9, 0.2), (2**30, 0.2)]:
        np.testing.assert_allclose(exploration_left(hp, step, 10), want, rtol=1e-6)
    assert exploration_left(Hyperparams(muzero_small), 3, 10) is None  # no fade: left out
    assert exploration_left(hp, 3, None) is None  # the run's length unknown


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
def test_faded_acting_is_the_greedy_search_past_the_fade(muzero_small, vector_spec, params, policy):
    # Fading to nothing over the first half: from update 5 of 10 on, acting takes no
    # random action and the search adds no noise whatever the key (Gumbel: the greedy
    # search's action; PUCT: a most visited action, ties broken by the key), where at
    # update 0 it still explores (epsilon 0.5: some of 64 actions are not those).
    search = SearchConfig(policy=policy, num_simulations=4, dirichlet_fraction=0.5)
    config = dataclasses.replace(
        muzero_small, search=search, exploration_epsilon=0.5, exploration_fade=0.5
    )
    agent = make_muzero(vector_spec, config, total_updates=10)
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(64, 3)), jnp.float32)
    greedy = agent.greedy_act(params, obs)[0]
    act = jax.jit(lambda key, step: agent.act(params, key, obs, step)[:2])

    def is_greedy(action, extras):
        if policy == "gumbel":
            return np.all(action == greedy)
        visits = extras["policy"]
        chosen = np.take_along_axis(visits, action[:, None], axis=1)[:, 0]
        return np.all(chosen == visits.max(axis=1))

    for seed in range(3):
        for step in (5, 7):
            assert is_greedy(*act(jax.random.key(seed), step)), (seed, step)
    assert not is_greedy(*act(jax.random.key(0), 0))
