"""Tests for the value transform h, its inverse, and two-hot supports."""

import functools

import jax
import numpy as np
import pytest

from podracer.search import DiscreteSupport
from podracer.search import logits_to_scalar
from podracer.search import probs_to_scalar
from podracer.search import scalar_to_probs
from podracer.search import signed_hyperbolic
from podracer.search import signed_parabolic
from podracer.search import support_atoms

# Jitted once: one compile per function instead of one per eager primitive.
h = jax.jit(signed_hyperbolic)
h_inv = jax.jit(signed_parabolic)

WIDE = np.concatenate([-np.logspace(-6, 6, 121), [0.0], np.logspace(-6, 6, 121)]).astype(np.float32)


def _h_reference(x, eps=1e-3):
    """The MuZero paper's formula, in float64."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + eps * x


def _h_inverse_reference(y, eps=1e-3):
    """rlax.signed_parabolic's formula, in float64."""
    y = np.asarray(y, np.float64)
    z = np.sqrt(1.0 + 4.0 * eps * (eps + 1.0 + np.abs(y))) / 2.0 / eps - 1.0 / 2.0 / eps
    return np.sign(y) * (np.square(z) - 1.0)


def test_signed_hyperbolic_matches_formula():
    np.testing.assert_allclose(h(WIDE), _h_reference(WIDE), rtol=1e-6, atol=1e-7)
    # Hard-coded values: h(0) = 0, h(3) = 1 + 0.003, h(-8) = -(2 + 0.008), h(99) = 9.099.
    np.testing.assert_allclose(
        h(np.array([0.0, 3.0, -8.0, 99.0], np.float32)), [0.0, 1.003, -2.008, 9.099], rtol=1e-6
    )


def test_signed_parabolic_matches_formula():
    y = _h_reference(WIDE).astype(np.float32)
    np.testing.assert_allclose(h_inv(y), _h_inverse_reference(y), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("eps", [1e-3, 1e-2])
def test_round_trip_over_wide_range(eps):
    np.testing.assert_allclose(h_inv(h(WIDE, eps), eps), WIDE, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h(h_inv(WIDE, eps), eps), WIDE, rtol=1e-5, atol=1e-5)


def _jitted(support: DiscreteSupport):
    """(encode, decode, decode_logits) of a support, jitted."""
    return (
        jax.jit(functools.partial(scalar_to_probs, support)),
        jax.jit(functools.partial(probs_to_scalar, support)),
        jax.jit(functools.partial(logits_to_scalar, support)),
    )


def test_two_hot_known_encoding_and_clipping():
    support = DiscreteSupport(-2.0, 2.0, 5)  # atoms -2, -1, 0, 1, 2
    encode, decode, _ = _jitted(support)
    probs = encode(np.array([0.25, -2.0, 2.0, 1.0, -5.0, 7.0], np.float32))
    np.testing.assert_allclose(
        probs,
        [
            [0.0, 0.0, 0.75, 0.25, 0.0],
            [1.0, 0.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 1.0],
            [0.0, 0.0, 0.0, 1.0, 0.0],
            [1.0, 0.0, 0.0, 0.0, 0.0],  # -5 clips to -2
            [0.0, 0.0, 0.0, 0.0, 1.0],  # 7 clips to 2
        ],
        atol=1e-7,
    )
    np.testing.assert_allclose(decode(probs), [0.25, -2.0, 2.0, 1.0, -2.0, 2.0], atol=1e-7)


def test_two_hot_round_trip_inside_support():
    support = DiscreteSupport(-10.0, 10.0, 21)
    encode, decode, _ = _jitted(support)
    x = np.linspace(-10.0, 10.0, 401, dtype=np.float32).reshape(401, 1)
    probs = encode(x)
    assert probs.shape == (401, 1, 21)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert (probs >= 0).all() and ((probs > 0).sum(-1) <= 2).all()
    np.testing.assert_allclose(decode(probs), x, atol=1e-5)
    # Atoms themselves are exactly one-hot and decode exactly.
    atoms = np.asarray(support_atoms(support))
    np.testing.assert_array_equal(atoms, np.arange(-10.0, 11.0))
    np.testing.assert_array_equal(encode(atoms), np.eye(21, dtype=np.float32))
    np.testing.assert_array_equal(decode(encode(atoms)), atoms)


def test_logits_to_scalar():
    _, _, decode_logits = _jitted(DiscreteSupport(0.0, 4.0, 5))
    probs = np.array([[0.0, 0.5, 0.5, 0.0, 0.0], [0.1, 0.2, 0.3, 0.2, 0.2]], np.float32)
    with np.errstate(divide="ignore"):
        logits = np.log(probs)
    np.testing.assert_allclose(decode_logits(logits), [1.5, 2.2], rtol=1e-6)


def test_scaled_support_round_trip():
    support = DiscreteSupport(-300.0, 300.0, 601, scaled=True)  # MuZero's value support
    encode, decode, _ = _jitted(support)
    x = np.array([-1e4, -123.4, -1.0, 0.0, 0.37, 55.5, 8765.0, 1e7], np.float32)
    probs = np.asarray(encode(x))
    # The mass sits around h(x), not x; beyond h^-1(300) (about 5.9e4) it clips.
    expected = np.minimum(_h_reference(x), 300.0)
    np.testing.assert_allclose(probs @ np.arange(-300.0, 301.0), expected, rtol=1e-5, atol=1e-4)
    decoded = decode(probs)
    np.testing.assert_allclose(decoded[:-1], x[:-1], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(decoded[-1], _h_inverse_reference(300.0), rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(min_value=0.0, max_value=1.0, num_bins=1), "num_bins"),
        (dict(min_value=1.0, max_value=1.0, num_bins=3), "max_value"),
        (dict(min_value=0.0, max_value=1.0, num_bins=3, eps=0.0), "eps"),
    ],
)
def test_support_validation(kwargs, field):
    with pytest.raises(ValueError, match=f"DiscreteSupport.{field}"):
        DiscreteSupport(**kwargs)
