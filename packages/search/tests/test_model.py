"""Tests for the model interface and its glue to mctx."""

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from podracer.search import DynamicsOutput
from podracer.search import MuZeroModel
from podracer.search import PredictionOutput
from podracer.search import make_recurrent_fn
from podracer.search import make_root


def _linear_model() -> MuZeroModel:
    """latent = W obs; reward = latent[a]; next latent = latent + a; logits = latent."""

    def representation(params, observation):
        return observation @ params["w"]

    def dynamics(params, latent, action):
        reward = jnp.take_along_axis(latent, action[:, None], axis=1)[:, 0]
        return DynamicsOutput(
            reward=reward,
            discount=jnp.full_like(reward, -0.9),  # two-player sign passes through
            next_latent=latent + action[:, None].astype(latent.dtype),
        )

    def prediction(params, latent):
        return PredictionOutput(logits=latent, value=jnp.sum(latent, axis=-1))

    return MuZeroModel(representation, dynamics, prediction)


def test_make_root_values():
    model = _linear_model()
    params = {"w": jnp.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])}
    observation = jnp.array([[1.0, 2.0], [3.0, -1.0]])
    root = jax.jit(make_root, static_argnums=0)(model, params, observation)
    assert isinstance(root, mctx.RootFnOutput)
    np.testing.assert_allclose(root.embedding, [[1.0, 2.0, 0.0], [3.0, -1.0, 7.0]])
    np.testing.assert_allclose(root.prior_logits, root.embedding)
    np.testing.assert_allclose(root.value, [3.0, 9.0])


def test_recurrent_fn_values_and_key_ignored():
    model = _linear_model()
    recurrent_fn = jax.jit(make_recurrent_fn(model))
    latent = jnp.array([[1.0, 2.0, 0.0], [3.0, -1.0, 7.0]])
    action = jnp.array([1, 2], jnp.int32)
    output, next_latent = recurrent_fn({}, jax.random.key(0), action, latent)
    assert isinstance(output, mctx.RecurrentFnOutput)
    np.testing.assert_allclose(output.reward, [2.0, 7.0])
    np.testing.assert_allclose(output.discount, [-0.9, -0.9])
    np.testing.assert_allclose(next_latent, [[2.0, 3.0, 1.0], [5.0, 1.0, 9.0]])
    np.testing.assert_allclose(output.prior_logits, next_latent)
    np.testing.assert_allclose(output.value, [6.0, 15.0])
    other, _ = recurrent_fn({}, jax.random.key(1), action, latent)
    jax.tree.map(np.testing.assert_array_equal, output, other)


def test_plain_tuples_and_pytree_latents(tabular):
    """The functions may return plain tuples, and latents may be any pytree."""

    def representation(params, observation):
        return {"state": observation, "depth": jnp.zeros_like(observation)}

    def dynamics(params, latent, action):
        reward, discount, state = tabular.model.dynamics(params, latent["state"], action)
        return reward, discount, {"state": state, "depth": latent["depth"] + 1}

    def prediction(params, latent):
        return tabular.model.prediction(params, latent["state"])

    model = MuZeroModel(representation, dynamics, prediction)
    root = make_root(model, None, jnp.array([0, 1], jnp.int32))
    output, latent = make_recurrent_fn(model)(
        None, jax.random.key(0), jnp.array([1, 2], jnp.int32), root.embedding
    )
    np.testing.assert_array_equal(latent["state"], [1, 2])
    np.testing.assert_array_equal(latent["depth"], [1, 1])
    np.testing.assert_allclose(output.reward, [0.0, 2.5])
    np.testing.assert_allclose(output.discount, [1.0, 1.0])
