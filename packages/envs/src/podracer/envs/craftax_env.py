"""Craftax (pure JAX, open-ended Minecraft-like survival) as a `JaxEnv`: `make("craftax:<name>")`.

The env is craftax's no-auto-reset variant (`make_craftax_env_from_name(name,
auto_reset=False)`); the adapter resets within `step` itself (a fresh world from the
step's key, selected leaf by leaf with `jax.lax.select`), so `final_observation` is the
ended episode's last observation and `observation` the next episode's first.

Episode ends: craftax's `is_terminal` is `timestep >= params.max_timesteps`, or the player
dead (health <= 0), or (Craftax) the final boss beaten, or (Craftax-Classic) the player
standing in lava. `terminated` is that test with the time limit lifted (so it holds for both
games' state types); an end that is not terminal in that sense reached
`params.max_timesteps` alive and is `truncated`. `spec.max_episode_steps` is
`params.max_timesteps` (Craftax 100000, Classic 10000 by default; `max_timesteps=` replaces it).

Observations are float32 (symbolic: a flat vector, e.g. (8268,) for Craftax-Symbolic-v1;
pixels: `[H, W, 3]` in [0, 1]); rewards float32. Craftax's `info` (achievements) is
dropped. Compiling Craftax's step takes tens of seconds on a CPU.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.envs.actions import action_space_fields
from podracer.envs.autoreset import reset_in_step
from podracer.envs.extras import install_command
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep
from podracer.envs.types import first_timestep

# The names craftax's `make_craftax_env_from_name` builds without auto-reset.
CRAFTAX_ENVS = (
    "Craftax-Symbolic-v1",
    "Craftax-Pixels-v1",
    "Craftax-Classic-Symbolic-v1",
    "Craftax-Classic-Pixels-v1",
)
_NO_TIME_LIMIT = 2**31 - 1  # a max_timesteps no episode reaches: is_terminal without the limit


class CraftaxState(NamedTuple):
    env_state: Any  # craftax's EnvState
    stats: EpisodeStats  # running return and length


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a static jit argument
class CraftaxEnv:
    """A craftax environment (no auto-reset) and its params; build it with `make_craftax`."""

    spec: EnvSpec
    env: Any  # craftax's EnvironmentNoAutoReset
    params: Any  # its EnvParams

    def reset(self, key: chex.PRNGKey) -> tuple[CraftaxState, TimeStep]:
        obs, env_state = self.env.reset(key, self.params)
        obs = jnp.asarray(obs, jnp.float32)
        return CraftaxState(env_state, init_episode_stats((), jnp)), first_timestep(obs)

    def step(
        self, state: CraftaxState, action: chex.Array, key: chex.PRNGKey
    ) -> tuple[CraftaxState, TimeStep]:
        step_key, reset_key = jax.random.split(key)
        obs, env_state, reward, done, _ = self.env.step(
            step_key, state.env_state, action, self.params
        )
        done = jnp.asarray(done, jnp.bool_)
        unlimited = self.params.replace(max_timesteps=_NO_TIME_LIMIT)
        terminated = done & jnp.asarray(self.env.is_terminal(env_state, unlimited), jnp.bool_)
        truncated = done & ~terminated
        obs = jnp.asarray(obs, jnp.float32)
        reset_obs, reset_state = self.env.reset(reset_key, self.params)
        stats, env_state, timestep = reset_in_step(
            state.stats, env_state, obs, reset_state, jnp.asarray(reset_obs, jnp.float32),
            reward, terminated, truncated,
        )  # fmt: skip
        return CraftaxState(env_state, stats), timestep


def make_craftax(name: str, **param_overrides: Any) -> CraftaxEnv:
    """Builds the craftax environment `name` (one of `CRAFTAX_ENVS`) as a `JaxEnv`.

    Args:
      name: e.g. "Craftax-Symbolic-v1" or "Craftax-Classic-Symbolic-v1".
      **param_overrides: fields of its `EnvParams` to replace, e.g. `max_timesteps=1000`
        (which becomes `spec.max_episode_steps`).
    """
    if name not in CRAFTAX_ENVS:
        raise ValueError(f"unknown craftax environment {name!r}; available: {list(CRAFTAX_ENVS)}")
    try:
        from craftax.craftax_env import make_craftax_env_from_name
    except ImportError as e:
        raise ImportError(
            "craftax environments need the craftax extra: "
            + install_command("podracer-envs", "craftax")
        ) from e
    env = make_craftax_env_from_name(name, auto_reset=False)
    params = env.default_params
    if param_overrides:
        fields = {f.name for f in dataclasses.fields(params)}
        unknown = sorted(set(param_overrides) - fields)
        if unknown:
            raise ValueError(
                f"craftax:{name} has no params {unknown}; its params are {sorted(fields)}"
            )
        params = params.replace(**param_overrides)
    max_steps = params.max_timesteps
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"craftax:{name}: max_timesteps must be an int >= 1, got {max_steps!r}")
    spec = EnvSpec(
        name=f"craftax:{name}",
        observation_shape=tuple(env.observation_space(params).shape),
        observation_dtype="float32",
        max_episode_steps=int(max_steps),
        **action_space_fields(f"craftax:{name}", env.action_space(params)),
    )
    return CraftaxEnv(spec, env, params)
