"""Whole episodes on device (JaxEnvs) and on the host (HostEnvs), greedy or sampled."""

import jax
import numpy as np
import pytest

from podracer.agents import env_keys
from podracer.agents import host_episodes
from podracer.agents import jax_episodes
from podracer.agents import jax_observations
from podracer.agents import make_agent
from podracer.envs import as_host_env
from podracer.envs import make

CATCH = make("catch")  # every episode lasts 9 steps and returns +1 or -1


@pytest.fixture(scope="module")
def agent_and_params():
    agent = make_agent("impala", CATCH.spec)
    return agent, agent.init(jax.random.PRNGKey(0))


@pytest.mark.parametrize("greedy", [True, False])
def test_one_episode_per_env_on_device(agent_and_params, greedy):
    agent, params = agent_and_params
    play = jax.jit(jax_episodes(agent, CATCH, max_steps=100, greedy=greedy))
    returns, lengths = jax.device_get(play(params, env_keys(jax.random.PRNGKey(1), 16)))
    assert lengths.tolist() == [9] * 16
    assert set(returns.tolist()) <= {-1.0, 1.0}


def test_episodes_do_not_depend_on_how_the_envs_are_split(agent_and_params):
    agent, params = agent_and_params
    play = jax.jit(jax_episodes(agent, CATCH, max_steps=100, greedy=False))
    key = jax.random.PRNGKey(2)
    whole = jax.device_get(play(params, env_keys(key, 8)))
    halves = [jax.device_get(play(params, env_keys(key, 4, offset))) for offset in (0, 4)]
    np.testing.assert_array_equal(whole[0], np.concatenate([h[0] for h in halves]))


def test_an_episode_cut_by_max_steps_counts_with_its_running_return(agent_and_params):
    agent, params = agent_and_params
    play = jax.jit(jax_episodes(agent, CATCH, max_steps=3))
    returns, lengths = jax.device_get(play(params, env_keys(jax.random.PRNGKey(1), 4)))
    assert lengths.tolist() == [3] * 4 and returns.tolist() == [0.0] * 4  # Catch pays at the end


def test_recorded_observations_are_the_same_episodes(agent_and_params):
    agent, params = agent_and_params
    keys = env_keys(jax.random.PRNGKey(3), 4)
    observations, done = jax.device_get(jax.jit(jax_observations(agent, CATCH, 12))(params, keys))
    assert observations.shape == (13, 4, 10, 5) and done.shape == (13, 4)
    assert done[9].all() and done.sum() == 4  # the first episode of each ends at step 9
    # The last observation shown is the finished episode's: the ball in the bottom row.
    assert (observations[9, :, 9].sum(axis=-1) >= 1).all()
    assert observations[0, :, 0].sum() == 4  # each reset shows its ball in the top row


def test_host_episodes_match_the_device_ones_in_shape_and_rules(agent_and_params):
    agent, params = agent_and_params
    env = as_host_env(CATCH, num_envs=6, seed=0)
    played = host_episodes(agent, env, params, max_steps=100, record=2)
    assert played.lengths.tolist() == [9] * 6 and set(played.returns.tolist()) <= {-1.0, 1.0}
    assert played.observations.shape == (10, 2, 10, 5) and played.done[9].all()
    # As on device: the last observation shown is the finished episode's (the ball at the
    # bottom, none in the top row), not the next one's first, which the env's same-step
    # reset returns (its ball in the top row).
    assert played.observations[9, :, 0].sum() == 0 and played.observations[0, :, 0].sum() == 2
