"""The typed environment interface shared by both runtimes.

Two kinds of environment exist, one per architecture:

* `JaxEnv` (Anakin): pure, unbatched, auto-resetting functions that are vmapped and
  compiled together with the agent.
* `HostEnv` (Sebulba): batched NumPy environments stepped on host threads (envpool).

Both emit the same `TimeStep`. The conventions every agent relies on:

* `terminated` ends an episode without bootstrapping; `truncated` ends it (time limit)
  but the value of `final_observation` is bootstrapped.
* `first` marks the first observation of an episode. A transition into a `first`
  timestep that is neither terminated nor truncated is a *dummy* transition: envpool
  resets on the step after an episode ends, ignoring the action. Agents never learn from
  it (`TimeStep.transition_mask`). JaxEnvs reset within the step and emit no dummy.
* `episode_return` / `episode_length` hold the unclipped statistics of the episode that
  ended at this step and are final where `episode_end_mask` (== `terminated | truncated`,
  except under Atari's episodic life, where a lost life is `terminated` for learning but
  the episode, whose statistics are logged, is the whole game). Elsewhere they hold the
  running statistics of the current episode, this step included.
* Actions are int32 `[...]` in `0..num_actions-1` (discrete `EnvSpec`) or float32
  `[..., *action_shape]` (continuous box); every adapter clips continuous actions to the
  box before its env sees them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple
from typing import Protocol
from typing import runtime_checkable

import numpy as np

if TYPE_CHECKING:  # this module stays importable without JAX (specs are read by CLIs)
    import chex

Array = Any  # a jax.Array or a np.ndarray: JaxEnvs emit the former, HostEnvs the latter.


def _spec_error(field: str, must: str, got: Any) -> ValueError:
    return ValueError(f"EnvSpec.{field} must be {must}, got {got!r}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_)


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of an environment; hashable so it can close over jitted code.

    The action space is either discrete (`num_actions` actions `0..num_actions-1`, an int32
    action per env) or a continuous box (`num_actions=None`; a float32 action
    `[*action_shape]` per env within `[action_low, action_high]`, bounds flattened in C
    order). Continuous adapters clip actions to the box before the env sees them.
    """

    name: str
    observation_shape: tuple[int, ...]
    observation_dtype: str  # a numpy dtype name, e.g. "float32" or "uint8"
    num_actions: int | None  # discrete actions 0..num_actions-1; None for a continuous box
    max_episode_steps: int | None = None  # time limit that truncates; None if never
    action_shape: tuple[int, ...] = ()  # () for discrete; the box's shape, e.g. (6,)
    action_low: tuple[float, ...] | None = None  # [prod(action_shape)] box lower bounds
    action_high: tuple[float, ...] | None = None  # [prod(action_shape)] box upper bounds

    def __post_init__(self) -> None:
        np.dtype(self.observation_dtype)  # raises TypeError on an unknown dtype name
        set_ = object.__setattr__
        set_(self, "observation_shape", _dims("observation_shape", self.observation_shape))
        set_(self, "action_shape", _dims("action_shape", self.action_shape))
        steps = self.max_episode_steps
        if steps is not None:
            if not _is_int(steps) or steps < 1:
                raise _spec_error("max_episode_steps", "an int >= 1 or None", steps)
            set_(self, "max_episode_steps", int(steps))
        n = self.num_actions
        if n is not None:  # discrete
            if not _is_int(n) or n < 1:
                raise _spec_error("num_actions", "an int >= 1 (discrete) or None (continuous)", n)
            set_(self, "num_actions", int(n))
            if self.action_shape != ():
                raise _spec_error(
                    "action_shape", "() for a discrete action space", self.action_shape
                )
            for field in ("action_low", "action_high"):
                if getattr(self, field) is not None:
                    raise _spec_error(
                        field, "None for a discrete action space", getattr(self, field)
                    )
            return
        size = math.prod(self.action_shape)
        if size < 1:
            raise _spec_error("action_shape", "a shape of >= 1 elements", self.action_shape)
        for field in ("action_low", "action_high"):
            set_(self, field, _bounds(field, getattr(self, field), size))
        if any(lo > hi for lo, hi in zip(self.action_low, self.action_high, strict=True)):
            raise _spec_error("action_low", "<= action_high elementwise", self.action_low)

    @property
    def can_truncate(self) -> bool:
        return self.max_episode_steps is not None

    @property
    def is_discrete(self) -> bool:
        return self.num_actions is not None

    @property
    def is_continuous(self) -> bool:
        return self.num_actions is None

    @property
    def action_dtype(self) -> str:
        """The dtype of one action: "int32" (discrete) or "float32" (continuous)."""
        return "int32" if self.is_discrete else "float32"

    def action_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """`(low, high)`, float32 `[*action_shape]` each; continuous spaces only."""
        if self.is_discrete:
            raise ValueError(f"{self.name} has a discrete action space: it has no bounds")
        shape = self.action_shape
        low = np.asarray(self.action_low, np.float32).reshape(shape)
        return low, np.asarray(self.action_high, np.float32).reshape(shape)

    def compatible_with(self, other: EnvSpec) -> bool:
        """Whether an agent built for `self` can act in `other` (name may differ)."""
        return (
            self.observation_shape == other.observation_shape
            and self.observation_dtype == other.observation_dtype
            and self.num_actions == other.num_actions
            and self.action_shape == other.action_shape
            and self.action_low == other.action_low
            and self.action_high == other.action_high
        )

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for field in ("observation_shape", "action_shape", "action_low", "action_high"):
            if d[field] is not None:
                d[field] = list(d[field])
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EnvSpec:
        """The inverse of `to_json`; JSON written before action boxes loads as discrete."""
        d = dict(d)
        for field in ("observation_shape", "action_shape", "action_low", "action_high"):
            if d.get(field) is not None:
                d[field] = tuple(d[field])
        return cls(**d)


def _dims(field: str, shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise _spec_error(field, "a tuple of ints >= 0", shape) from None
    if not all(_is_int(d) and d >= 0 for d in dims):
        raise _spec_error(field, "a tuple of ints >= 0", shape)
    return tuple(int(d) for d in dims)


def _bounds(field: str, bounds: Any, size: int) -> tuple[float, ...]:
    must = f"a tuple of {size} finite floats for a continuous action space"
    if bounds is None or isinstance(bounds, str):
        raise _spec_error(field, must, bounds)
    try:
        values = np.asarray(bounds, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise _spec_error(field, must, bounds) from None
    if values.shape != (size,) or not np.isfinite(values).all():
        raise _spec_error(field, must, bounds)
    return tuple(float(v) for v in values)


class TimeStep(NamedTuple):
    """What the environment returns; leading dims are batch (and time) dims `[...]`."""

    # [..., *obs_shape] observation to act upon (the next episode's first after a reset)
    observation: Array
    # [...] float32, reward for the transition into this step (raw: unclipped unless the env clips)
    reward: Array
    terminated: Array  # [...] bool, the episode ended in a terminal state: do not bootstrap
    # [...] bool, the episode was cut by a time limit: bootstrap from final_observation
    truncated: Array
    first: Array  # [...] bool, `observation` starts an episode
    # [..., *obs_shape] last observation of the episode that ended here, else == observation
    final_observation: Array
    episode_return: Array  # [...] float32, unclipped return of the episode that ended here
    episode_length: Array  # [...] int32, length of the episode that ended here
    # [...] bool, a whole episode ended here (log episode_return/length there); None: == done.
    episode_end: Array | None = None

    @property
    def done(self) -> Array:
        return self.terminated | self.truncated

    @property
    def episode_end_mask(self) -> Array:
        """Where `episode_return` / `episode_length` are final and should be logged."""
        return self.done if self.episode_end is None else self.episode_end

    @property
    def transition_mask(self) -> Array:
        """False for the dummy transition that envpool's next-step reset leads into this step."""
        return ~(self.first & ~self.terminated & ~self.truncated)


def first_timestep(observation: Array) -> TimeStep:
    """The timestep a JaxEnv's `reset` returns for one (unbatched) environment."""
    import jax.numpy as jnp  # JaxEnvs only; HostEnvs build numpy timesteps

    false = jnp.bool_(False)
    return TimeStep(
        observation=observation,
        reward=jnp.float32(0.0),
        terminated=false,
        truncated=false,
        first=jnp.bool_(True),
        final_observation=observation,
        episode_return=jnp.float32(0.0),
        episode_length=jnp.int32(0),
        episode_end=false,
    )


@runtime_checkable
class JaxEnv(Protocol):
    """A pure, unbatched, auto-resetting environment; `vmap` it for a batch.

    `step` resets in the same call when an episode ends: the returned state and
    `observation` belong to the next episode, `final_observation` to the finished one.
    """

    spec: EnvSpec

    def reset(self, key: chex.PRNGKey) -> tuple[Any, TimeStep]: ...

    def step(self, state: Any, action: chex.Array, key: chex.PRNGKey) -> tuple[Any, TimeStep]: ...


@runtime_checkable
class HostEnv(Protocol):
    """A batch of `num_envs` environments stepped on the host with NumPy arrays.

    Synchronous use: `reset()` then `step(actions)` with one action per environment.
    Asynchronous use (`batch_size < num_envs`): `async_reset()`, then alternate
    `recv() -> (timestep, env_ids)` and `send(actions, env_ids)`.
    """

    spec: EnvSpec
    num_envs: int
    batch_size: int

    def reset(self) -> TimeStep: ...

    def step(self, actions: np.ndarray) -> TimeStep: ...

    def async_reset(self) -> None: ...

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None: ...

    def recv(self) -> tuple[TimeStep, np.ndarray]: ...

    def close(self) -> None: ...
