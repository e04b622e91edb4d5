"""Flax networks: torsos (MLP, Nature DQN CNN, IMPALA ResNet) and heads.

Observations are preprocessed inside the network (uint8 frames to [0, 1] floats), so
actors can ship raw uint8 frames to devices: a quarter of the bytes of float32.
Frames arrive channels-first from envpool (`[C, H, W]`, stacked frames as channels) and
are transposed to NHWC here.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.configs import TORSOS
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec

_NATURE_CNN_MIN_SIZE = 36  # the smallest frame its three VALID convolutions accept


def _orthogonal(scale: float) -> nn.initializers.Initializer:
    return nn.initializers.orthogonal(scale)


def preprocess(observation: jax.Array) -> jax.Array:
    """uint8 frames -> float32 in [0, 1]; anything else -> float32 unchanged."""
    if observation.dtype == jnp.uint8:
        return observation.astype(jnp.float32) / 255.0
    return observation.astype(jnp.float32)


class MLP(nn.Module):
    """Dense layers over flat features `[..., D]`, orthogonal init (as PureJaxRL)."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = getattr(nn, self.activation)
        for size in self.hidden_sizes:
            x = act(nn.Dense(size, kernel_init=_orthogonal(np.sqrt(2)))(x))
        return x


class Head(nn.Module):
    """A dense output layer `[..., D] -> [..., features]` whose kernel is stored `[features, D]`.

    Heads have few outputs (actions, one value). With the usual `[D, features]` kernel the
    weight gradient is a contraction over the whole batch into a `[D, few]` result, which
    XLA:CPU runs ~4x slower than the same contraction into `[few, D]` (measured at
    [17 x 1024] x 256 -> 3); on accelerators the layout makes no difference.
    """

    features: int
    kernel_init: nn.initializers.Initializer = _orthogonal(1.0)

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel = self.param("kernel", self.kernel_init, (self.features, x.shape[-1]))
        bias = self.param("bias", nn.initializers.zeros_init(), (self.features,))
        y = jnp.einsum("...d,fd->...f", x, kernel)
        return y + bias.reshape((1,) * (y.ndim - 1) + bias.shape)


class NatureCNN(nn.Module):
    """The DQN torso (Mnih et al., 2015): 3 convolutions and a 512-unit layer."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        init = _orthogonal(np.sqrt(2))
        x = nn.relu(nn.Conv(32, (8, 8), (4, 4), padding="VALID", kernel_init=init)(x))
        x = nn.relu(nn.Conv(64, (4, 4), (2, 2), padding="VALID", kernel_init=init)(x))
        x = nn.relu(nn.Conv(64, (3, 3), (1, 1), padding="VALID", kernel_init=init)(x))
        x = x.reshape(x.shape[:-3] + (-1,))
        return nn.relu(nn.Dense(512, kernel_init=init)(x))


class _ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = nn.Conv(self.channels, (3, 3))(nn.relu(x))
        y = nn.Conv(self.channels, (3, 3))(nn.relu(y))
        return x + y


class ImpalaResNet(nn.Module):
    """The deep IMPALA torso (Espeholt et al., 2018): 3 stages of conv, pool, 2 residual blocks."""

    channels: Sequence[int] = (16, 32, 32)
    hidden_size: int = 256

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for c in self.channels:
            x = nn.Conv(c, (3, 3))(x)
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
            x = _ResidualBlock(c)(x)
            x = _ResidualBlock(c)(x)
        x = nn.relu(x).reshape(x.shape[:-3] + (-1,))
        return nn.relu(nn.Dense(self.hidden_size)(x))


class Torso(nn.Module):
    """Preprocesses the observation and applies the chosen torso to `[B, *obs_shape]`."""

    kind: str  # one of TORSOS except "auto"
    observation_ndim: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"

    @nn.compact
    def __call__(self, observation: jax.Array) -> jax.Array:
        x = preprocess(observation)
        batch_shape = x.shape[: x.ndim - self.observation_ndim]
        if self.kind == "mlp":
            x = x.reshape(batch_shape + (-1,))
            return MLP(self.hidden_sizes, self.activation)(x)
        if self.observation_ndim == 3:  # envpool frames [C, H, W] -> [H, W, C]
            x = jnp.moveaxis(x, -3, -1)
        elif self.observation_ndim == 2:  # single-channel boards [H, W]
            x = x[..., None]
        x = x.reshape((-1,) + x.shape[-3:])
        torso = NatureCNN() if self.kind == "nature_cnn" else ImpalaResNet()
        y = torso(x)
        return y.reshape(batch_shape + y.shape[-1:])


def resolve_torso(kind: str, spec: EnvSpec, owner: str = "config") -> str:
    """The torso for `spec`'s observations; `auto` picks the Nature CNN for frames (uint8
    with 3 dims) and an MLP otherwise. A convolutional torso on observations it cannot
    read fails naming `owner.torso` (before anything compiles)."""
    if kind not in TORSOS:
        raise ConfigError(f"{owner}.torso must be one of {TORSOS}, got {kind!r}")
    shape = tuple(spec.observation_shape)
    if kind == "auto":
        is_frames = spec.observation_dtype == "uint8" and len(shape) == 3
        return "nature_cnn" if is_frames else "mlp"
    if kind != "mlp":
        if len(shape) not in (2, 3):
            raise ConfigError(
                f"{owner}.torso={kind!r} needs image observations ([C, H, W] or [H, W]); "
                f"{spec.name} observes shape {shape}: use 'mlp' or 'auto'"
            )
        if kind == "nature_cnn" and min(shape[-2:]) < _NATURE_CNN_MIN_SIZE:
            raise ConfigError(
                f"{owner}.torso='nature_cnn' needs frames of at least {_NATURE_CNN_MIN_SIZE}x"
                f"{_NATURE_CNN_MIN_SIZE} (its 8/4, 4/2, 3/1 convolutions); {spec.name} "
                f"observes {shape}: use 'impala_resnet' or 'mlp'"
            )
    return kind


class ActorCritic(nn.Module):
    """Policy logits and a state value; `separate_critic` gives the critic its own torso."""

    num_actions: int
    torso: str
    observation_ndim: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    separate_critic: bool = False

    def setup(self):
        make = lambda: Torso(self.torso, self.observation_ndim, self.hidden_sizes, self.activation)
        self.actor_torso = make()
        self.critic_torso = make() if self.separate_critic else None
        self.policy_head = Head(self.num_actions, kernel_init=_orthogonal(0.01))
        self.value_head = Head(1, kernel_init=_orthogonal(1.0))

    def __call__(self, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = self.actor_torso(observation)
        hv = self.critic_torso(observation) if self.separate_critic else h
        return self.policy_head(h), self.value_head(hv)[..., 0]

    def value(self, observation: jax.Array) -> jax.Array:
        torso = self.critic_torso if self.separate_critic else self.actor_torso
        return self.value_head(torso(observation))[..., 0]


class QNetwork(nn.Module):
    """Action values `[B, A]`."""

    num_actions: int
    torso: str
    observation_ndim: int
    hidden_sizes: Sequence[int] = (256,)
    activation: str = "relu"

    @nn.compact
    def __call__(self, observation: jax.Array) -> jax.Array:
        h = Torso(self.torso, self.observation_ndim, self.hidden_sizes, self.activation)(
            observation
        )
        return Head(self.num_actions, kernel_init=_orthogonal(1.0))(h)
