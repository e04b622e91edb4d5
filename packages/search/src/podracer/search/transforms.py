"""Value and reward transforms: the MuZero scaling `h` and two-hot categorical supports.

MuZero (Schrittwieser et al., 2020, appendix F) predicts values and rewards as
categorical distributions over a fixed support, after squashing the scalar targets with
the invertible transform of Pohlen et al. (2018):

    h(x)      = sign(x) (sqrt(|x| + 1) - 1) + eps x
    h^-1(y)   = sign(y) (((sqrt(1 + 4 eps (|y| + 1 + eps)) - 1) / (2 eps))^2 - 1)

Both are written in forms that avoid cancellation near zero (the textbook forms lose
about four digits there in float32 because of the division by `2 eps`). `DiscreteSupport`
(in `config`, importable without JAX) encodes and decodes through the functions below.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from podracer.search.config import DEFAULT_EPS
from podracer.search.config import DiscreteSupport


def signed_hyperbolic(x: chex.Array, eps: float = DEFAULT_EPS) -> chex.Array:
    """`h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x`, elementwise (rlax's name for it)."""
    abs_x = jnp.abs(x)
    # sqrt(|x| + 1) - 1 == |x| / (sqrt(|x| + 1) + 1), without the cancellation near 0.
    return jnp.sign(x) * abs_x / (jnp.sqrt(abs_x + 1.0) + 1.0) + eps * x


def signed_parabolic(y: chex.Array, eps: float = DEFAULT_EPS) -> chex.Array:
    """The exact inverse of `signed_hyperbolic`, elementwise (closed form)."""
    abs_y = jnp.abs(y)
    # z = (sqrt(1 + a) - 1) / (2 eps) with a = 4 eps (|y| + 1 + eps), rationalised:
    # z = 2 (|y| + 1 + eps) / (sqrt(1 + a) + 1); then h^-1(y) = sign(y) (z^2 - 1).
    root = jnp.sqrt(1.0 + 4.0 * eps * (abs_y + 1.0 + eps))
    z = 2.0 * (abs_y + 1.0 + eps) / (root + 1.0)
    return jnp.sign(y) * (z - 1.0) * (z + 1.0)


def support_atoms(support: DiscreteSupport) -> chex.Array:
    """The atoms `[num_bins]` (float32), in the (possibly squashed) space of the support.

    Computed in Python double precision, then rounded once: whole-numbered supports
    get exact atoms (`jnp.linspace` in float32 can be off by an ulp).
    """
    span, last = support.max_value - support.min_value, support.num_bins - 1
    values = [support.min_value + span * i / last for i in range(support.num_bins)]
    return jnp.array(values, jnp.float32)


def scalar_to_probs(support: DiscreteSupport, x: chex.Array) -> chex.Array:
    """Two-hot encodes scalars `[...]` into probabilities `[..., num_bins]`.

    Scalars outside the support are clipped to its ends (all mass on one end atom).
    """
    x = jnp.asarray(x, jnp.float32)
    if support.scaled:
        x = signed_hyperbolic(x, support.eps)
    step = (support.max_value - support.min_value) / (support.num_bins - 1)
    position = (jnp.clip(x, support.min_value, support.max_value) - support.min_value) / step
    lower = jnp.clip(jnp.floor(position), 0, support.num_bins - 2)
    upper_weight = jnp.clip(position - lower, 0.0, 1.0)
    lower = lower.astype(jnp.int32)
    lower_probs = jax.nn.one_hot(lower, support.num_bins, dtype=x.dtype)
    upper_probs = jax.nn.one_hot(lower + 1, support.num_bins, dtype=x.dtype)
    return lower_probs * (1.0 - upper_weight)[..., None] + upper_probs * upper_weight[..., None]


def probs_to_scalar(support: DiscreteSupport, probs: chex.Array) -> chex.Array:
    """Decodes probabilities `[..., num_bins]` into scalars `[...]` (the expectation)."""
    chex.assert_axis_dimension(probs, -1, support.num_bins)
    atoms = support_atoms(support).astype(probs.dtype).reshape((1,) * (probs.ndim - 1) + (-1,))
    x = jnp.sum(probs * atoms, axis=-1)  # not a matmul: exact on TPU too
    return signed_parabolic(x, support.eps) if support.scaled else x


def logits_to_scalar(support: DiscreteSupport, logits: chex.Array) -> chex.Array:
    """Decodes logits `[..., num_bins]` into scalars `[...]` (expectation of the softmax)."""
    return probs_to_scalar(support, jax.nn.softmax(logits, axis=-1))
