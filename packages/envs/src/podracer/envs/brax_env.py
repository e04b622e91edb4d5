"""Brax physics environments (pure JAX) as a `JaxEnv`: `make("brax:ant")`.

brax's `Env` has `reset(rng) -> State` and `step(State, action) -> State` with no time
limit and no auto-reset (its training wrappers add both). This adapter adds them the way
the other JaxEnvs have them: `step` counts the episode's steps; at `max_episode_steps`
(brax's usual 1000) an episode that did not terminate is `truncated` and bootstraps from
`final_observation`; an ended episode resets within the same step from a fresh reset
key (brax's `AutoResetWrapper` instead replays each env's first state forever). The
reset runs on every step and is selected where the episode ended, as gymnax does: under
`vmap` both branches run anyway.

Actions are float32 `[action_size]` in the actuators' control range (`[-1, 1]` for most
tasks, `[-0.4, 0.4]` for the humanoids), clipped to it here as brax's actuators do.
brax's own code relies on NumPy rank promotion and on fields mujoco.mjx deprecates, so
its calls are traced with promotion allowed and those warnings ignored, whatever the
caller's settings (this adapter's own code stays strict).
brax is imported only when an env is made (`podracer-envs[brax]`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import warnings
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs.actions import clip_action
from podracer.envs.extras import install_command
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep
from podracer.envs.types import first_timestep

# brax.envs names that build and step on the JAX this package supports.
_BROKEN = {"swimmer": "brax 0.14's swimmer calls jnp.clip(a_min=...), which JAX removed"}
BRAX_ENVS = (
    "ant",
    "fast",
    "halfcheetah",
    "hopper",
    "humanoid",
    "humanoidstandup",
    "inverted_double_pendulum",
    "inverted_pendulum",
    "pusher",
    "reacher",
    "walker2d",
)


@contextlib.contextmanager
def _calling_brax():
    """Where brax code runs (or is traced): its rank promotion and mujoco's deprecations.

    brax relies on NumPy rank promotion and touches fields mujoco.mjx deprecates; both
    are brax's to fix, so they are allowed here whatever the caller's settings.
    """
    with warnings.catch_warnings(), jax.numpy_rank_promotion("allow"):
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(brax|mujoco)\.")
        warnings.filterwarnings("ignore", message=".*not actively being maintained.*")
        yield


class BraxState(NamedTuple):
    env_state: Any  # brax.envs.State of the running episode (pipeline state, obs, ...)
    time: chex.Array  # [] int32, steps taken in the running episode
    stats: EpisodeStats  # running return and length


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a static jit argument
class BraxEnv:
    """A brax environment with a time limit and auto-reset; build it with `make_brax`."""

    spec: EnvSpec
    env: Any  # brax.envs.Env

    def reset(self, key: chex.PRNGKey) -> tuple[BraxState, TimeStep]:
        with _calling_brax():
            env_state = self.env.reset(key)
        obs = jnp.asarray(env_state.obs, jnp.float32)
        return BraxState(env_state, jnp.int32(0), init_episode_stats((), jnp)), first_timestep(obs)

    def step(
        self, state: BraxState, action: chex.Array, key: chex.PRNGKey
    ) -> tuple[BraxState, TimeStep]:
        action = clip_action(self.spec, action)
        with _calling_brax():
            stepped = self.env.step(state.env_state, action)
            fresh = self.env.reset(key)
        terminated = jnp.asarray(stepped.done, jnp.float32) > 0.5
        time = state.time + 1
        if self.spec.max_episode_steps is None:
            truncated = jnp.bool_(False)
        else:
            truncated = (time >= self.spec.max_episode_steps) & ~terminated
        done = terminated | truncated
        reward = jnp.asarray(stepped.reward, jnp.float32)
        # `done` is a scalar: `where` broadcasts it over every leaf of brax's state.
        env_state = jax.tree.map(lambda r, s: jnp.where(done, r, s), fresh, stepped)
        stats, emitted = update_episode_stats(state.stats, reward, done)
        return BraxState(env_state, jnp.where(done, 0, time), stats), TimeStep(
            observation=jnp.asarray(env_state.obs, jnp.float32),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            first=done,
            final_observation=jnp.asarray(stepped.obs, jnp.float32),
            episode_return=emitted.episode_return,
            episode_length=emitted.episode_length,
            episode_end=done,
        )


def _import_brax_envs() -> Any:
    try:
        # Import-time noise from brax's dependencies, none of it actionable here: jaxopt
        # warns that it is unmaintained, and mujoco.mjx prints "Failed to import warp"
        # to stdout when warp (its GPU backend, not used by brax's pipelines) is missing.
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.filterwarnings("ignore", message="JAXopt is no longer maintained")
            import brax.envs
    except ImportError as e:
        raise ImportError(
            "brax environments need the brax extra, which is not installed: "
            + install_command("podracer-envs", "brax")
        ) from e
    return brax.envs


def make_brax(name: str, max_episode_steps: int | None = 1000, **env_kwargs: Any) -> BraxEnv:
    """Builds the brax environment `name` (e.g. "ant", "hopper") as a `JaxEnv`.

    Args:
      name: a `brax.envs` name (`BRAX_ENVS` lists those known to work).
      max_episode_steps: the time limit that truncates (None: episodes end only when
        the env terminates).
      **env_kwargs: keyword arguments of the brax env's constructor, e.g.
        `backend="positional"` or `exclude_current_positions_from_observation=False`.
    """
    if max_episode_steps is not None and (
        not isinstance(max_episode_steps, int) or max_episode_steps < 1
    ):
        raise ValueError(
            f"max_episode_steps must be an int >= 1 or None, got {max_episode_steps!r}"
        )
    if name in _BROKEN:
        raise ValueError(f"brax:{name} does not run here: {_BROKEN[name]}")
    envs = _import_brax_envs()
    with _calling_brax():  # brax warns on every system load that it is unmaintained
        try:
            env = envs.get_environment(name, **env_kwargs)
        except KeyError:
            raise ValueError(
                f"unknown brax environment {name!r}; known: {list(BRAX_ENVS)}"
            ) from None
        observation_size = env.observation_size  # runs a reset
    if not isinstance(observation_size, int):
        raise ValueError(
            f"brax:{name} has dict observations ({observation_size}); "
            "podracer.envs supports single-array observations only"
        )
    sys = getattr(env, "sys", None)  # PipelineEnvs: actuator control ranges [action_size, 2]
    size = int(env.action_size)
    if sys is not None and np.asarray(sys.actuator.ctrl_range).shape == (size, 2):
        ctrl = np.asarray(sys.actuator.ctrl_range, np.float64)
        low, high = ctrl[:, 0], ctrl[:, 1]
    else:  # brax's convention for envs without a system (e.g. "fast")
        low, high = -np.ones(size), np.ones(size)
    spec = EnvSpec(
        f"brax:{name}",
        (int(observation_size),),
        "float32",
        None,
        max_episode_steps,
        (size,),
        tuple(float(x) for x in low),
        tuple(float(x) for x in high),
    )
    return BraxEnv(spec, env)
