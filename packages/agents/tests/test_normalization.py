"""Running statistics as agent state: merges against numpy, device agreement, masks, and
an optimizer that leaves them alone."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from podracer.agents import init_train_state
from podracer.agents.normalization import STATS_KEY
from podracer.agents.normalization import VALUE_KEY
from podracer.agents.normalization import denormalize
from podracer.agents.normalization import frozen_statistics
from podracer.agents.normalization import init_stats
from podracer.agents.normalization import normalize
from podracer.agents.normalization import update_stats


def moments(samples: np.ndarray, prior_count: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance of `samples` [N, ...] together with the initial
    statistics as a pseudo-sample of weight `prior_count` (mean 0, variance 1)."""
    samples = np.asarray(samples, np.float64)
    n = samples.shape[0] + prior_count
    mean = samples.sum(0) / n
    return mean, (prior_count + np.square(samples).sum(0)) / n - np.square(mean)


def test_merged_batches_give_the_moments_of_all_samples():
    stats = init_stats(())
    stats = update_stats(stats, jnp.array([1.0, 2.0, 3.0]))
    stats = update_stats(stats, jnp.array([[4.0], [5.0]]))  # leading dims are samples
    # mean 3 and population variance 2, shifted a little by the initial count of 1e-4
    np.testing.assert_allclose([stats["mean"], stats["var"]], [2.99994, 2.00016], rtol=1e-6)
    np.testing.assert_allclose(moments(np.arange(1.0, 6.0)), [2.99994, 2.00016], rtol=1e-6)
    np.testing.assert_allclose(stats["count"], 5.0001, rtol=1e-6)
    # Vector observations [T, B, D], against numpy over every sample.
    rng = np.random.default_rng(0)
    batches = [rng.normal(loc=[1.0, -2.0, 5.0], scale=[0.1, 3.0, 1.0], size=(4, 8, 3))
               for _ in range(3)]  # fmt: skip
    stats = init_stats((3,))
    for b in batches:
        stats = update_stats(stats, jnp.asarray(b, jnp.float32))
    mean, var = moments(np.concatenate([b.reshape(-1, 3) for b in batches]))
    np.testing.assert_allclose(stats["mean"], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats["var"], var, rtol=1e-5)


def test_masked_samples_are_left_out():
    x = jnp.array([[1.0, 100.0], [3.0, -50.0]])
    mask = jnp.array([[True, False], [True, False]])
    stats = update_stats(init_stats(()), x, mask=mask)
    np.testing.assert_allclose([stats["mean"], stats["var"]], moments([1.0, 3.0]), rtol=1e-6)
    # Nothing unmasked: the statistics do not move.
    same = update_stats(stats, x, mask=jnp.zeros_like(mask))
    chex.assert_trees_all_close(same, stats)


def test_devices_agree_on_the_statistics_of_the_whole_batch():
    """Two devices (vmap with an axis name) averaging with pmean hold the moments of the
    concatenated batch, whatever their own shares look like."""
    rng = np.random.default_rng(1)
    shares = jnp.asarray(rng.normal(size=(2, 16, 3)) + np.array([[[0.0]], [[4.0]]]), jnp.float32)
    reduce = lambda t: jax.lax.pmean(t, "devices")  # noqa: E731
    per_device = jax.vmap(lambda x: update_stats(init_stats((3,)), x, reduce), axis_name="devices")
    stats = per_device(shares)
    chex.assert_trees_all_close(stats["mean"][0], stats["mean"][1])
    # Each device counts its own share (16 samples): the prior weighs 1e-4 against 16.
    mean, var = moments(np.asarray(shares).reshape(32, 3), prior_count=2e-4)
    np.testing.assert_allclose(stats["mean"][0], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(stats["var"][0], var, rtol=1e-5)


def test_normalize_clips_and_denormalize_inverts():
    stats = {"mean": jnp.array([1.0, -1.0]), "var": jnp.array([4.0, 0.25]),
             "count": jnp.float32(10.0)}  # fmt: skip
    x = jnp.array([[3.0, -1.5], [101.0, -1.0]])
    np.testing.assert_allclose(normalize(stats, x), [[1.0, -1.0], [50.0, 0.0]], rtol=1e-6)
    np.testing.assert_allclose(normalize(stats, x, clip=10.0), [[1.0, -1.0], [10.0, 0.0]])
    np.testing.assert_allclose(denormalize(stats, normalize(stats, x)), x, rtol=1e-6)
    # No gradient reaches the statistics.
    grads = jax.grad(lambda s: jnp.sum(normalize(s, x)))(stats)
    chex.assert_trees_all_equal(grads, jax.tree.map(jnp.zeros_like, stats))


def test_the_optimizer_trains_the_weights_and_leaves_the_statistics():
    params = {"params": {"w": jnp.ones(3)}, STATS_KEY: init_stats((3,)), VALUE_KEY: init_stats(())}
    optimizer = frozen_statistics(optax.chain(optax.clip_by_global_norm(1.0), optax.adam(0.1)))
    grads = jax.tree.map(jnp.ones_like, params)  # even a gradient on the statistics
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    new = optax.apply_updates(params, updates)
    chex.assert_trees_all_equal(new[STATS_KEY], params[STATS_KEY])
    chex.assert_trees_all_equal(new[VALUE_KEY], params[VALUE_KEY])
    np.testing.assert_allclose(new["params"]["w"], 0.9, rtol=1e-5)  # adam's first step: lr


def test_init_train_state_of_a_normalising_agent():
    from podracer.agents import PPOConfig
    from podracer.agents import make_ppo
    from podracer.envs import EnvSpec

    spec = EnvSpec("box", (3,), "float32", None, action_shape=(1,), action_low=(-1.0,),
                   action_high=(1.0,))  # fmt: skip
    config = PPOConfig(hidden_sizes=(8,), normalize_observations=True, normalize_values=True)
    train = init_train_state(make_ppo(spec, config), jax.random.PRNGKey(0))
    assert set(train.params) == {"params", STATS_KEY, VALUE_KEY}
    chex.assert_trees_all_equal(train.params[STATS_KEY], init_stats((3,)))
    chex.assert_trees_all_equal(train.params[VALUE_KEY], init_stats(()))
