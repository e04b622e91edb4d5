"""Policy maths: categorical over logits `[..., A]`, diagonal Gaussian over a box.

`action_policy(spec)` gives an agent the sampling, log-probabilities, entropies and
greedy action of its env's action space as one `ActionPolicy`, so PPO and IMPALA serve
both kinds of action with the same loss code.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np


def sample_categorical(key: chex.PRNGKey, logits: chex.Array) -> chex.Array:
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def select(values: chex.Array, action: chex.Array) -> chex.Array:
    """`values[..., action]` `[...]` for `[..., A]` values and integer actions `[...]`.

    A one-hot select rather than `take_along_axis`: its gradient is elementwise, where a
    gather's is a scatter-add, which on CPU made the whole backward pass ~2x slower.
    """
    chosen = jax.nn.one_hot(action, values.shape[-1], dtype=jnp.bool_)
    return jnp.sum(jnp.where(chosen, values, 0), axis=-1)


def log_prob(logits: chex.Array, action: chex.Array) -> chex.Array:
    """log pi(action) `[...]` for logits `[..., A]` and integer actions `[...]`."""
    return select(jax.nn.log_softmax(logits, axis=-1), action)


def categorical_entropy(logits: chex.Array) -> chex.Array:
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def epsilon_greedy(key: chex.PRNGKey, q: chex.Array, epsilon: float) -> chex.Array:
    """argmax_a q `[...]` with probability 1 - epsilon, else a uniform action (int32).

    Written out because `rlax.epsilon_greedy` is pending deprecation (it warns on use).
    """
    explore_key, action_key = jax.random.split(key)
    greedy = jnp.argmax(q, axis=-1).astype(jnp.int32)
    uniform = jax.random.randint(action_key, greedy.shape, 0, q.shape[-1], jnp.int32)
    explore = jax.random.uniform(explore_key, greedy.shape) < epsilon
    return jnp.where(explore, uniform, greedy)


# --- Diagonal Gaussian policies over a continuous box ----------------------------------
#
# A Gaussian policy samples a raw action u ~ N(mean, diag(std^2)) of the box's shape. What
# the env receives is a function of u, and the log-probability every loss uses is of that
# same u, so ratios pi/mu are exact:
#
# * "clip" (CleanRL's continuous PPO): the action is u itself; the env adapter clips it to
#   the box. The policy is the Gaussian over u, so log pi(u) is the plain Gaussian density.
# * "tanh": the action a = low + (high - low) (tanh(u) + 1) / 2 lies inside the box; its
#   density is log N(u) - log|da/du| (change of variables). The Jacobian does not depend
#   on the parameters, so it cancels in ratios; entropies are the Gaussian's (the squashed
#   one has no closed form), a common bonus for both.
#
# Written out rather than distrax's (which agrees; tests/test_policy.py compares them):
# distrax warns on import under this jax, and its tanh-`Transformed` distribution scores
# the squashed action by inverting tanh, which is not finite at the box's bounds.

SQUASHES = ("clip", "tanh")
_LOG_2PI = float(np.log(2.0 * np.pi))


class Gaussian(NamedTuple):
    """A diagonal Gaussian over actions `[..., *action_shape]`."""

    mean: chex.Array  # [..., *action_shape]
    log_std: chex.Array  # [..., *action_shape]


def _sum_event(x: chex.Array, event_ndim: int) -> chex.Array:
    return jnp.sum(x, axis=tuple(range(x.ndim - event_ndim, x.ndim))) if event_ndim else x


def gaussian_log_prob(dist: Gaussian, x: chex.Array, event_ndim: int = 1) -> chex.Array:
    """log N(x; mean, diag(exp(log_std)^2)) `[...]`, summed over the last `event_ndim` dims:
    sum_i -((x_i - mu_i) / sigma_i)^2 / 2 - log sigma_i - log(2 pi) / 2."""
    chex.assert_equal_shape([dist.mean, dist.log_std, x])
    z = (x - dist.mean) * jnp.exp(-dist.log_std)
    return _sum_event(-0.5 * jnp.square(z) - dist.log_std - 0.5 * _LOG_2PI, event_ndim)


def gaussian_entropy(dist: Gaussian, event_ndim: int = 1) -> chex.Array:
    """The differential entropy `[...]`: sum_i log sigma_i + (1 + log(2 pi)) / 2."""
    return _sum_event(dist.log_std + 0.5 * (1.0 + _LOG_2PI), event_ndim)


def sample_gaussian(key: chex.PRNGKey, dist: Gaussian) -> chex.Array:
    """u = mean + std * eps, eps ~ N(0, I), float32 like the mean."""
    noise = jax.random.normal(key, dist.mean.shape, dist.mean.dtype)
    return dist.mean + jnp.exp(dist.log_std) * noise


def _expand(bound: np.ndarray, like: chex.Array) -> jax.Array:
    """A box bound `[*action_shape]` with leading 1s to `like`'s rank (explicit ranks)."""
    return jnp.asarray(bound).reshape((1,) * (like.ndim - bound.ndim) + bound.shape)


def tanh_squash(u: chex.Array, low: np.ndarray, high: np.ndarray) -> chex.Array:
    """a = low + (high - low) (tanh(u) + 1) / 2, inside the box `[low, high]`."""
    low, high = _expand(low, u), _expand(high, u)
    return low + 0.5 * (high - low) * (jnp.tanh(u) + 1.0)


def tanh_log_det_jacobian(
    u: chex.Array, low: np.ndarray, high: np.ndarray, event_ndim: int = 1
) -> chex.Array:
    """log|da/du| `[...]` of `tanh_squash`: sum_i log((high_i - low_i) / 2) + log(1 - tanh^2 u_i),
    the latter as 2 (log 2 - u - softplus(-2u)), finite where tanh(u) rounds to 1."""
    half_width = 0.5 * (_expand(high, u) - _expand(low, u))
    log_det = jnp.log(half_width) + 2.0 * (np.log(2.0) - u - jax.nn.softplus(-2.0 * u))
    return _sum_event(log_det, event_ndim)


class ActionPolicy(NamedTuple):
    """An action space's policy maths over a network's policy output `dist`: logits `[B, A]`
    (categorical) or a `Gaussian` `[B, *action_shape]`. The agents call these and never
    branch on the action space themselves.

    `sample` returns the action sent to the env and the extras `log_prob` needs besides
    it (the raw Gaussian sample under tanh squashing, else nothing).
    """

    sample: Callable[[chex.PRNGKey, Any], tuple[chex.Array, dict[str, chex.Array]]]
    log_prob: Callable[[Any, chex.Array, Mapping[str, chex.Array]], chex.Array]  # [B]
    entropy: Callable[[Any], chex.Array]  # [B]
    greedy: Callable[[Any], chex.Array]  # the evaluation action: argmax, or the box's mean


def categorical_policy() -> ActionPolicy:
    """Discrete actions: int32 samples from the logits, greedy argmax."""
    return ActionPolicy(
        sample=lambda key, logits: (sample_categorical(key, logits), {}),
        log_prob=lambda logits, action, extras: log_prob(logits, action),
        entropy=categorical_entropy,
        greedy=lambda logits: jnp.argmax(logits, axis=-1).astype(jnp.int32),
    )


def gaussian_policy(spec: Any, squash: str = "clip") -> ActionPolicy:
    """A diagonal Gaussian on `spec`'s box, `squash` "clip" or "tanh" (see above). Greedy
    acting takes the mean: clipped to the box, or squashed."""
    if squash not in SQUASHES:
        raise ValueError(f"squash must be one of {SQUASHES}, got {squash!r}")
    low, high = spec.action_bounds()
    event_ndim = len(spec.action_shape)

    if squash == "clip":

        def sample(key, dist):
            return sample_gaussian(key, dist), {}

        def logp(dist, action, extras):
            return gaussian_log_prob(dist, action, event_ndim)

        def greedy(dist):
            return jnp.clip(dist.mean, _expand(low, dist.mean), _expand(high, dist.mean))

    else:

        def sample(key, dist):
            u = sample_gaussian(key, dist)
            return tanh_squash(u, low, high), {"raw_action": u}

        def logp(dist, action, extras):
            u = extras["raw_action"]
            log_det = tanh_log_det_jacobian(u, low, high, event_ndim)
            return gaussian_log_prob(dist, u, event_ndim) - log_det

        def greedy(dist):
            return tanh_squash(dist.mean, low, high)

    return ActionPolicy(
        sample=sample,
        log_prob=logp,
        entropy=lambda dist: gaussian_entropy(dist, event_ndim),
        greedy=greedy,
    )


def action_policy(spec: Any, squash: str = "clip") -> ActionPolicy:
    """The policy maths for `spec`'s action space (`squash` applies to continuous boxes)."""
    return categorical_policy() if spec.is_discrete else gaussian_policy(spec, squash)
