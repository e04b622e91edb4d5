"""Categorical policy helpers against numpy, and epsilon-greedy frequencies; diagonal
Gaussians (log-probabilities, entropies, tanh squashing) against closed forms and scipy."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from podracer.agents.policy import SQUASHES
from podracer.agents.policy import Gaussian
from podracer.agents.policy import action_policy
from podracer.agents.policy import categorical_entropy
from podracer.agents.policy import epsilon_greedy
from podracer.agents.policy import gaussian_entropy
from podracer.agents.policy import gaussian_log_prob
from podracer.agents.policy import gaussian_policy
from podracer.agents.policy import log_prob
from podracer.agents.policy import sample_categorical
from podracer.agents.policy import sample_gaussian
from podracer.agents.policy import select
from podracer.agents.policy import tanh_log_det_jacobian
from podracer.agents.policy import tanh_squash
from podracer.envs import EnvSpec


def test_log_prob_and_entropy_match_numpy():
    logits = jnp.array([[0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, -1.0]])
    p = np.exp([1.0, 2.0, 3.0, -1.0]) / np.exp([1.0, 2.0, 3.0, -1.0]).sum()
    np.testing.assert_allclose(
        log_prob(logits, jnp.array([3, 2])), [np.log(0.25), np.log(p[2])], rtol=1e-6
    )
    np.testing.assert_allclose(
        categorical_entropy(logits), [np.log(4), -np.sum(p * np.log(p))], rtol=1e-6
    )


def test_samples_follow_the_logits():
    logits = jnp.log(jnp.array([0.1, 0.6, 0.3]))
    actions = jax.jit(lambda k: sample_categorical(k, jnp.broadcast_to(logits, (4000, 3))))(
        jax.random.key(0)
    )
    assert actions.dtype == jnp.int32
    np.testing.assert_allclose(
        np.bincount(np.asarray(actions), minlength=3) / 4000, [0.1, 0.6, 0.3], atol=0.03
    )


def test_epsilon_greedy_frequencies():
    q = jnp.broadcast_to(jnp.array([0.0, 5.0, 1.0]), (4000, 3))
    sample = jax.jit(epsilon_greedy)
    np.testing.assert_array_equal(sample(jax.random.key(0), q, 0.0), 1)
    for eps in (0.3, 1.0):
        actions = np.asarray(sample(jax.random.key(1), q, eps))
        expected = np.full(3, eps / 3) + np.array([0.0, 1.0 - eps, 0.0])
        np.testing.assert_allclose(np.bincount(actions, minlength=3) / 4000, expected, atol=0.03)


def test_select_picks_the_action_and_routes_its_gradient():
    values = jnp.arange(24.0).reshape(2, 3, 4)
    action = jnp.array([[0, 3, 1], [2, 2, 0]])
    np.testing.assert_array_equal(
        select(values, action),
        np.take_along_axis(np.asarray(values), np.asarray(action)[..., None], -1)[..., 0],
    )
    grad = jax.grad(lambda v: jnp.sum(select(v, action) * 2.0))(values)
    np.testing.assert_array_equal(grad, 2.0 * jax.nn.one_hot(action, 4))


# --- Diagonal Gaussians over a box ------------------------------------------------------

BOX = EnvSpec("box", (3,), "float32", None, action_shape=(2,), action_low=(-2.0, 0.0),
              action_high=(2.0, 1.0))  # fmt: skip


def test_gaussian_log_prob_and_entropy_match_closed_forms():
    # log N(0.5; 0, 1) + log N(-1; 1, 2^2) = (-0.125 - 0.918939) + (-0.5 - log 2 - 0.918939)
    dist = Gaussian(jnp.array([[0.0, 1.0]]), jnp.log(jnp.array([[1.0, 2.0]])))
    x = jnp.array([[0.5, -1.0]])
    np.testing.assert_allclose(gaussian_log_prob(dist, x), [-3.156025], rtol=1e-6)
    # sum_i log sigma_i + (1 + log 2 pi) / 2 = 1.418939 + (1.418939 + log 2)
    np.testing.assert_allclose(gaussian_entropy(dist), [3.531024], rtol=1e-6)
    # The same against scipy at random points, summed over a [2, 3] event.
    rng = np.random.default_rng(0)
    mean, log_std, x = (rng.normal(size=(4, 2, 3)) for _ in range(3))
    dist = Gaussian(jnp.asarray(mean, jnp.float32), jnp.asarray(log_std, jnp.float32))
    expected = stats.norm.logpdf(x, mean, np.exp(log_std)).sum(axis=(1, 2))
    np.testing.assert_allclose(
        gaussian_log_prob(dist, jnp.asarray(x, jnp.float32), event_ndim=2), expected, rtol=1e-5
    )
    entropy = stats.norm.entropy(mean, np.exp(log_std)).sum(axis=(1, 2))
    np.testing.assert_allclose(gaussian_entropy(dist, event_ndim=2), entropy, rtol=1e-5)


def test_gaussian_samples_have_the_mean_and_std():
    dist = Gaussian(jnp.broadcast_to(jnp.array([1.0, -3.0]), (20000, 2)),
                    jnp.broadcast_to(jnp.log(jnp.array([0.5, 2.0])), (20000, 2)))  # fmt: skip
    x = np.asarray(jax.jit(sample_gaussian)(jax.random.key(0), dist))
    np.testing.assert_allclose(x.mean(0), [1.0, -3.0], atol=0.04)
    np.testing.assert_allclose(x.std(0), [0.5, 2.0], rtol=0.03)


def test_tanh_squash_density_is_the_change_of_variables():
    low, high = np.array([-2.0], np.float32), np.array([2.0], np.float32)
    u = jnp.array([[0.5]])
    # a = 2 tanh(0.5) = 0.924234; log|da/du| = log 2 + log(1 - tanh(0.5)^2) = 0.452918
    np.testing.assert_allclose(tanh_squash(u, low, high), [[0.924234]], rtol=1e-6)
    np.testing.assert_allclose(tanh_log_det_jacobian(u, low, high), [0.452918], rtol=1e-5)
    # The squashed density integrates to 1 over the box and is scipy's density of u over
    # |da/du| at each a (u = atanh(a / 2)).
    policy = gaussian_policy(EnvSpec("line", (1,), "float32", None, action_shape=(1,),
                                     action_low=(-2.0,), action_high=(2.0,)), "tanh")  # fmt: skip
    dist = Gaussian(jnp.full((1, 1), 0.3), jnp.full((1, 1), np.log(0.8)))
    a = np.linspace(-2.0, 2.0, 200_001)[1:-1]
    raw = np.arctanh(a / 2.0)
    logp = jax.vmap(lambda r: policy.log_prob(dist, None, {"raw_action": r[None, None]}))(
        jnp.asarray(raw, jnp.float32)
    )[:, 0]
    density = np.exp(np.asarray(logp, np.float64))
    np.testing.assert_allclose(np.trapezoid(density, a), 1.0, atol=2e-3)
    expected = stats.norm.pdf(raw, 0.3, 0.8) / (1.0 - np.tanh(raw) ** 2) / 2.0
    np.testing.assert_allclose(density[::1000], expected[::1000], rtol=1e-4)
    # Finite where tanh(u) rounds to 1 in float32.
    far = tanh_log_det_jacobian(jnp.array([[20.0, -20.0]]), np.zeros(2), np.full(2, 2.0))
    np.testing.assert_allclose(far, [4 * (np.log(2.0) - 20.0)], rtol=1e-6)


@pytest.mark.parametrize("squash", SQUASHES)
def test_gaussian_policy_scores_the_action_the_env_receives(squash):
    policy = gaussian_policy(BOX, squash)
    dist = Gaussian(jnp.array([[3.0, 0.5], [-0.2, -4.0]]), jnp.full((2, 2), np.log(1.5)))
    action, extras = jax.jit(policy.sample)(jax.random.key(3), dist)
    assert action.dtype == jnp.float32 and action.shape == (2, 2)
    logp = policy.log_prob(dist, action, extras)
    if squash == "clip":  # the raw sample (the env clips it): the plain Gaussian density
        assert extras == {}
        expected = stats.norm.logpdf(np.asarray(action), np.asarray(dist.mean), 1.5).sum(-1)
        np.testing.assert_allclose(policy.greedy(dist), [[2.0, 0.5], [-0.2, 0.0]])
    else:  # inside the box; density of the raw sample over the Jacobian
        raw = np.asarray(extras["raw_action"], np.float64)
        low, high = BOX.action_bounds()
        np.testing.assert_allclose(action, low + (high - low) * (np.tanh(raw) + 1) / 2, rtol=1e-6)
        assert np.all(np.asarray(action) >= low) and np.all(np.asarray(action) <= high)
        jacobian = (high - low) / 2 * (1 - np.tanh(raw) ** 2)
        expected = (stats.norm.logpdf(raw, np.asarray(dist.mean), 1.5) - np.log(jacobian)).sum(-1)
        np.testing.assert_allclose(policy.greedy(dist), tanh_squash(dist.mean, low, high))
    np.testing.assert_allclose(logp, expected, rtol=1e-5, atol=1e-6)
    # Entropy: the Gaussian's in both modes.
    np.testing.assert_allclose(policy.entropy(dist), 2 * stats.norm.entropy(0, 1.5), rtol=1e-6)


def test_action_policy_picks_the_space_and_keeps_categorical_maths():
    discrete = action_policy(EnvSpec("d", (3,), "float32", 4))
    logits = jnp.array([[1.0, 2.0, 3.0, -1.0]])
    action, extras = discrete.sample(jax.random.key(0), logits)
    assert action.dtype == jnp.int32 and extras == {}
    np.testing.assert_array_equal(discrete.log_prob(logits, action, {}), log_prob(logits, action))
    np.testing.assert_array_equal(discrete.entropy(logits), categorical_entropy(logits))
    np.testing.assert_array_equal(discrete.greedy(logits), [2])
    with pytest.raises(ValueError, match="squash must be one of"):
        action_policy(BOX, "sigmoid")


def test_distrax_agrees_but_scores_squashed_actions_at_the_bounds_worse():
    """Why the Gaussian maths stay written out rather than distrax's (issue #54): distrax
    (installed with rlax) warns on import under this jax (tensorflow_probability's JAX
    substrate reads the deprecated `jax.core.pytype_aval_mappings`). Its values agree with
    ours: the diagonal Gaussian's log-probability and entropy, and the tanh-squashed
    density of the raw sample u (`Block(Tanh)`'s Jacobian is the same softplus form). But
    its `Transformed` distribution scores the squashed action a, inverting tanh: a loses
    its precision as |u| grows (the log-probability off by ~3e-3 at |u| = 7) and is not
    finite once tanh(u) rounds to +-1 (|u| >= ~8 in float32), where ours, taking u from
    the acting extras, stays exact."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        distrax = pytest.importorskip("distrax")
    rng = np.random.default_rng(5)
    mean = jnp.asarray(rng.normal(size=(64, 2)), jnp.float32)
    log_std = jnp.asarray(0.5 * rng.normal(size=(64, 2)), jnp.float32)
    dist = Gaussian(mean, log_std)
    u = sample_gaussian(jax.random.key(6), dist)
    u = u.at[:4].set(jnp.array([[9.0, -9.0], [12.0, 0.5], [-30.0, 20.0], [7.0, -7.0]]))
    base = distrax.MultivariateNormalDiag(mean, jnp.exp(log_std))
    np.testing.assert_allclose(base.log_prob(u), gaussian_log_prob(dist, u), rtol=1e-5)
    np.testing.assert_allclose(base.entropy(), gaussian_entropy(dist), rtol=1e-6)

    low, high = BOX.action_bounds()
    half = jnp.asarray((high - low) / 2)
    squash = distrax.Block(
        distrax.Chain([distrax.ScalarAffine(shift=jnp.asarray(low) + half, scale=half),
                       distrax.Tanh()]), 1
    )  # fmt: skip
    policy = gaussian_policy(BOX, "tanh")
    ours = policy.log_prob(dist, tanh_squash(u, low, high), {"raw_action": u})
    assert np.all(np.isfinite(ours))
    np.testing.assert_allclose(
        ours, base.log_prob(u) - squash.forward_log_det_jacobian(u), rtol=1e-5, atol=1e-4
    )
    theirs = distrax.Transformed(base, squash).log_prob(tanh_squash(u, low, high))
    inside = np.all(np.abs(np.asarray(u)) < 4.0, axis=-1)
    np.testing.assert_allclose(theirs[inside], ours[inside], rtol=1e-4, atol=1e-3)
    assert not np.any(np.isfinite(theirs[:3]))  # |u| >= 9: tanh(u) rounds to +-1
    assert abs(float(theirs[3] - ours[3])) > 1e-3  # |u| = 7: a has lost u's precision
