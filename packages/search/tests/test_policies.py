"""Tests for `search`: finds known best actions, equals mctx, masks, batch independence.

Every search runs on the tabular model of conftest.py with batch 8 and 3 actions. Only
six programs are compiled for the whole file (two configs with the tree written both
ways, and mctx called directly with each), since compiling a search takes seconds of CPU.
"""

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from podracer.search import SearchConfig
from podracer.search import SearchOutput

GUMBEL = SearchConfig(num_simulations=16)  # mctx's defaults otherwise
# PUCT with a zero value function needs more simulations to look past the trap of state
# 0: it revisits an action valued 0 only once the exploration bonus outgrows Q. Light
# root noise keeps it reliable; the hot temperature exercises the action masking.
MUZERO = SearchConfig(policy="muzero", num_simulations=64, dirichlet_fraction=0.1, temperature=10.0)
CONFIGS = [GUMBEL, MUZERO]
IDS = ["gumbel", "muzero"]
B, A = 8, 3
NO_MASK = np.zeros((B, A), bool)


def _run(jit_search, tabular, states, config, mask=NO_MASK, seed=0, writes="auto") -> SearchOutput:
    key = jax.random.key(seed)
    return jit_search(None, key, tabular.model, states, config, mask, writes=writes)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_bandit_finds_best_arm(jit_search, tabular, config):
    rewards = tabular.rewards[tabular.bandit_states]  # [B, A]
    out = _run(jit_search, tabular, tabular.bandit_states, config)
    np.testing.assert_array_equal(np.argmax(out.action_weights, -1), rewards.argmax(-1))
    np.testing.assert_allclose(out.action_weights.sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(out.visit_counts.sum(-1), config.num_simulations)
    # Visited arms have Q equal to their reward (nothing follows).
    visited = np.asarray(out.visit_counts) > 0
    np.testing.assert_allclose(np.asarray(out.q_values)[visited], rewards[visited], rtol=1e-6)
    # The root value averages the zero value estimate and rewards in [0, 1].
    assert ((out.root_value > 0) & (out.root_value < 1)).all()
    assert out.action.dtype == jnp.int32 and out.action.shape == (B,)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_tree_finds_delayed_reward(jit_search, tabular, config):
    """From state 0 the immediate reward says action 0 (pays 1); action 1 pays 2-3 later."""
    out = _run(jit_search, tabular, tabular.tree_states, config)
    np.testing.assert_array_equal(np.argmax(out.action_weights, -1), tabular.tree_best)
    # Q of action 1 at state 0 saw past the zero immediate reward.
    assert (out.q_values[:4, 1] > 1.5).all()


def _direct_mctx(params, key, states, invalid_actions, config, tables):
    """The tabular model written straight against mctx, without podracer.search's glue."""
    rewards, next_state, discount = (jnp.asarray(t) for t in tables)
    root = mctx.RootFnOutput(
        prior_logits=jnp.zeros((states.shape[0], A)),
        value=jnp.zeros(states.shape[:1]),
        embedding=states,
    )

    def recurrent_fn(params, rng_key, action, state):
        output = mctx.RecurrentFnOutput(
            reward=rewards[state, action],
            discount=discount[state, action],
            prior_logits=jnp.zeros((state.shape[0], A)),
            value=jnp.zeros(state.shape),
        )
        return output, next_state[state, action]

    if config.policy == "gumbel":
        return mctx.gumbel_muzero_policy(
            params, key, root, recurrent_fn, config.num_simulations, invalid_actions,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=config.gumbel_scale,
        )  # fmt: skip
    return mctx.muzero_policy(
        params, key, root, recurrent_fn, config.num_simulations, invalid_actions,
        dirichlet_fraction=config.dirichlet_fraction,
        dirichlet_alpha=config.dirichlet_alpha,
        pb_c_init=config.pb_c_init,
        pb_c_base=config.pb_c_base,
        temperature=config.temperature,
    )  # fmt: skip


@pytest.mark.parametrize("writes", ["compare", "scatter"])
@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_bit_equal_to_mctx(jit_search, tabular, config, writes):
    tables = (tabular.rewards, tabular.next_state, tabular.discount)
    direct = jax.jit(
        lambda key, states, mask: _direct_mctx(None, key, states, mask, config, tables)
    )
    states = tabular.tree_states
    mask = NO_MASK.copy()
    mask[4:, 2] = True  # some rows have an invalid action
    for seed in range(3):
        ours = _run(jit_search, tabular, states, config, mask, seed, writes)
        theirs = direct(jax.random.key(seed), states, mask)
        summary = theirs.search_tree.summary()
        if config.policy == "gumbel":
            np.testing.assert_array_equal(ours.action, theirs.action)
        else:
            # Ours samples among visited actions only, with mctx's key and logits: the
            # same action wherever mctx's sample was a visited one.
            rows = np.arange(B)
            visits = np.asarray(summary.visit_counts)
            ours_action, theirs_action = np.asarray(ours.action), np.asarray(theirs.action)
            same = visits[rows, theirs_action] > 0
            assert same.sum() >= B - 1  # mctx rarely samples an unvisited action
            np.testing.assert_array_equal(ours_action[same], theirs_action[same])
            assert (visits[rows, ours_action] > 0).all()
        np.testing.assert_array_equal(ours.action_weights, theirs.action_weights)
        jax.tree.map(np.testing.assert_array_equal, ours.tree, theirs.search_tree)
        np.testing.assert_array_equal(ours.root_value, summary.value)
        np.testing.assert_array_equal(ours.q_values, summary.qvalues)
        np.testing.assert_array_equal(ours.visit_counts, summary.visit_counts)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_batch_elements_are_independent(jit_search, tabular, config):
    states = tabular.bandit_states
    changed = states.copy()
    changed[0] = 0  # the tree instead of a bandit
    out = _run(jit_search, tabular, states, config, seed=7)
    out_changed = _run(jit_search, tabular, changed, config, seed=7)
    assert not np.array_equal(out.q_values[0], out_changed.q_values[0])
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x[1:], y[1:]), out, out_changed)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_invalid_actions_never_selected(jit_search, tabular, config):
    states = tabular.bandit_states
    rewards = tabular.rewards[states]
    mask = NO_MASK.copy()
    mask[np.arange(B), rewards.argmax(-1)] = True  # the best arm is invalid
    mask[::2, 0] = True  # and arm 0 too in even rows
    for seed in range(4):
        out = _run(jit_search, tabular, states, config, mask, seed)
        assert not mask[np.arange(B), np.asarray(out.action)].any()
        np.testing.assert_array_equal(np.asarray(out.action_weights)[mask], 0.0)
        np.testing.assert_array_equal(np.asarray(out.visit_counts)[mask], 0.0)
        best_valid = np.argmax(np.where(mask, -np.inf, rewards), -1)
        np.testing.assert_array_equal(np.argmax(out.action_weights, -1), best_valid)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(policy="alphazero"), "policy"),
        (dict(num_simulations=0), "num_simulations"),
        (dict(num_simulations=8.0), "num_simulations"),
        (dict(max_depth=0), "max_depth"),
        (dict(gumbel_scale=-1.0), "gumbel_scale"),
        (dict(max_num_considered_actions=0), "max_num_considered_actions"),
        (dict(dirichlet_alpha=0.0), "dirichlet_alpha"),
        (dict(dirichlet_fraction=1.5), "dirichlet_fraction"),
        (dict(temperature=-0.1), "temperature"),
        (dict(pb_c_init=-1.0), "pb_c_init"),
        (dict(pb_c_base=0.0), "pb_c_base"),
        (dict(qtransform="minmax"), "qtransform"),
        (dict(value_scale=0.0), "value_scale"),
        (dict(maxvisit_init=-1.0), "maxvisit_init"),
        (dict(rescale_floor=0.0), "rescale_floor"),
        (dict(value_bounds=(1.0, -1.0)), "value_bounds"),
        (dict(qtransform="min_max"), "value_bounds"),
    ],
)
def test_bad_config_raises_naming_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"SearchConfig\.{field} must be"):
        SearchConfig(**kwargs)


def test_config_resolution_and_coercion():
    config = SearchConfig(
        dirichlet_alpha=1, temperature=0, value_bounds=[-1, 1], qtransform="min_max"
    )
    assert config.dirichlet_alpha == 1.0 and isinstance(config.dirichlet_alpha, float)
    assert config.value_bounds == (-1.0, 1.0)
    assert config.resolved_qtransform == "min_max"
    assert SearchConfig().resolved_qtransform == "mix_value"
    assert SearchConfig(policy="muzero").resolved_qtransform == "parent_and_siblings"
    assert hash(config) == hash(
        SearchConfig(dirichlet_alpha=1.0, temperature=0.0, value_bounds=(-1.0, 1.0),
                     qtransform="min_max")
    )  # fmt: skip
