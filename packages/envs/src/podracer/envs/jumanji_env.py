"""Jumanji (InstaDeep's JAX environments) as a `JaxEnv`: `make("jumanji:Snake-v1")`.

Jumanji's `step(state, action) -> (state, TimeStep)` carries dm_env step types and
discounts. The adapter maps them onto podracer's `TimeStep`:

* `terminated`: the `LAST` step of an episode with discount 0; `truncated`: a `LAST` step
  with a nonzero discount (jumanji's `truncation`). An env with no `time_limit`
  attribute has `max_episode_steps=None`, so `spec.can_truncate` is False and agents do
  not bootstrap from `final_observation`: there every `LAST` step is `terminated`, so an
  env never flags `truncated` with a spec that cannot truncate. (Most jumanji envs end at
  their `time_limit` with discount 0 themselves, which is `terminated` either way.)
* Auto-reset inside `step`: the step's key resets the env when an episode ends (jumanji's
  own randomness lives in its state's key); `final_observation` is the ended episode's
  last observation, `observation` the next one's first.
* Observations: an array observation is used as it is, cast to float32. A structured one
  (jumanji's NamedTuples and dataclasses: a grid, an action mask, a step count, ...) is
  flattened into one float32 vector: every leaf, in the pytree's leaf order
  (`jax.tree.leaves`), raveled, cast to float32 and concatenated, so
  `spec.observation_shape == (sum of the leaves' sizes,)`. Snake-v1: a (12, 12, 5) grid,
  a step count and a (4,) action mask give (725,). The action mask is an input like the
  rest; invalid actions are not masked (jumanji decides what they do).
* Actions: a `DiscreteArray` action spec (one scalar action) gives a discrete spec of
  `num_values` actions; any other (`MultiDiscreteArray`, `BoundedArray`, multi-agent
  actions) is refused in one line. Rewards are float32 scalars (multi-agent reward
  vectors are refused).
* `max_episode_steps` is the env's `time_limit` attribute when it has one, else None.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs.autoreset import reset_in_step
from podracer.envs.extras import install_command
from podracer.envs.names import unknown_name
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep
from podracer.envs.types import first_timestep

_LAST = 2  # jumanji.types.StepType.LAST


class JumanjiState(NamedTuple):
    env_state: Any  # jumanji's State
    stats: EpisodeStats  # running return and length


def flatten_observation(observation: Any) -> chex.Array:
    """One float32 array of a jumanji observation (one env, unbatched): an array as it is,
    a pytree as the concatenation of its raveled leaves in `jax.tree.leaves` order."""
    if isinstance(observation, jax.Array | np.ndarray):
        return jnp.asarray(observation, jnp.float32)
    leaves = jax.tree.leaves(observation)
    return jnp.concatenate([jnp.ravel(jnp.asarray(x, jnp.float32)) for x in leaves])


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a static jit argument
class JumanjiEnv:
    """A jumanji environment as a `JaxEnv`; build it with `make_jumanji`."""

    spec: EnvSpec
    env: Any  # jumanji.Environment

    def reset(self, key: chex.PRNGKey) -> tuple[JumanjiState, TimeStep]:
        env_state, ts = self.env.reset(key)
        obs = flatten_observation(ts.observation)
        return JumanjiState(env_state, init_episode_stats((), jnp)), first_timestep(obs)

    def step(
        self, state: JumanjiState, action: chex.Array, key: chex.PRNGKey
    ) -> tuple[JumanjiState, TimeStep]:
        env_state, ts = self.env.step(state.env_state, action)
        done = jnp.asarray(ts.step_type == _LAST, jnp.bool_)
        if self.spec.can_truncate:
            terminated = done & (ts.discount == 0)
            truncated = done & (ts.discount != 0)
        else:
            terminated, truncated = done, jnp.zeros_like(done)
        obs = flatten_observation(ts.observation)
        reset_state, reset_ts = self.env.reset(key)
        stats, env_state, timestep = reset_in_step(
            state.stats, env_state, obs, reset_state, flatten_observation(reset_ts.observation),
            ts.reward, terminated, truncated,
        )  # fmt: skip
        return JumanjiState(env_state, stats), timestep


def _action_fields(name: str, action_spec: Any) -> dict[str, Any]:
    from jumanji import specs

    if isinstance(action_spec, specs.DiscreteArray) and tuple(action_spec.shape) == ():
        return {"num_actions": int(action_spec.num_values)}
    kind = type(action_spec).__name__
    shape = tuple(getattr(action_spec, "shape", ()))
    raise ValueError(
        f"{name} has a {kind} action spec (shape {shape}); podracer.envs supports jumanji "
        "envs with a DiscreteArray action spec (one scalar discrete action) only"
    )


def make_jumanji(env_id: str, **env_kwargs: Any) -> JumanjiEnv:
    """Builds the jumanji environment `env_id` (a `jumanji.registered_environments()` id,
    e.g. "Snake-v1") as a `JaxEnv`; `env_kwargs` go to its constructor (e.g.
    `time_limit=500` where it takes one)."""
    try:
        import jumanji
    except ImportError as e:
        raise ImportError(
            "jumanji environments need the jumanji extra: "
            + install_command("podracer-envs", "jumanji")
        ) from e
    name = f"jumanji:{env_id}"
    if env_id not in jumanji.registered_environments():
        names = [f"jumanji:{n}" for n in sorted(jumanji.registered_environments())]
        raise unknown_name(name, names, "jumanji environment")
    try:
        env = jumanji.make(env_id, **env_kwargs)
    except TypeError as e:
        raise ValueError(f"{name}: {' '.join(str(e).split())}") from None
    fields = _action_fields(name, env.action_spec)
    reward_shape = tuple(env.reward_spec.shape)
    if reward_shape != ():
        raise ValueError(
            f"{name} has rewards of shape {reward_shape} (one per agent); podracer.envs "
            "supports scalar rewards only"
        )
    observation = jax.eval_shape(lambda k: flatten_observation(env.reset(k)[1].observation),
                                 jax.random.PRNGKey(0))  # fmt: skip
    time_limit = getattr(env, "time_limit", None)
    spec = EnvSpec(
        name=name,
        observation_shape=tuple(observation.shape),
        observation_dtype="float32",
        max_episode_steps=None if time_limit is None else int(time_limit),
        **fields,
    )
    return JumanjiEnv(spec, env)
