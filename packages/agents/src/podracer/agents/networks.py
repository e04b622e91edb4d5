"""Flax networks: torsos (MLP, Nature DQN CNN, IMPALA ResNet) and heads (logits, a
diagonal Gaussian over a continuous box, values).

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
from podracer.agents.policy import Gaussian
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


def _normalize(x: jax.Array, layer_norm: bool) -> jax.Array:
    """LayerNorm (PQN's stabiliser in place of a target network) when asked."""
    return nn.LayerNorm()(x) if layer_norm else x


class MLP(nn.Module):
    """Dense layers over flat features `[..., D]`, orthogonal init (as PureJaxRL); each
    optionally followed by LayerNorm before its activation."""

    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        act = getattr(nn, self.activation)
        for size in self.hidden_sizes:
            y = nn.Dense(size, kernel_init=_orthogonal(np.sqrt(2)))(x)
            x = act(_normalize(y, self.layer_norm))
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


class MinAtarCNN(nn.Module):
    """MinAtar's torso (Young & Tian, 2019; PQN's too): a 3x3 convolution of 16 channels
    and a dense layer, each optionally layer-normalised (PQN)."""

    hidden_size: int = 128
    layer_norm: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        init = nn.initializers.he_normal()
        x = nn.Conv(16, (3, 3), (1, 1), padding="VALID", kernel_init=init)(x)
        x = nn.relu(_normalize(x, self.layer_norm)).reshape(x.shape[:-3] + (-1,))
        x = nn.Dense(self.hidden_size, kernel_init=init)(x)
        return nn.relu(_normalize(x, self.layer_norm))


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
    layer_norm: bool = False  # mlp and minatar_cnn

    @nn.compact
    def __call__(self, observation: jax.Array) -> jax.Array:
        x = preprocess(observation)
        batch_shape = x.shape[: x.ndim - self.observation_ndim]
        if self.kind == "mlp":
            x = x.reshape(batch_shape + (-1,))
            return MLP(self.hidden_sizes, self.activation, self.layer_norm)(x)
        if self.observation_ndim == 3 and channels_first(x.shape[-3:]):
            x = jnp.moveaxis(x, -3, -1)  # envpool frames [C, H, W] -> [H, W, C]
        elif self.observation_ndim == 2:  # single-channel boards [H, W]
            x = x[..., None]
        x = x.reshape((-1,) + x.shape[-3:])
        if self.kind == "minatar_cnn":
            torso = MinAtarCNN(self.hidden_sizes[0], self.layer_norm)
        else:
            torso = NatureCNN() if self.kind == "nature_cnn" else ImpalaResNet()
        y = torso(x)
        return y.reshape(batch_shape + y.shape[-1:])


def channels_first(shape: Sequence[int]) -> bool:
    """Whether a `[3 dims]` image is `[C, H, W]` (envpool's stacked frames, C < W) rather
    than `[H, W, C]` (MinAtar's boards, gymnax's images)."""
    return shape[0] < shape[-1]


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
    layer_norm: bool = False

    @nn.compact
    def __call__(self, observation: jax.Array) -> jax.Array:
        torso = Torso(
            self.torso, self.observation_ndim, self.hidden_sizes, self.activation, self.layer_norm
        )
        return Head(self.num_actions, kernel_init=_orthogonal(1.0))(torso(observation))


LOG_STD_BOUNDS = (-5.0, 2.0)  # a network's log-std is squashed into this range (as SAC's)


class GaussianActorCritic(nn.Module):
    """A diagonal Gaussian policy over a box `[..., *action_shape]` and a state value.

    The mean's head starts near 0 (orthogonal, scale 0.01, as CleanRL's continuous PPO).
    The log-std is a free parameter per action dimension (`state_dependent_std=False`,
    CleanRL's and PureJaxRL's) or a second head of the actor, squashed into
    `LOG_STD_BOUNDS`; either way it starts at `init_log_std`.
    """

    action_shape: tuple[int, ...]
    torso: str
    observation_ndim: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    separate_critic: bool = True
    state_dependent_std: bool = False
    init_log_std: float = 0.0

    def setup(self):
        make = lambda: Torso(self.torso, self.observation_ndim, self.hidden_sizes, self.activation)
        size = int(np.prod(self.action_shape))
        self.actor_torso = make()
        self.critic_torso = make() if self.separate_critic else None
        self.mean_head = Head(size, kernel_init=_orthogonal(0.01))
        self.value_head = Head(1, kernel_init=_orthogonal(1.0))
        if self.state_dependent_std:
            self.log_std_head = Head(size, kernel_init=_orthogonal(0.01))
        else:
            init = nn.initializers.constant(self.init_log_std)
            self.log_std = self.param("log_std", init, (size,))

    def _log_std(self, h: jax.Array) -> jax.Array:
        if not self.state_dependent_std:
            return jnp.broadcast_to(self.log_std.reshape((1,) * (h.ndim - 1) + (-1,)),
                                    h.shape[:-1] + self.log_std.shape)  # fmt: skip
        lo, hi = LOG_STD_BOUNDS
        # tanh(x + offset) maps the head's initial output 0 to init_log_std.
        offset = np.arctanh(2.0 * (self.init_log_std - lo) / (hi - lo) - 1.0)
        return lo + 0.5 * (hi - lo) * (jnp.tanh(self.log_std_head(h) + offset) + 1.0)

    def __call__(self, observation: jax.Array):
        """`(Gaussian(mean, log_std) [..., *action_shape] each, value [...])`."""
        h = self.actor_torso(observation)
        hv = self.critic_torso(observation) if self.separate_critic else h
        shape = h.shape[:-1] + tuple(self.action_shape)
        dist = Gaussian(self.mean_head(h).reshape(shape), self._log_std(h).reshape(shape))
        return dist, self.value_head(hv)[..., 0]

    def value(self, observation: jax.Array) -> jax.Array:
        torso = self.critic_torso if self.separate_critic else self.actor_torso
        return self.value_head(torso(observation))[..., 0]


def make_actor_critic(spec: EnvSpec, config, owner: str) -> nn.Module:
    """The actor-critic of a PPO or IMPALA `config` for `spec`'s action space: logits for
    discrete actions (`ActorCritic`), a Gaussian for a box (`GaussianActorCritic`)."""
    torso = resolve_torso(config.torso, spec, owner)
    common = (torso, len(spec.observation_shape), config.hidden_sizes, config.activation,
              config.separate_critic)  # fmt: skip
    if spec.is_discrete:
        return ActorCritic(spec.num_actions, *common)
    return GaussianActorCritic(
        spec.action_shape, *common,
        state_dependent_std=config.log_std == "network", init_log_std=config.init_log_std,
    )  # fmt: skip
