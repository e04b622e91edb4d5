"""masked_mean, Trajectory, the optimizer and the shared one-step update."""

import jax
import jax.numpy as jnp
import numpy as np
import optax

from podracer.agents import Trajectory
from podracer.agents import make_optimizer
from podracer.agents import masked_mean
from podracer.agents import sgd_update


def test_masked_mean_ignores_masked_entries_and_is_zero_when_all_are():
    x = jnp.array([[1.0, 100.0], [3.0, 5.0]])
    mask = jnp.array([[True, False], [True, True]])
    np.testing.assert_allclose(masked_mean(x, mask), 3.0)
    np.testing.assert_allclose(masked_mean(x, jnp.zeros_like(mask)), 0.0)
    g = jax.grad(lambda x: masked_mean(x, mask))(x)
    np.testing.assert_allclose(g, [[1 / 3, 0.0], [1 / 3, 1 / 3]], rtol=1e-6)


def test_trajectory_counts_transitions(make_timestep):
    ts = make_timestep(np.zeros((5, 3)))
    assert Trajectory(ts, jnp.zeros((5, 3), jnp.int32), {}).num_transitions == 12


def test_sgd_update_applies_reduced_gradients_once():
    """Loss 0.5 (w - 3)^2 at w = 1: gradient -2; a reduce that doubles it gives -4."""

    def loss(params, trajectory, key):
        return 0.5 * jnp.square(params["w"] - 3.0), {"losses/value": params["w"]}

    optimizer = optax.sgd(0.1)
    update = jax.jit(sgd_update(loss, optimizer), static_argnames="reduce_grads")
    params = {"w": jnp.array(1.0)}
    opt_state = optimizer.init(params)
    p, _, metrics = update(params, opt_state, None, None)
    np.testing.assert_allclose(p["w"], 1.2, rtol=1e-6)
    np.testing.assert_allclose(metrics["losses/total"], 2.0)
    np.testing.assert_allclose(metrics["losses/grad_norm"], 2.0)
    double = lambda tree: jax.tree.map(lambda x: 2 * x, tree)
    p, _, metrics = update(params, opt_state, None, None, reduce_grads=double)
    np.testing.assert_allclose(p["w"], 1.4, rtol=1e-6)
    np.testing.assert_allclose(metrics["losses/value"], 2.0)  # metrics are reduced too


def test_make_optimizer_clips_by_global_norm_before_adam():
    params = {"w": jnp.zeros(2)}
    grads = {"w": jnp.array([30.0, 40.0])}  # norm 50
    clipped = make_optimizer(1e-3, 5.0)
    reference = optax.chain(optax.clip_by_global_norm(5.0), optax.adam(1e-3))
    a, _ = clipped.update(grads, clipped.init(params), params)
    b, _ = reference.update(grads, reference.init(params), params)
    np.testing.assert_allclose(a["w"], b["w"])
    assert len(make_optimizer(1e-3, None).init(params)) == 1  # adam alone
