"""Sampled MuZero on bounded boxes: the policy loss by hand, the action squash, acting,
fitting the sampled policy target; and the prior's entropy on both action kinds."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import make_agent
from podracer.agents import make_muzero
from podracer.agents.muzero import sampled_policy_cross_entropy
from podracer.agents.muzero import scaled_actions
from podracer.agents.policy import tanh_squash
from podracer.envs import EnvSpec
from podracer.search import SearchConfig

T, B, A = 8, 2, 2

BOX = EnvSpec("box", (3,), "float32", None, max_episode_steps=10, action_shape=(2,),
              action_low=(-1.0, -0.5), action_high=(1.0, 2.0))  # fmt: skip
NUM_SAMPLES = 4


@pytest.fixture(scope="module")
def sampled(muzero_small):
    """The small agent on a box: Sampled MuZero with NUM_SAMPLES actions a search."""
    return dataclasses.replace(
        muzero_small, num_action_samples=NUM_SAMPLES, search=SearchConfig(num_simulations=4)
    )


def sampled_trajectory(random_trajectory, vector_spec, seed=0):
    """The shared random trajectory with box actions and Sampled MuZero's extras."""
    traj = random_trajectory(vector_spec, T, B, seed=seed)
    rng = np.random.default_rng(seed + 1)
    low, high = BOX.action_bounds()
    weights = rng.uniform(0.1, 1.0, size=(T + 1, B, NUM_SAMPLES))
    extras = {
        "policy": jnp.asarray(weights / weights.sum(-1, keepdims=True), jnp.float32),
        "root_value": jnp.asarray(rng.normal(size=(T + 1, B)), jnp.float32),
        "sampled_actions": jnp.asarray(rng.normal(size=(T + 1, B, NUM_SAMPLES, 2)), jnp.float32),
    }
    action = jnp.asarray(rng.uniform(low, high, size=(T + 1, B, 2)), jnp.float32)
    return traj._replace(action=action, extras=extras)


def test_sampled_policy_cross_entropy_by_hand():
    """-sum_n w_n log N(u_n; mu, sigma), the Gaussian's log-density written out."""
    mean, log_std = np.array([0.5, -1.0]), np.array([0.0, np.log(2.0)])
    samples = np.array([[0.0, 1.0], [1.5, -1.0], [0.5, 3.0]])  # [N=3, D=2]
    weights = np.array([0.2, 0.5, 0.3])
    std = np.exp(log_std)
    log_density = np.sum(
        -0.5 * ((samples - mean) / std) ** 2 - log_std - 0.5 * np.log(2 * np.pi), axis=-1
    )
    policy = jnp.asarray(np.stack([mean, log_std]), jnp.float32)  # the head's [2, D]
    got = sampled_policy_cross_entropy(policy, jnp.asarray(samples), jnp.asarray(weights))
    np.testing.assert_allclose(got, -np.sum(weights * log_density), rtol=1e-6)


def test_scaled_actions_invert_the_squash():
    """Dynamics sees the env's action scaled to [-1, 1]: tanh(u) for the sample u."""
    u = jnp.asarray(np.random.default_rng(0).normal(size=(5, 2)), jnp.float32)
    low, high = BOX.action_bounds()
    np.testing.assert_allclose(
        scaled_actions(BOX, tanh_squash(u, low, high)), jnp.tanh(u), rtol=1e-5, atol=1e-6
    )


def test_sampled_act_returns_box_actions_and_its_samples(sampled):
    agent = make_agent("muzero", BOX, sampled)
    params = agent.init(jax.random.key(0))
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(16, 3)), jnp.float32)
    action, extras, _ = jax.device_get(jax.jit(agent.act)(params, jax.random.key(2), obs))
    low, high = BOX.action_bounds()
    assert action.shape == (16, 2) and action.dtype == jnp.float32
    assert np.all((action >= low) & (action <= high))
    assert set(extras) == {"policy", "root_value", "sampled_actions"}
    chex.assert_shape(
        [extras["policy"], extras["root_value"], extras["sampled_actions"]],
        [(16, NUM_SAMPLES), (16,), (16, NUM_SAMPLES, 2)],
    )
    np.testing.assert_allclose(np.sum(extras["policy"], -1), 1.0, rtol=1e-5)
    # Without exploration the action is the squash of one of the root's samples.
    greedy_agent = make_agent("muzero", BOX, dataclasses.replace(sampled, exploration_epsilon=0.0))
    action, extras, _ = jax.device_get(jax.jit(greedy_agent.act)(params, jax.random.key(2), obs))
    squashed = np.asarray(tanh_squash(extras["sampled_actions"], low, high))  # [16, N, 2]
    assert np.all(np.min(np.abs(squashed - action[:, None]).max(-1), -1) < 1e-6)
    greedy = np.asarray(agent.greedy_act(params, obs)[0])
    np.testing.assert_array_equal(greedy, agent.greedy_act(params, obs)[0])
    assert greedy.shape == (16, 2) and np.all((greedy >= low) & (greedy <= high))


@pytest.mark.slow
def test_sampled_update_fits_the_sampled_policy_target(sampled, random_trajectory, vector_spec):
    """Updates on a fixed trajectory with box actions lower the loss and its policy part
    (the prior fitted to the weighted samples), with finite gradients."""
    agent = make_agent("muzero", BOX, sampled)
    params = agent.init(jax.random.key(0))
    traj = sampled_trajectory(random_trajectory, vector_spec)
    (first, first_metrics), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    chex.assert_tree_all_finite(grads)
    update = jax.jit(agent.update)
    opt_state = agent.optimizer.init(params)
    p = params
    for i in range(30):
        p, opt_state, _ = update(p, opt_state, traj, jax.random.key(i))
    last, metrics = agent.loss(p, traj, jax.random.key(0))
    assert float(last) < 0.9 * float(first)
    assert metrics["losses/policy"] < first_metrics["losses/policy"]


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["discrete", "box"])
def test_reports_the_prior_entropy(muzero_small, sampled, spec, vector_spec, random_trajectory):
    """The prior's entropy at observed states: the categorical's, or the Gaussian's (sum
    of log-std + (1 + log 2 pi) / 2 over dims); `entropy_cost` times it comes off the
    loss, and its gradient raises the entropy."""
    env_spec, config = (vector_spec, muzero_small) if spec == "discrete" else (BOX, sampled)
    if spec == "discrete":
        traj = random_trajectory(vector_spec, T, B, extras=discrete_search_extras())
    else:
        traj = sampled_trajectory(random_trajectory, vector_spec)
    agent = make_muzero(env_spec, config)
    params = agent.init(jax.random.key(0))
    loss, metrics = agent.loss(params, traj, jax.random.key(0))
    # Zero-initialised heads: a uniform categorical, a unit Gaussian per action dim.
    uniform = np.log(A) if spec == "discrete" else 2 * 0.5 * (1 + np.log(2 * np.pi))
    np.testing.assert_allclose(metrics["agent/prior_entropy"], uniform, rtol=1e-5)

    bonus = make_muzero(env_spec, dataclasses.replace(config, entropy_cost=0.5))
    loss_b, metrics_b = bonus.loss(params, traj, jax.random.key(0))
    np.testing.assert_allclose(loss_b, loss - 0.5 * uniform, rtol=1e-5)

    # Only the bonus's gradient: a step along it raises the (sharpened) prior's entropy.
    sharp = jax.tree.map(lambda x: x, params)
    head = sharp["params"]["policy_head"]
    head["bias"] = head["bias"] + jnp.linspace(-2.0, 2.0, head["bias"].shape[-1])
    only = make_muzero(
        env_spec,
        dataclasses.replace(
            config, entropy_cost=1.0, value_cost=0.0, reward_cost=0.0, policy_cost=0.0
        ),
    )
    grads, before = jax.grad(lambda p: only.loss(p, traj, jax.random.key(0)), has_aux=True)(sharp)
    stepped = jax.tree.map(lambda p, g: p - 0.1 * g, sharp, grads)
    _, after = only.loss(stepped, traj, jax.random.key(0))
    assert after["agent/prior_entropy"] > before["agent/prior_entropy"] + 1e-3


def discrete_search_extras(seed=0):
    """The acting search's extras of the discrete `muzero_small` agent, random."""
    rng = np.random.default_rng(seed)
    policy = rng.uniform(0.1, 1.0, size=(T + 1, B, A))
    return {
        "policy": jnp.asarray(policy / policy.sum(-1, keepdims=True), jnp.float32),
        "root_value": jnp.asarray(rng.normal(size=(T + 1, B)), jnp.float32),
    }
