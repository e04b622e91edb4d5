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
"""

from __future__ import annotations

import dataclasses
from typing import Any
from typing import NamedTuple
from typing import Protocol
from typing import runtime_checkable

import chex
import numpy as np

Array = Any  # a jax.Array or a np.ndarray: JaxEnvs emit the former, HostEnvs the latter.


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """Static description of an environment; hashable so it can close over jitted code."""

    name: str
    observation_shape: tuple[int, ...]
    observation_dtype: str  # a numpy dtype name, e.g. "float32" or "uint8"
    num_actions: int  # discrete actions 0..num_actions-1
    max_episode_steps: int | None = None  # time limit that truncates; None if never

    def __post_init__(self) -> None:
        if self.num_actions < 1:
            raise ValueError(f"EnvSpec.num_actions must be >= 1, got {self.num_actions}")
        np.dtype(self.observation_dtype)  # raises on an unknown dtype name
        object.__setattr__(self, "observation_shape", tuple(int(d) for d in self.observation_shape))

    @property
    def can_truncate(self) -> bool:
        return self.max_episode_steps is not None

    def compatible_with(self, other: EnvSpec) -> bool:
        """Whether an agent built for `self` can act in `other` (name may differ)."""
        return (
            self.observation_shape == other.observation_shape
            and self.observation_dtype == other.observation_dtype
            and self.num_actions == other.num_actions
        )

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["observation_shape"] = list(self.observation_shape)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EnvSpec:
        return cls(**{**d, "observation_shape": tuple(d["observation_shape"])})


class TimeStep(NamedTuple):
    """What the environment returns; leading dims are batch (and time) dims `[...]`."""

    observation: Array  # [..., *obs_shape] observation to act upon (first of the next episode after a reset)
    reward: Array  # [...] float32, reward for the transition into this step (raw, unclipped unless the env clips)
    terminated: Array  # [...] bool, the episode ended in a terminal state: do not bootstrap
    truncated: Array  # [...] bool, the episode was cut by a time limit: bootstrap from final_observation
    first: Array  # [...] bool, `observation` starts an episode
    final_observation: Array  # [..., *obs_shape] last observation of the episode that ended here, else == observation
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
