"""Any gymnax environment as a `JaxEnv` (gymnax >= 1.0 step contract).

gymnax 1.0 `step(key, state, action, params)` returns `(obs, state, reward, terminated,
truncated, info)`, auto-resets within the step, and puts the last observation of an ended
episode in `info["final_observation"]`. This adapter keeps those semantics, casts
observations to float32 (MinAtar, FrozenLake, ... emit bool or int), and carries the
running episode return and length in its state.

Action spaces: `Discrete` envs take an int action; `Box` envs (Pendulum-v1,
MountainCarContinuous-v0, PointRobot-misc, Reacher-misc, Swimmer-misc) get a continuous
`EnvSpec` and a float32 `[*action_shape]` action, which the adapter clips to the box
before gymnax sees it. gymnax itself is not consistent out of bounds: Pendulum clips the
torque; MountainCarContinuous clips the force but charges `0.1 * action**2` on the
unclipped action; Reacher and Swimmer do not clip at all. Clipping here gives every
continuous env the same contract: what the env receives is inside its bounds.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from typing import NamedTuple

import chex
import jax.numpy as jnp

from podracer.envs.actions import action_space_fields
from podracer.envs.actions import clip_action
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep
from podracer.envs.types import first_timestep


class GymnaxState(NamedTuple):
    env_state: Any  # the gymnax environment's state pytree
    stats: EpisodeStats  # running return and length


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a static jit argument
class GymnaxEnv:
    """A gymnax environment and its params; build it with `make_gymnax`."""

    spec: EnvSpec
    env: Any  # gymnax.environments.environment.Environment
    params: Any  # its EnvParams

    def reset(self, key: chex.PRNGKey) -> tuple[GymnaxState, TimeStep]:
        obs, env_state = self.env.reset(key, self.params)
        obs = jnp.asarray(obs, jnp.float32)
        return GymnaxState(env_state, init_episode_stats((), jnp)), first_timestep(obs)

    def step(
        self, state: GymnaxState, action: chex.Array, key: chex.PRNGKey
    ) -> tuple[GymnaxState, TimeStep]:
        if self.spec.is_continuous:
            action = clip_action(self.spec, action)
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, self.params
        )
        terminated = jnp.asarray(terminated, jnp.bool_)
        truncated = jnp.asarray(truncated, jnp.bool_)
        done = terminated | truncated
        reward = jnp.asarray(reward, jnp.float32)
        stats, emitted = update_episode_stats(state.stats, reward, done)
        return GymnaxState(env_state, stats), TimeStep(
            observation=jnp.asarray(obs, jnp.float32),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            first=done,
            final_observation=jnp.asarray(info["final_observation"], jnp.float32),
            episode_return=emitted.episode_return,
            episode_length=emitted.episode_length,
            episode_end=done,
        )


def make_gymnax(
    name: str, env_kwargs: dict[str, Any] | None = None, **param_overrides: Any
) -> GymnaxEnv:
    """Builds the gymnax environment `name` (e.g. "CartPole-v1") as a `JaxEnv`.

    Args:
      name: a gymnax id, one of `gymnax.registered_envs`.
      env_kwargs: keyword arguments of the gymnax environment's constructor.
      **param_overrides: fields of its `EnvParams` to replace, e.g.
        `max_steps_in_episode=50` (which becomes `spec.max_episode_steps`).
    """
    try:
        import gymnax
    except ImportError as e:
        raise ImportError(
            "gymnax environments need the gymnax extra: pip install 'podracer-envs[gymnax]'"
        ) from e
    if name not in gymnax.registered_envs:
        raise ValueError(
            f"unknown gymnax environment {name!r}; available: {sorted(gymnax.registered_envs)}"
        )
    env, params = gymnax.make(name, **(env_kwargs or {}))
    return wrap_gymnax(env, f"gymnax:{name}", params, **param_overrides)


def wrap_gymnax(env: Any, name: str, params: Any = None, **param_overrides: Any) -> GymnaxEnv:
    """A gymnax `Environment` (an instance, or a class built with no arguments) as a
    `JaxEnv` named `name`: `params` default to its `default_params`, with
    `param_overrides` (fields of its `EnvParams`, e.g. `max_steps_in_episode=50`)."""
    if isinstance(env, type):
        env = env()
    params = env.default_params if params is None else params
    if param_overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        unknown = sorted(set(param_overrides) - fields)
        if unknown:
            raise ValueError(f"{name} has no params {unknown}; its params are {sorted(fields)}")
        params = params.replace(**param_overrides)

    max_steps = getattr(params, "max_steps_in_episode", None)
    spec = EnvSpec(
        name=name,
        observation_shape=tuple(env.observation_space(params).shape),
        observation_dtype="float32",
        max_episode_steps=None if max_steps is None else int(max_steps),
        **action_space_fields(name, env.action_space(params)),
    )
    return GymnaxEnv(spec, env, params)
