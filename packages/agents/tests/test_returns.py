"""Episode boundaries, bootstrap values, V-trace and GAE against hand-written loops."""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import bootstrap_values
from podracer.agents import boundaries
from podracer.agents import final_values as final_values_of
from podracer.agents import lambda_advantages
from podracer.agents import vtrace

GAMMA = 0.9
JIT_OR_NOT = pytest.mark.parametrize("variant", [jax.jit, lambda f: f], ids=["jit", "nojit"])


class Targets(NamedTuple):
    v_t: jax.Array  # [T, B]
    value_target: jax.Array  # [T, B] V-trace v_s
    pg_advantage: jax.Array  # [T, B]
    gae: jax.Array  # [T, B] lambda_advantages


@functools.partial(jax.jit, static_argnames=("lambda_", "clip"))
def targets(ts, values, final_values, rho, lambda_, clip=(1.0, 1.0)):
    """Everything under test in one compiled call (eager rlax scans compile per op)."""
    b = boundaries(ts, GAMMA)
    v_t = bootstrap_values(values, final_values, ts)
    out = vtrace(values[:-1], v_t, b, rho, lambda_, *clip)
    return Targets(
        v_t, out.value_target, out.pg_advantage, lambda_advantages(values[:-1], v_t, b, lambda_)
    )


# --- Scenarios. ---------------------------------------------------------------------------


@pytest.fixture
def jax_env_case(make_timestep):
    """T=5, B=2. Column 0: terminated at step 2, truncated at step 4 (same-step reset:
    `final_observation` differs there). Column 1 runs on and bootstraps at the end."""
    rng = np.random.default_rng(1)
    reward = rng.normal(size=(6, 2))
    terminated = np.zeros((6, 2), bool)
    truncated = np.zeros((6, 2), bool)
    terminated[2, 0] = True
    truncated[4, 0] = True
    ts = make_timestep(reward, terminated, truncated)
    values = jnp.asarray(rng.normal(size=(6, 2)), jnp.float32)
    final_values = jnp.asarray(rng.normal(size=(5, 2)) + 5.0, jnp.float32)  # distinct from values
    return ts, values, final_values


@pytest.fixture
def envpool_case(make_timestep):
    """T=5, B=1 in envpool's layout: terminated at step 1 -> dummy step 2; truncated at
    step 4 (observation is the final one) -> dummy step 5. Dummy rewards are 0."""
    reward = np.array([[0.0], [1.0], [0.0], [2.0], [3.0], [0.0]])
    terminated = np.zeros((6, 1), bool)
    truncated = np.zeros((6, 1), bool)
    first = np.zeros((6, 1), bool)
    terminated[1] = truncated[4] = True
    first[0] = first[2] = first[5] = True
    ts = make_timestep(reward, terminated, truncated, first, final_observation=None)
    values = jnp.asarray([[0.5], [0.25], [1.0], [-1.0], [2.0], [4.0]], jnp.float32)
    return ts, values


# --- Tests. ---------------------------------------------------------------------------------


def test_boundaries_of_a_jax_env_trajectory(jax_env_case):
    ts, _, _ = jax_env_case
    b = boundaries(ts, GAMMA)
    np.testing.assert_allclose(b.discount[:, 0], [0.9, 0.0, 0.9, 0.9, 0.9])
    np.testing.assert_allclose(b.discount[:, 1], [0.9] * 5)
    np.testing.assert_array_equal(b.cut[:, 0], [False, True, False, True, False])
    np.testing.assert_array_equal(b.cut[:, 1], [False] * 5)
    np.testing.assert_array_equal(b.mask, np.ones((5, 2), bool))  # JaxEnvs emit no dummy
    np.testing.assert_array_equal(b.reward, ts.reward[1:])


def test_boundaries_mask_only_envpool_dummy_transitions(envpool_case):
    ts, _ = envpool_case
    b = boundaries(ts, GAMMA)
    np.testing.assert_array_equal(b.mask[:, 0], [True, False, True, True, False])
    np.testing.assert_array_equal(b.cut[:, 0], [True, False, False, True, False])
    np.testing.assert_allclose(b.discount[:, 0], [0.0, 0.9, 0.9, 0.9, 0.9])  # truncation bootstraps


def test_bootstrap_values_use_final_observation_only_at_truncation(jax_env_case):
    ts, values, final_values = jax_env_case
    v_t = bootstrap_values(values, final_values, ts)
    expected = np.asarray(values[1:]).copy()
    expected[3, 0] = final_values[3, 0]  # truncated at step 4 = transition 3
    np.testing.assert_array_equal(v_t, expected)
    np.testing.assert_array_equal(bootstrap_values(values, None, ts), values[1:])


def test_final_values_pair_each_final_observation_with_the_core_before_it(make_timestep):
    """Row t+1's final observation is valued from the core after row t; none without
    truncation or without final observations (envpool's layout)."""
    truncated = np.zeros((4, 2), bool)
    truncated[2, 1] = True
    ts = make_timestep(np.zeros((4, 2)), truncated=truncated, obs_shape=(3,))
    cores = (jnp.arange(8.0).reshape(4, 2),)  # the states after each of the T+1 rows

    def value_fn(observation, cores):
        return observation.sum(-1) + 100.0 * cores[0]

    v = final_values_of(value_fn, ts, can_truncate=True, cores=cores)
    expected = ts.final_observation[1:].sum(-1) + 100.0 * cores[0][:-1]
    np.testing.assert_allclose(v, expected)
    feed_forward = final_values_of(lambda o, c: o.sum(-1), ts, can_truncate=True)
    np.testing.assert_allclose(feed_forward, ts.final_observation[1:].sum(-1))
    assert final_values_of(value_fn, ts, can_truncate=False, cores=cores) is None
    envpool = make_timestep(np.zeros((4, 2)), final_observation=None)
    assert final_values_of(value_fn, envpool, can_truncate=True, cores=cores) is None


@JIT_OR_NOT
def test_lambda_one_gives_hand_computed_discounted_returns(variant, make_timestep):
    """T=3, B=3, gamma 0.9, rewards 1, 2, 3, values 0.5, 1, 1.5, 2 on every column.

    Column 0 runs on: G2 = 3 + .9*2 = 4.8, G1 = 2 + .9*4.8 = 6.32, G0 = 1 + .9*6.32 = 6.688.
    Column 1 terminates at step 2: G1 = 2, G0 = 1 + .9*2 = 2.8, G2 = 3 + .9*2 = 4.8.
    Column 2 is truncated at step 2 with final value 10: G1 = 2 + 9 = 11, G0 = 10.9.
    """
    reward = np.tile([[0.0], [1.0], [2.0], [3.0]], (1, 3))
    terminated = np.zeros((4, 3), bool)
    truncated = np.zeros((4, 3), bool)
    terminated[2, 1] = truncated[2, 2] = True
    ts = make_timestep(reward, terminated, truncated)
    values = jnp.tile(jnp.array([[0.5], [1.0], [1.5], [2.0]]), (1, 3))
    final_values = jnp.full((3, 3), 10.0)
    expected = np.array([[6.688, 2.8, 10.9], [6.32, 2.0, 11.0], [4.8, 4.8, 4.8]])

    @variant
    def targets(values, final_values):
        b = boundaries(ts, GAMMA)
        v_t = bootstrap_values(values, final_values, ts)
        adv = lambda_advantages(values[:-1], v_t, b, 1.0)
        out = vtrace(values[:-1], v_t, b, jnp.ones((3, 3)), lambda_=1.0)
        return adv, out

    adv, out = targets(values, final_values)
    np.testing.assert_allclose(adv + values[:-1], expected, rtol=1e-6)
    np.testing.assert_allclose(out.value_target, expected, rtol=1e-6)
    # On-policy with lambda 1, the pg advantage is the Monte Carlo return minus V(x_t).
    np.testing.assert_allclose(out.pg_advantage, expected - values[:-1], rtol=1e-6)


@pytest.mark.parametrize("lambda_", [0.0, 0.5, 0.95, 1.0])
def test_lambda_advantages_match_a_gae_loop(jax_env_case, lambda_, ref):
    ts, values, final_values = jax_env_case
    adv = targets(ts, values, final_values, jnp.ones((5, 2)), lambda_).gae
    expected = ref.gae(ref.bookkeeping(ts, values, final_values, GAMMA), lambda_)
    np.testing.assert_allclose(adv, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lambda_", [0.5, 1.0])
def test_on_policy_vtrace_is_the_lambda_return(jax_env_case, lambda_, ref):
    """rho = 1: v_s is the TD(lambda) return and the pg advantage its one-step form."""
    ts, values, final_values = jax_env_case
    out = targets(ts, values, final_values, jnp.ones((5, 2)), lambda_)
    b = ref.bookkeeping(ts, values, final_values, GAMMA)
    lambda_return = ref.gae(b, lambda_) + b["v"]
    np.testing.assert_allclose(out.value_target, lambda_return, rtol=1e-5, atol=1e-6)
    vs_next = np.concatenate([lambda_return[1:], b["v_boot"][-1:]])
    vs_next = np.where(b["cut"], b["v_boot"], vs_next)
    np.testing.assert_allclose(
        out.pg_advantage, b["r"] + b["disc"] * vs_next - b["v"], rtol=1e-5, atol=1e-6
    )
    if lambda_ == 1.0:
        np.testing.assert_allclose(out.pg_advantage, lambda_return - b["v"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("clip", [(1.0, 1.0), (0.8, 1.5)], ids=["default-clip", "other-clip"])
def test_off_policy_vtrace_matches_its_definition(jax_env_case, clip, ref):
    ts, values, final_values = jax_env_case
    rho = jnp.asarray(np.random.default_rng(2).uniform(0.3, 2.0, size=(5, 2)), jnp.float32)
    out = targets(ts, values, final_values, rho, 0.9, clip)
    vs, adv = ref.vtrace(
        ref.bookkeeping(ts, values, final_values, GAMMA), np.asarray(rho), 0.9, *clip
    )
    np.testing.assert_allclose(out.value_target, vs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.pg_advantage, adv, rtol=1e-5, atol=1e-6)


def test_pg_advantage_at_episode_ends_uses_the_ending_episode(jax_env_case):
    """At a termination the pg target is r alone; at a truncation r + gamma V(final obs),
    never the v_s of the next episode's first step."""
    ts, values, final_values = jax_env_case
    out = targets(ts, values, final_values, jnp.ones((5, 2)), 1.0)
    r, v = np.asarray(ts.reward), np.asarray(values)
    np.testing.assert_allclose(out.pg_advantage[1, 0], r[2, 0] - v[1, 0], rtol=1e-6)
    np.testing.assert_allclose(
        out.pg_advantage[3, 0], r[4, 0] + GAMMA * final_values[3, 0] - v[3, 0], rtol=1e-6
    )
    np.testing.assert_allclose(
        out.value_target[3, 0], r[4, 0] + GAMMA * final_values[3, 0], rtol=1e-6
    )


def test_targets_do_not_see_past_an_episode_end(jax_env_case):
    """Changing everything after the termination at step 2 leaves transitions 0-1 alone."""
    ts, values, final_values = jax_env_case
    rho = jnp.full((5, 2), 0.7)
    out = targets(ts, values, final_values, rho, 0.9)
    other_ts = ts._replace(reward=ts.reward.at[3:].add(100.0))
    other = targets(other_ts, values.at[2:].add(-50.0), final_values, rho, 0.9)
    for field in ("value_target", "pg_advantage", "gae"):
        np.testing.assert_array_equal(getattr(out, field)[:2, 0], getattr(other, field)[:2, 0])


def test_two_halves_give_the_targets_of_one_rollout(jax_env_case):
    """With lambda 0 targets are one-step, so splitting the rollout changes nothing."""
    ts, values, final_values = jax_env_case
    rho = jnp.full((5, 2), 1.3)
    whole = targets(ts, values, final_values, rho, 0.0).value_target
    head = jax.tree.map(lambda x: x[:3], ts)
    tail = jax.tree.map(lambda x: x[2:], ts)
    halves = jnp.concatenate(
        [
            targets(head, values[:3], final_values[:2], rho[:2], 0.0).value_target,
            targets(tail, values[2:], final_values[2:], rho[2:], 0.0).value_target,
        ]
    )
    np.testing.assert_allclose(halves, whole, rtol=1e-6)


def test_envpool_dummy_transitions_do_not_leak_into_targets(envpool_case, ref):
    """Hand-computed, gamma 0.9, lambda 1, values [.5, .25, 1, -1, 2, 4].

    Transition 0 terminates: G0 = 1. Transition 1 (the dummy) is masked and does not
    flow into 0. Transitions 2-3 end at the truncation at step 4, whose observation is
    the final one: G3 = 3 + .9*2 = 4.8, G2 = 2 + .9*4.8 = 6.32.
    """
    ts, values = envpool_case
    mask = np.asarray(boundaries(ts, GAMMA).mask)
    adv = np.asarray(targets(ts, values, None, jnp.ones((5, 1)), 1.0).gae)
    returns = (adv + np.asarray(values[:-1]))[:, 0]
    np.testing.assert_allclose(returns[[0, 2, 3]], [1.0, 6.32, 4.8], rtol=1e-6)
    # The dummy's own reward does not matter to any unmasked transition.
    ts2 = ts._replace(reward=ts.reward.at[2].set(7.0).at[5].set(-7.0))
    adv2 = np.asarray(targets(ts2, values, None, jnp.ones((5, 1)), 1.0).gae)
    np.testing.assert_array_equal(adv2[mask], adv[mask])
    vs, _ = ref.vtrace(ref.bookkeeping(ts, values, None, GAMMA), np.ones((5, 1)), 1.0)
    np.testing.assert_allclose(returns, vs[:, 0], rtol=1e-6)
