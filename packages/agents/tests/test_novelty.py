"""Random network distillation: the predictor's error by hand, the bonus's scale, and the
statistics it keeps."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from podracer.agents import novelty
from podracer.agents.normalization import update_stats


def mlp_by_hand(variables, x):
    """NoveltyNet in numpy: ReLU dense layers, then a linear embedding."""
    layers = jax.tree.map(np.asarray, variables["params"])
    hidden = layers["MLP_0"]
    for i in range(len(hidden)):
        dense = hidden[f"Dense_{i}"]
        x = np.maximum(x @ dense["kernel"] + dense["bias"], 0.0)
    out = layers["Dense_0"]
    return x @ out["kernel"] + out["bias"]


def test_prediction_error_by_hand():
    """Whitened by the running statistics, clipped to +-5, then the mean squared
    difference of the two networks' embeddings; frames `[H, W]` are flattened."""
    rng = np.random.default_rng(0)
    params = novelty.init_novelty(jax.random.key(0), (2, 3))
    mean, var = rng.normal(size=6), rng.uniform(0.01, 2.0, size=6)
    f32 = jnp.float32
    params[novelty.OBS_KEY] = {"mean": f32(mean), "var": f32(var), "count": f32(9)}
    obs = rng.normal(scale=3.0, size=(4, 5, 2, 3)).astype(np.float32)
    got = novelty.prediction_errors(params, jnp.asarray(obs), observation_ndim=2)
    x = np.clip((obs.reshape(4, 5, 6) - mean) / np.sqrt(var + 1e-8), -5.0, 5.0)
    assert np.abs(x).max() == 5.0  # the clip is exercised
    predicted = mlp_by_hand(params[novelty.PREDICTOR_KEY], x)
    diff = predicted - mlp_by_hand(params[novelty.TARGET_KEY], x)
    np.testing.assert_allclose(got, np.mean(diff**2, -1), rtol=1e-4)
    # The bonus: over the errors' running standard deviation, no gradient.
    params[novelty.ERROR_KEY] = {"mean": f32(3.0), "var": f32(4.0), "count": f32(9)}
    np.testing.assert_allclose(novelty.novelty_bonus(params, got), got / 2.0, rtol=1e-5)
    # The gradient of the error reaches the predictor, not the fixed network.
    grads = jax.grad(lambda p: jnp.sum(novelty.prediction_errors(p, jnp.asarray(obs), 2)))(params)
    assert all(np.all(g == 0) for g in jax.tree.leaves(grads[novelty.TARGET_KEY]))
    assert any(np.any(g != 0) for g in jax.tree.leaves(grads[novelty.PREDICTOR_KEY]))


def test_observe_merges_observations_then_their_errors():
    """Masked observations into the observation statistics; then the errors of those
    observations, under the merged statistics, into the error statistics."""
    rng = np.random.default_rng(1)
    params = novelty.init_novelty(jax.random.key(1), (3,))
    obs = jnp.asarray(rng.normal(loc=4.0, size=(6, 2, 3)), jnp.float32)
    mask = jnp.asarray(rng.uniform(size=(6, 2)) < 0.7)
    got = novelty.observe(params, obs, 1, mask)
    obs_stats = update_stats(params[novelty.OBS_KEY], obs, mask=mask)
    np.testing.assert_allclose(got[novelty.OBS_KEY]["mean"], obs_stats["mean"], rtol=1e-6)
    np.testing.assert_allclose(got[novelty.OBS_KEY]["var"], obs_stats["var"], rtol=1e-6)
    errors = novelty.prediction_errors({**params, novelty.OBS_KEY: obs_stats}, obs, 1)
    error_stats = update_stats(params[novelty.ERROR_KEY], errors, mask=mask)
    chex.assert_trees_all_close(got[novelty.ERROR_KEY], error_stats, rtol=1e-6)
    # Which is, from the initial statistics (count 1e-4), the kept errors' moments.
    kept = np.asarray(errors)[np.asarray(mask)]
    np.testing.assert_allclose(error_stats["mean"], kept.mean(), rtol=1e-3)
    np.testing.assert_allclose(error_stats["var"], kept.var(), rtol=1e-2)
    assert got[novelty.TARGET_KEY] is params[novelty.TARGET_KEY]


def test_target_and_predictor_are_independent_draws():
    params = novelty.init_novelty(jax.random.key(2), (3,))
    x = jnp.ones((1, 3))
    a = novelty.NoveltyNet().apply(params[novelty.TARGET_KEY], x)
    b = novelty.NoveltyNet().apply(params[novelty.PREDICTOR_KEY], x)
    assert float(jnp.mean(jnp.square(a - b))) > 1e-3


def test_faded_weight_falls_linearly_over_the_fraction_of_the_run():
    params = novelty.init_novelty(jax.random.key(3), (3,))
    assert float(params[novelty.UPDATES_KEY]["count"]) == 0.0
    seen = jax.jit(novelty.observe, static_argnums=2)
    for _ in range(3):
        params = seen(params, jnp.ones((2, 2, 3)), 1)
    assert float(params[novelty.UPDATES_KEY]["count"]) == 3.0
    # 3 of a fade over 0.5 x 20 = 10 updates: 70% of the weight is left.
    np.testing.assert_allclose(novelty.faded_weight(params, 2.0, 0.5, 20), 1.4, rtol=1e-6)
    np.testing.assert_allclose(novelty.faded_weight(params, 2.0, 0.1, 20), 0.0)  # done
    np.testing.assert_allclose(novelty.faded_weight(params, 2.0, 0.0, 20), 2.0)  # no fade
    np.testing.assert_allclose(novelty.faded_weight(params, 2.0, 0.5, None), 2.0)  # unknown run
    # Swept members (arrays) fade each by their own fraction.
    got = novelty.faded_weight(params, jnp.array([2.0, 2.0]), jnp.array([0.0, 0.5]), 20)
    np.testing.assert_allclose(got, [2.0, 1.4], rtol=1e-6)


def test_faded_weight_is_optax_linear_schedule_but_takes_a_traced_fade():
    """Written out, not optax's: a sweep traces `fade`, so the horizon is traced, and
    optax's schedules branch in Python on their `transition_steps`. Where the fade is a
    number the two agree."""
    params = novelty.init_novelty(jax.random.key(3), (3,))
    for fade, total in [(0.5, 20), (0.1, 20), (0.25, 7), (1e-3, 10)]:
        horizon = max(fade * total, 1.0)
        schedule = optax.linear_schedule(2.0, 0.0, horizon)
        for count in [0.0, 1.0, horizon / 2, horizon - 1, horizon, horizon + 1, 3 * total]:
            counted = {**params, novelty.UPDATES_KEY: {"count": jnp.float32(count)}}
            np.testing.assert_allclose(
                novelty.faded_weight(counted, 2.0, fade, total), schedule(jnp.float32(count)),
                rtol=1e-6, atol=1e-7,
            )  # fmt: skip
    faded = jax.jit(lambda fade: novelty.faded_weight(params, 2.0, fade, 20))
    np.testing.assert_allclose(faded(jnp.float32(0.5)), 2.0)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda fade: optax.linear_schedule(2.0, 0.0, fade * 20)(0))(jnp.float32(0.5))


def test_a_window_weighs_the_latest_errors():
    """With a window the error statistics' count is capped there before a batch merges:
    a batch of n errors weighs n / (window + n) however many came before; 0 keeps all."""
    rng = np.random.default_rng(4)
    params = novelty.init_novelty(jax.random.key(4), (3,))
    f32 = jnp.float32
    params[novelty.ERROR_KEY] = {"mean": f32(1.0), "var": f32(4.0), "count": f32(1e6)}
    obs = jnp.asarray(rng.normal(size=(5, 2, 3)), jnp.float32)  # 10 errors
    seen = novelty.observe(params, obs, 1)  # the observation statistics as `window` leaves them
    errors = novelty.prediction_errors(seen, obs, 1)
    capped = {**params[novelty.ERROR_KEY], "count": f32(100.0)}
    got = novelty.observe(params, obs, 1, window=100)
    chex.assert_trees_all_close(got[novelty.ERROR_KEY], update_stats(capped, errors), rtol=1e-6)
    batch_mean = float(jnp.mean(errors))
    np.testing.assert_allclose(  # the batch's share of the mean: 10 / 110
        got[novelty.ERROR_KEY]["mean"], 1.0 + (batch_mean - 1.0) * 10 / 110, rtol=1e-5
    )
    assert float(got[novelty.ERROR_KEY]["count"]) == 110.0
    # 0: every error so far (a million before these ten barely move the mean).
    chex.assert_trees_all_close(
        seen[novelty.ERROR_KEY], update_stats(params[novelty.ERROR_KEY], errors), rtol=1e-6
    )
