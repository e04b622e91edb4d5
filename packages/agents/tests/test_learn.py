"""The learning-rate schedule (`annealed`, now optax's) against the formula it replaced."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents.learn import annealed


def _hand_annealed(learning_rate, total_updates, steps_per_update, count):
    """The schedule `annealed` wrote out before it was optax's (PureJaxRL's)."""
    frac = 1.0 - (count // steps_per_update) / total_updates
    return learning_rate * jnp.maximum(frac, 0.0)


@pytest.mark.parametrize(
    "total_updates, steps_per_update", [(1, 1), (10, 1), (7, 4), (97, 16), (9766, 64)]
)
def test_annealed_is_the_hand_written_schedule(total_updates, steps_per_update):
    """The same values, bit for bit, at every optimizer step of the run (as the optimizer
    computes them, jitted); from the end on exactly 0, where the hand-written one could be
    a rounding above it."""
    end = total_updates * steps_per_update  # the first step past the run's last update
    counts = jnp.arange(0, end + 3 * steps_per_update, dtype=jnp.int32)  # optax's int32 count
    got = jax.jit(annealed(2.5e-4, total_updates, steps_per_update))(counts)
    want = jax.jit(lambda c: _hand_annealed(2.5e-4, total_updates, steps_per_update, c))(counts)
    np.testing.assert_array_equal(got[:end], want[:end])
    np.testing.assert_array_equal(got[end:], 0.0)
    np.testing.assert_allclose(want[end:], 0.0, rtol=0, atol=2.5e-4 * 1e-6)
    assert got[0] == np.float32(2.5e-4) and got[steps_per_update - 1] == got[0]
    assert 0 < got[end - 1] <= got[0]  # the last update still learns


def test_annealed_takes_a_traced_rate_and_is_constant_without_a_length():
    """A sweep traces the rate (one per member); the length stays a Python int."""
    rates = jnp.array([1e-4, 3e-4, 1e-3])
    counts = jnp.arange(0, 40, 3, dtype=jnp.int32)
    got = jax.jit(jax.vmap(lambda lr: annealed(lr, 8, 4)(counts)))(rates)
    want = jax.jit(jax.vmap(lambda lr: _hand_annealed(lr, 8, 4, counts)))(rates)
    np.testing.assert_array_equal(got[:, counts < 32], want[:, counts < 32])
    np.testing.assert_array_equal(got[:, counts >= 32], 0.0)
    assert annealed(3e-4, None) == 3e-4 and annealed(3e-4, 0) == 3e-4
