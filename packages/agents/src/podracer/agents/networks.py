"""Flax networks: torsos (MLP, Nature DQN CNN, IMPALA ResNet), recurrent cores (LSTM,
GRU) and heads (logits, a diagonal Gaussian over a continuous box, values).

Every actor-critic and Q-network has two entry points: `__call__(observation, core)`,
one step from a core state, and `unroll(observation [T, B], first [T, B], core [B])`,
the learner's pass over a trajectory (and acting's, with T = 1). Without a core both are
the feed-forward network and the core state is `()`.

Observations are preprocessed inside the network (uint8 frames to [0, 1] floats), so
actors can ship raw uint8 frames to devices: a quarter of the bytes of float32.
Frames arrive channels-first from envpool (`[C, H, W]`, stacked frames as channels) and
are transposed to NHWC here.

Convolutions lower, on CPU only, to one matmul over the input's patches (`Conv`):
XLA:CPU's convolution kernels, and their gradients above all, are several times slower
than its matmul for the small frames RL uses (PQN's MinAtar torso: 5x for a gradient
step). Accelerators keep XLA's convolution; the parameters are `nn.Conv`'s either way.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.configs import TORSOS
from podracer.agents.policy import Gaussian
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec

_NATURE_CNN_MIN_SIZE = 36  # the smallest frame its three VALID convolutions accept


def _conv_as_matmul(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    precision=None,
):
    """`lax.conv_general_dilated` for `nn.Conv`'s NHWC x HWIO layout as im2col: one
    strided slice per kernel tap, concatenated on channels, then one matmul."""
    kernel = rhs.shape[:-2]
    if (
        lhs.ndim != 4
        or feature_group_count != 1
        or any(d not in (None, 1) for d in (*(lhs_dilation or ()), *(rhs_dilation or ())))
    ):
        return jax.lax.conv_general_dilated(
            lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
            dimension_numbers, feature_group_count, precision=precision)  # fmt: skip
    if isinstance(padding, str):
        padding = jax.lax.padtype_to_pads(lhs.shape[1:3], kernel, window_strides, padding)
    x = jnp.pad(lhs, ((0, 0), *padding, (0, 0)))
    (sh, sw), (kh, kw) = window_strides, kernel
    out_h, out_w = (x.shape[1] - kh) // sh + 1, (x.shape[2] - kw) // sw + 1
    patches = jnp.concatenate([
        x[:, i : i + sh * (out_h - 1) + 1 : sh, j : j + sw * (out_w - 1) + 1 : sw]
        for i in range(kh) for j in range(kw)], axis=-1)  # fmt: skip
    return jnp.dot(patches, rhs.reshape(-1, rhs.shape[-1]), precision=precision)


def _conv(lhs, rhs, *args, **kwargs):
    # Chosen when lowering, per platform: a Sebulba actor on the host's CPU and its
    # learner on an accelerator each get their own.
    return jax.lax.platform_dependent(
        lhs, rhs, cpu=lambda x, w: _conv_as_matmul(x, w, *args, **kwargs),
        default=lambda x, w: jax.lax.conv_general_dilated(x, w, *args, **kwargs))  # fmt: skip


def Conv(*args, **kwargs) -> nn.Conv:
    """`nn.Conv` (same parameters) computed as a matmul on CPU: see the module doc."""
    return nn.Conv(*args, conv_general_dilated=_conv, **kwargs)


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
        x = nn.relu(Conv(32, (8, 8), (4, 4), padding="VALID", kernel_init=init)(x))
        x = nn.relu(Conv(64, (4, 4), (2, 2), padding="VALID", kernel_init=init)(x))
        x = nn.relu(Conv(64, (3, 3), (1, 1), padding="VALID", kernel_init=init)(x))
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
        x = Conv(16, (3, 3), (1, 1), padding="VALID", kernel_init=init)(x)
        x = nn.relu(_normalize(x, self.layer_norm)).reshape(x.shape[:-3] + (-1,))
        x = nn.Dense(self.hidden_size, kernel_init=init)(x)
        return nn.relu(_normalize(x, self.layer_norm))


class _ResidualBlock(nn.Module):
    channels: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        y = Conv(self.channels, (3, 3))(nn.relu(x))
        y = Conv(self.channels, (3, 3))(nn.relu(y))
        return x + y


class ImpalaResNet(nn.Module):
    """The deep IMPALA torso (Espeholt et al., 2018): 3 stages of conv, pool, 2 residual blocks."""

    channels: Sequence[int] = (16, 32, 32)
    hidden_size: int = 256

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for c in self.channels:
            x = Conv(c, (3, 3))(x)
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


def image_size(shape: Sequence[int]) -> tuple[int, int]:
    """(H, W) of an image observation `[C, H, W]`, `[H, W, C]` or `[H, W]`."""
    if len(shape) == 3:
        return tuple(shape[1:]) if channels_first(shape) else tuple(shape[:2])
    return tuple(shape)


def resolve_torso(kind: str, spec: EnvSpec, owner: str = "config") -> str:
    """The torso for `spec`'s observations; `auto` picks the Nature CNN for frames (uint8
    with 3 dims) and an MLP otherwise (float images, e.g. Craftax's pixels, choose a CNN
    by name). A convolutional torso on observations it cannot read fails naming
    `owner.torso` (before anything compiles)."""
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
        if kind == "nature_cnn" and min(image_size(shape)) < _NATURE_CNN_MIN_SIZE:
            raise ConfigError(
                f"{owner}.torso='nature_cnn' needs frames of at least {_NATURE_CNN_MIN_SIZE}x"
                f"{_NATURE_CNN_MIN_SIZE} (its 8/4, 4/2, 3/1 convolutions); {spec.name} "
                f"observes {shape}: use 'impala_resnet' or 'mlp'"
            )
    return kind


class Memory(nn.Module):
    """An LSTM or GRU over time whose state is reset to zeros where an episode starts.

    `memory(state [B, ...], x [T, B, D], first [T, B]) -> (states [T, B, ...], y [T, B, size])`:
    at each step the state is zeroed where `first` (the observation starts an episode),
    then the cell reads `x`; `states[t]` is the state after step t. The reset is inside
    the scan, so acting step by step and the learner's unroll over a trajectory that
    crosses an episode end compute the same thing.
    """

    kind: str  # "lstm" or "gru"
    size: int

    @nn.compact
    def __call__(self, state, x: jax.Array, first: jax.Array):
        cell = nn.OptimizedLSTMCell(self.size) if self.kind == "lstm" else nn.GRUCell(self.size)

        def step(cell, state, inputs):
            x, first = inputs
            keep = ~first[:, None]
            state = jax.tree.map(lambda s: jnp.where(keep, s, jnp.zeros_like(s)), state)
            state, y = cell(state, x)
            return state, (state, y)

        scan = nn.scan(step, variable_broadcast="params", split_rngs={"params": False})
        _, (states, y) = scan(cell, state, (x, first))
        return states, y


def initial_core(kind: str, size: int, towers: int, batch: int):
    """The zero state of `towers` cores for `batch` envs: a tuple with one entry per tower,
    `(c, h)` `[B, size]` each for an LSTM, `h` `[B, size]` for a GRU; () without a core."""
    if kind == "none":
        return ()
    zeros = jnp.zeros((batch, size), jnp.float32)
    return tuple((zeros, zeros) if kind == "lstm" else zeros for _ in range(towers))


def core_initializer(net: nn.Module):
    """`initial_core(batch)` of an actor-critic or Q-network `net`: the zero state of its
    cores (one per tower), () when it has none; what agents give as `Agent.initial_core`."""
    towers = getattr(net, "num_towers", 1)
    return lambda batch: initial_core(net.core, net.core_size, towers, batch)


def _one_step(unroll, observation, core, observation_ndim: int, initial):
    """`unroll(observation [1, N], first [1, N], core [N])` as one step over any leading
    dims of `observation` (a batch, or [T, B] of final observations), from `core` shaped
    like them (None: `initial(N)`), without a reset."""
    lead = observation.shape[: observation.ndim - observation_ndim]
    n = int(np.prod(lead))
    obs = observation.reshape((1, n) + observation.shape[len(lead) :])
    if core is None:
        core = initial(n)
    else:
        core = jax.tree.map(lambda c: c.reshape((n,) + c.shape[len(lead) :]), core)
    out = unroll(obs, jnp.zeros((1, n), bool), core)
    return jax.tree.map(lambda x: None if x is None else x.reshape(lead + x.shape[2:]), out,
                        is_leaf=lambda x: x is None)  # fmt: skip


class _Towers:
    """The actor's and the critic's feature paths, shared by the actor-critic modules.

    A tower is a torso and, with `core` set, a `Memory` after it; `separate_critic` gives
    the critic a tower of its own, else it reads the actor's features. Methods take
    time-major `[T, B, ...]` inputs when recurrent (the core scans over T) and any leading
    dims when not. The module's core state is a tuple of one `Memory` state per tower.
    """

    def _setup_towers(self) -> None:
        make = lambda: Torso(self.torso, self.observation_ndim, self.hidden_sizes, self.activation)
        self.actor_torso = make()
        self.critic_torso = make() if self.separate_critic else None
        if self.core != "none":
            self.actor_memory = Memory(self.core, self.core_size)
            self.critic_memory = Memory(self.core, self.core_size) if self.separate_critic else None

    @property
    def num_towers(self) -> int:
        return 2 if self.separate_critic else 1

    def _unroll_towers(self, observation, first, core, critic_only: bool = False):
        """`(actor features, critic features, cores after each step)` over `[T, B]` from
        `core` `[B, ...]` (None: the initial state)."""
        separate = self.separate_critic
        if core is None and self.core != "none":
            core = initial_core(self.core, self.core_size, self.num_towers, observation.shape[1])
        h = None if critic_only and separate else self.actor_torso(observation)
        hv = self.critic_torso(observation) if separate else h
        if self.core == "none":
            return h, hv, ()
        cores = []
        if h is not None:
            actor_cores, h = self.actor_memory(core[0], h, first)
            cores.append(actor_cores)
        if separate:
            critic_cores, hv = self.critic_memory(core[-1], hv, first)
            cores.append(critic_cores)
        else:
            hv = h
        return h, hv, tuple(cores)

    def _step_towers(self, observation, core, critic_only: bool = False):
        """One step from `core` `[...]` (no reset; None: the initial state) on
        `observation` `[..., *obs]`: the actor's and critic's features `[..., D]`."""
        if self.core == "none":
            return self._unroll_towers(observation, None, (), critic_only)[:2]
        h, hv = _one_step(
            lambda o, f, c: self._unroll_towers(o, f, c, critic_only)[:2],
            observation, core, self.observation_ndim,
            lambda n: initial_core(self.core, self.core_size, self.num_towers, n),
        )  # fmt: skip
        return h, hv


def _flat_batch(fn: Callable[..., Any], observation: jax.Array, observation_ndim: int) -> Any:
    """`fn` on `observation` `[*batch, *obs]` flattened to `[prod(batch), *obs]`, its
    outputs shaped back to `[*batch, ...]`. A learner's `[T, B]` minibatch then runs as
    2-D matmuls, whose gradients XLA computes without the transposes a `[T, B, D]` layer
    needs (PureJaxRL's minibatches are flat too)."""
    batch = observation.shape[: observation.ndim - observation_ndim]
    if len(batch) <= 1:
        return fn(observation)
    out = fn(observation.reshape((-1, *observation.shape[len(batch) :])))
    return jax.tree.map(lambda x: x.reshape(batch + x.shape[1:]), out)


class ActorCritic(_Towers, nn.Module):
    """Policy logits and a state value; `separate_critic` gives the critic its own tower."""

    num_actions: int
    torso: str
    observation_ndim: int
    hidden_sizes: Sequence[int] = (64, 64)
    activation: str = "tanh"
    separate_critic: bool = False
    core: str = "none"  # or "lstm", "gru": a Memory after each torso
    core_size: int = 128

    def setup(self):
        self._setup_towers()
        self.policy_head = Head(self.num_actions, kernel_init=_orthogonal(0.01))
        self.value_head = Head(1, kernel_init=_orthogonal(1.0))

    def _heads(self, h, hv):
        return self.policy_head(h), self.value_head(hv)[..., 0]

    def __call__(self, observation: jax.Array, core=None) -> tuple[jax.Array, jax.Array]:
        """`(logits, value)` of one step from `core` (recurrent: None is the initial state)."""
        if self.core == "none":  # every leading dim is batch: one flat batch of matmuls
            return _flat_batch(self._call, observation, self.observation_ndim)
        return self._call(observation, core)

    def _call(self, observation: jax.Array, core=None) -> tuple[jax.Array, jax.Array]:
        return self._heads(*self._step_towers(observation, core))

    def value(self, observation: jax.Array, core=None) -> jax.Array:
        if self.core == "none":
            return _flat_batch(self._value, observation, self.observation_ndim)
        return self._value(observation, core)

    def _value(self, observation: jax.Array, core=None) -> jax.Array:
        return self.value_head(self._step_towers(observation, core, critic_only=True)[1])[..., 0]

    def unroll(self, observation: jax.Array, first: jax.Array, core):
        """`((logits, value) [T, B, ...], cores after each step [T, B, ...])` from `core`
        `[B, ...]` (None: the initial state), each tower's core reset where `first` `[T, B]`."""
        h, hv, cores = self._unroll_towers(observation, first, core)
        return self._heads(h, hv), cores


class QNetwork(nn.Module):
    """Action values `[..., A]`; with `core` set, a `Memory` between torso and head."""

    num_actions: int
    torso: str
    observation_ndim: int
    hidden_sizes: Sequence[int] = (256,)
    activation: str = "relu"
    layer_norm: bool = False
    core: str = "none"  # or "lstm", "gru"
    core_size: int = 128

    def __call__(self, observation: jax.Array, core=None) -> jax.Array:
        """Q-values of one step from `core` (recurrent: None is the initial state)."""
        if self.core == "none":
            return self.unroll(observation, None, None)[0]
        initial = lambda n: initial_core(self.core, self.core_size, 1, n)  # noqa: E731
        return _one_step(lambda o, f, c: self.unroll(o, f, c)[0], observation, core,
                         self.observation_ndim, initial)  # fmt: skip

    @nn.compact
    def unroll(self, observation: jax.Array, first: jax.Array, core):
        """`(q [T, B, A], cores after each step)` from `core` `[B, ...]` (a 1-tuple, as
        every network's; None: the initial state), reset where `first` `[T, B]`.
        Feed-forward: `q` over any leading dims, cores ()."""
        torso = Torso(
            self.torso, self.observation_ndim, self.hidden_sizes, self.activation, self.layer_norm
        )
        head = Head(self.num_actions, kernel_init=_orthogonal(1.0))
        h = torso(observation)
        if self.core == "none":
            return head(h), ()
        if core is None:
            core = initial_core(self.core, self.core_size, 1, observation.shape[1])
        cores, h = Memory(self.core, self.core_size)(core[0], h, first)
        return head(h), (cores,)


LOG_STD_BOUNDS = (-5.0, 2.0)  # a network's log-std is squashed into this range (as SAC's)


class GaussianActorCritic(_Towers, nn.Module):
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
    core: str = "none"  # or "lstm", "gru": a Memory after each torso
    core_size: int = 128

    def setup(self):
        self._setup_towers()
        size = int(np.prod(self.action_shape))
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

    def _heads(self, h, hv):
        shape = h.shape[:-1] + tuple(self.action_shape)
        dist = Gaussian(self.mean_head(h).reshape(shape), self._log_std(h).reshape(shape))
        return dist, self.value_head(hv)[..., 0]

    def __call__(self, observation: jax.Array, core=None):
        """`(Gaussian(mean, log_std) [..., *action_shape] each, value [...])` of one step
        from `core` (recurrent: None is the initial state)."""
        return self._heads(*self._step_towers(observation, core))

    def value(self, observation: jax.Array, core=None) -> jax.Array:
        return self.value_head(self._step_towers(observation, core, critic_only=True)[1])[..., 0]

    def unroll(self, observation: jax.Array, first: jax.Array, core):
        """`((Gaussian, value) [T, B, ...], cores after each step)`, as `ActorCritic.unroll`."""
        h, hv, cores = self._unroll_towers(observation, first, core)
        return self._heads(h, hv), cores


def make_actor_critic(spec: EnvSpec, config, owner: str) -> nn.Module:
    """The actor-critic of a PPO or IMPALA `config` for `spec`'s action space: logits for
    discrete actions (`ActorCritic`), a Gaussian for a box (`GaussianActorCritic`)."""
    torso = resolve_torso(config.torso, spec, owner)
    common = dict(torso=torso, observation_ndim=len(spec.observation_shape),
                  hidden_sizes=config.hidden_sizes, activation=config.activation,
                  separate_critic=config.separate_critic, core=config.core,
                  core_size=config.core_size)  # fmt: skip
    if spec.is_discrete:
        return ActorCritic(spec.num_actions, **common)
    return GaussianActorCritic(
        spec.action_shape, **common,
        state_dependent_std=config.log_std == "network", init_log_std=config.init_log_std,
    )  # fmt: skip
