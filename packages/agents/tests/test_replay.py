"""Replay: ring order, uniform and prioritised sampling, priorities, weights, config."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ReplayConfig
from podracer.agents import make_replay

ITEM = {"x": jnp.zeros(2, jnp.float32), "a": jnp.zeros((), jnp.int32)}


def rows(values):
    """Rows whose content is their value: x = [v, -v], a = v."""
    v = jnp.asarray(values, jnp.float32)
    return {"x": jnp.stack([v, -v], axis=1), "a": v.astype(jnp.int32)}


def test_add_then_sample_shapes_and_contents():
    replay = make_replay(capacity=5, batch_size=3)
    state = jax.jit(replay.add)(replay.init(ITEM), rows([7, 8]))
    assert int(state.size) == 2 and int(state.insert_index) == 2
    sample = jax.jit(replay.sample)(state, jax.random.PRNGKey(0))
    assert sample.items["x"].shape == (3, 2) and sample.items["a"].shape == (3,)
    assert sample.indices.shape == sample.probabilities.shape == sample.weights.shape == (3,)
    assert set(np.asarray(sample.indices)) <= {0, 1}  # never an empty row
    # Each sampled row is the row at its index.
    np.testing.assert_array_equal(sample.items["a"], np.array([7, 8])[np.asarray(sample.indices)])
    np.testing.assert_array_equal(sample.items["x"][:, 1], -sample.items["x"][:, 0])


def test_wraparound_overwrites_oldest_rows_first():
    replay = make_replay(capacity=4, batch_size=1)
    state = replay.add(replay.init(ITEM), rows([0, 1, 2]))
    state = replay.add(state, rows([3, 4, 5]))
    # Rows 0..2 <- 0,1,2; then 3 -> row 3, 4 -> row 0, 5 -> row 1.
    np.testing.assert_array_equal(state.items["a"], [4, 5, 2, 3])
    assert int(state.insert_index) == 2 and int(state.size) == 4


def test_add_more_rows_than_capacity_fails():
    replay = make_replay(capacity=2, batch_size=1)
    with pytest.raises(ValueError, match="capacity 2"):
        replay.add(replay.init(ITEM), rows([0, 1, 2]))


def test_uniform_sampling_covers_filled_rows_evenly():
    replay = make_replay(capacity=8, batch_size=4000)
    state = replay.add(replay.init(ITEM), rows([0, 1, 2, 3, 4]))
    sample = jax.jit(replay.sample)(state, jax.random.PRNGKey(1))
    counts = np.bincount(np.asarray(sample.indices), minlength=8)
    assert counts[5:].sum() == 0  # empty rows are never drawn
    np.testing.assert_allclose(counts[:5] / 4000, 0.2, atol=0.03)
    np.testing.assert_allclose(sample.probabilities, 0.2, rtol=1e-6)
    np.testing.assert_allclose(sample.weights, 1.0)


def test_prioritised_sampling_follows_priorities_and_weights_correct_it():
    replay = make_replay(
        capacity=4, batch_size=4000, priority_exponent=1.0, importance_exponent=1.0
    )
    state = replay.add(replay.init(ITEM), rows([0, 1]))
    state = replay.update_priorities(state, jnp.array([0, 1]), jnp.array([1.0, 3.0]))
    sample = jax.jit(replay.sample)(state, jax.random.PRNGKey(2))
    idx = np.asarray(sample.indices)
    # P = p / sum p = [0.25, 0.75].
    np.testing.assert_allclose(np.mean(idx == 1), 0.75, atol=0.03)
    np.testing.assert_allclose(sample.probabilities, np.where(idx == 1, 0.75, 0.25), rtol=1e-5)
    # w = (N P)^-beta / max w = [1/0.5, 1/1.5] / 2 = [1, 1/3].
    np.testing.assert_allclose(sample.weights, np.where(idx == 1, 1 / 3, 1.0), rtol=1e-5)


def test_priority_exponent_flattens_priorities():
    replay = make_replay(capacity=2, batch_size=8, priority_exponent=0.5)
    state = replay.add(replay.init(ITEM), rows([0, 1]))
    state = replay.update_priorities(state, jnp.array([0, 1]), jnp.array([1.0, 9.0]))
    sample = replay.sample(state, jax.random.PRNGKey(3))
    # P ∝ p^0.5 = [1, 3] -> [0.25, 0.75].
    expected = np.where(np.asarray(sample.indices) == 1, 0.75, 0.25)
    np.testing.assert_allclose(sample.probabilities, expected, rtol=1e-5)


def test_new_rows_get_the_largest_priority_and_updates_stick():
    replay = make_replay(capacity=4, batch_size=1, priority_exponent=1.0)
    state = replay.add(replay.init(ITEM), rows([0, 1]))
    np.testing.assert_array_equal(state.priorities, [1.0, 1.0, 0.0, 0.0])  # empty: 1
    state = jax.jit(replay.update_priorities)(state, jnp.array([1, 0]), jnp.array([5.0, 0.0]))
    # Zero priorities are floored so the row stays sampleable.
    np.testing.assert_allclose(state.priorities, [1e-6, 5.0, 0.0, 0.0])
    state = replay.add(state, rows([2]))
    np.testing.assert_allclose(state.priorities, [1e-6, 5.0, 5.0, 0.0])
    # A near-zero-priority row is (almost) never drawn.
    big = make_replay(capacity=4, batch_size=2000, priority_exponent=1.0)
    idx = np.asarray(big.sample(state, jax.random.PRNGKey(4)).indices)
    assert 0 not in idx and set(idx) == {1, 2}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("capacity", -1),
        ("sequences_per_update", 0),
        ("updates_per_rollout", 1.5),
        ("priority_exponent", -0.1),
        ("importance_exponent", 2.0),
    ],
)
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=f"ReplayConfig.{field}"):
        ReplayConfig(**{field: value})


def test_config_switches():
    assert not ReplayConfig().enabled
    assert ReplayConfig(capacity=64).enabled and not ReplayConfig(capacity=64).prioritised
    assert ReplayConfig(capacity=64, priority_exponent=0.6).prioritised
