"""Torsos and heads: preprocessing, layouts, shapes, the separate critic and the Gaussian
actor-critic of continuous boxes."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ActorCritic
from podracer.agents import ImpalaResNet
from podracer.agents import NatureCNN
from podracer.agents import PPOConfig
from podracer.agents import QNetwork
from podracer.agents import Torso
from podracer.agents import preprocess
from podracer.agents.networks import LOG_STD_BOUNDS
from podracer.agents.networks import Conv
from podracer.agents.networks import GaussianActorCritic
from podracer.agents.networks import Head
from podracer.agents.networks import make_actor_critic
from podracer.agents.networks import resolve_torso
from podracer.envs import EnvSpec


def test_preprocess_scales_uint8_frames_and_passes_floats():
    frames = jnp.array([0, 51, 255], jnp.uint8)
    np.testing.assert_allclose(preprocess(frames), [0.0, 0.2, 1.0], rtol=1e-6)
    assert preprocess(frames).dtype == jnp.float32
    floats = jnp.array([-3.0, 300.0])
    np.testing.assert_array_equal(preprocess(floats), floats)
    assert preprocess(jnp.array([1, 2], jnp.int32)).dtype == jnp.float32


def test_auto_torso_picks_the_cnn_for_frames_only():
    assert resolve_torso("auto", EnvSpec("a", (4, 84, 84), "uint8", 6)) == "nature_cnn"
    assert resolve_torso("auto", EnvSpec("b", (4, 84, 84), "float32", 6)) == "mlp"
    assert resolve_torso("auto", EnvSpec("c", (10, 5), "float32", 3)) == "mlp"
    assert resolve_torso("impala_resnet", EnvSpec("c", (10, 5), "float32", 3)) == "impala_resnet"
    # The frame size is read where the image keeps it: [C, H, W] or [H, W, C] (Craftax).
    assert resolve_torso("nature_cnn", EnvSpec("d", (130, 110, 3), "float32", 43)) == "nature_cnn"
    with pytest.raises(ValueError, match="at least 36x36"):
        resolve_torso("nature_cnn", EnvSpec("e", (10, 10, 4), "float32", 3))
    with pytest.raises(ValueError, match="torso"):
        resolve_torso("bogus", EnvSpec("c", (10, 5), "float32", 3))


def test_mlp_torso_flattens_observations_and_keeps_batch_dims():
    torso = Torso("mlp", 2, hidden_sizes=(7,))
    x = jnp.asarray(
        np.random.default_rng(0).normal(size=(3, 2, 10, 5)), jnp.float32
    )  # [T, B, 10, 5]
    params = jax.jit(torso.init)(jax.random.key(0), x[0])
    y = jax.jit(torso.apply)(params, x)
    assert y.shape == (3, 2, 7)
    dense = jax.tree.map(np.asarray, params["params"]["MLP_0"]["Dense_0"])
    expected = np.tanh(np.asarray(x).reshape(3, 2, 50) @ dense["kernel"] + dense["bias"])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_frames_are_transposed_to_channels_last_and_scaled(cheap_init):
    """Torso on uint8 `[T, B, C, H, W]` == NatureCNN on `[T*B, H, W, C] / 255`.

    36x36 frames keep the compile small: 36 -> 8 -> 3 -> 1 spatially.
    """
    x = jnp.asarray(np.random.default_rng(1).integers(0, 256, size=(2, 3, 4, 36, 36)), jnp.uint8)
    torso = Torso("nature_cnn", 3)
    params = cheap_init(lambda k: torso.init(k, x[0]), jax.random.key(0))
    nhwc = jnp.moveaxis(x.reshape(6, 4, 36, 36), 1, -1).astype(jnp.float32) / 255.0

    @jax.jit
    def both(params):
        direct = NatureCNN().apply({"params": params["params"]["NatureCNN_0"]}, nhwc)
        return torso.apply(params, x), direct

    y, direct = both(params)
    assert y.shape == (2, 3, 512)
    np.testing.assert_allclose(y.reshape(6, 512), direct, rtol=1e-5, atol=1e-6)
    assert np.abs(np.asarray(direct)).sum() > 0


def test_impala_resnet_shapes_at_small_size():
    net = ImpalaResNet(channels=(4, 8), hidden_size=16)
    x = jnp.zeros((5, 16, 16, 3))
    out, params = jax.eval_shape(lambda: net.init_with_output(jax.random.key(0), x))
    assert out.shape == (5, 16)
    # 16x16 -> 8x8 -> 4x4 after two stride-2 pools with 8 channels: 128 features.
    assert params["params"]["Dense_0"]["kernel"].shape == (128, 16)
    assert params["params"]["Conv_0"]["kernel"].shape == (3, 3, 3, 4)


def test_nature_cnn_shapes_on_atari_frames():
    net = QNetwork(6, "nature_cnn", 3)
    x = jnp.zeros((2, 4, 84, 84), jnp.uint8)
    q, params = jax.eval_shape(lambda: net.init_with_output(jax.random.key(0), x))
    assert q.shape == (2, 6)
    torso = params["params"]["Torso_0"]["NatureCNN_0"]
    assert torso["Dense_0"]["kernel"].shape == (7 * 7 * 64, 512)  # 84 -> 20 -> 9 -> 7


@pytest.mark.parametrize(
    "kernel, strides, padding, shape",
    [((3, 3), (1, 1), "VALID", (5, 10, 10, 4)),  # MinAtar's
     ((8, 8), (4, 4), "VALID", (2, 36, 36, 4)),  # the Nature CNN's first
     ((3, 3), (1, 1), "SAME", (3, 9, 9, 8)),  # the IMPALA ResNet's
     ((3, 3), (2, 2), ((1, 0), (0, 2)), (2, 7, 8, 3))],
)  # fmt: skip
def test_conv_matches_flax_conv_in_values_and_gradients(kernel, strides, padding, shape):
    x = jax.random.normal(jax.random.key(1), shape)
    reference = nn.Conv(6, kernel, strides, padding=padding)
    conv = Conv(6, kernel, strides, padding=padding)
    params = reference.init(jax.random.key(0), x)
    assert jax.tree.structure(params) == jax.tree.structure(conv.init(jax.random.key(0), x))

    def loss(net):
        return jax.jit(jax.value_and_grad(lambda p: jnp.sum(jnp.sin(net.apply(p, x)))))

    (want, want_grads), (got, got_grads) = loss(reference)(params), loss(conv)(params)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    for g, w in zip(jax.tree.leaves(got_grads), jax.tree.leaves(want_grads), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
    # On CPU the convolution is gone from the compiled program: matmuls only.
    hlo = loss(conv).lower(params).compile().as_text()
    assert " convolution(" not in hlo and " dot(" in hlo


@pytest.mark.parametrize("separate_critic", [False, True])
def test_actor_critic_value_method_matches_call(separate_critic):
    net = ActorCritic(3, "mlp", 1, (8,), "tanh", separate_critic)
    x = jnp.asarray(np.random.default_rng(2).normal(size=(4, 5)), jnp.float32)
    params = jax.jit(net.init)(jax.random.key(0), x)
    logits, value = jax.jit(net.apply)(params, x)
    assert logits.shape == (4, 3) and value.shape == (4,)
    value_only = jax.jit(lambda p, x: net.apply(p, x, method=ActorCritic.value))(params, x)
    np.testing.assert_allclose(value_only, value, rtol=1e-6)
    assert ("critic_torso" in params["params"]) == separate_critic


def test_head_is_a_dense_layer_with_its_kernel_stored_features_first():
    x = jax.random.normal(jax.random.key(1), (2, 5, 8))
    head = Head(3)
    params = head.init(jax.random.key(0), x)["params"]
    assert params["kernel"].shape == (3, 8) and params["bias"].shape == (3,)
    params = {"kernel": params["kernel"], "bias": jnp.arange(3.0)}
    y = head.apply({"params": params}, x)
    expected = np.asarray(x) @ np.asarray(params["kernel"]).T + np.arange(3.0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


BOX_SPEC = EnvSpec("box", (5,), "float32", None, action_shape=(2, 3), action_low=(-1.0,) * 6,
                   action_high=(1.0,) * 6)  # fmt: skip


@pytest.mark.parametrize("state_dependent_std", [False, True])
def test_gaussian_actor_critic_shapes_and_initial_log_std(state_dependent_std):
    net = GaussianActorCritic((2, 3), "mlp", 1, (8,), "tanh", True, state_dependent_std, -0.5)
    x = jnp.asarray(np.random.default_rng(2).normal(size=(7, 4, 5)), jnp.float32)  # [T, B, 5]
    params = jax.jit(net.init)(jax.random.key(0), x[0])
    (dist, value), value_only = jax.jit(net.apply)(params, x), net.apply(params, x, method="value")
    assert dist.mean.shape == dist.log_std.shape == (7, 4, 2, 3) and value.shape == (7, 4)
    np.testing.assert_allclose(value_only, value, rtol=1e-6)
    assert np.abs(np.asarray(dist.mean)).max() < 0.1  # the mean head starts near 0
    if state_dependent_std:  # tanh(head + offset): -0.5 where the head outputs 0, bounded
        np.testing.assert_allclose(dist.log_std, -0.5, atol=0.1)
        assert float(jnp.std(dist.log_std)) > 0
        far = net.apply(params, 1e4 * x)[0].log_std
        lo, hi = LOG_STD_BOUNDS
        assert float(far.min()) >= lo and float(far.max()) <= hi
    else:  # one free parameter per action dimension, broadcast over the batch
        assert params["params"]["log_std"].shape == (6,)
        np.testing.assert_array_equal(dist.log_std, -0.5)


def test_make_actor_critic_follows_the_action_space():
    config = PPOConfig(hidden_sizes=(8,), log_std="network", init_log_std=0.5)
    discrete = make_actor_critic(EnvSpec("d", (5,), "float32", 3), config, "PPOConfig")
    assert isinstance(discrete, ActorCritic) and discrete.num_actions == 3
    continuous = make_actor_critic(BOX_SPEC, config, "PPOConfig")
    assert isinstance(continuous, GaussianActorCritic)
    assert continuous.action_shape == (2, 3) and continuous.state_dependent_std
    assert continuous.init_log_std == 0.5 and continuous.hidden_sizes == (8,)
