"""envpool (C++ batched environments, gymnasium API) as a `HostEnv`, plus its XLA interface.

envpool resets on the step *after* an episode ends: that step ignores the action and
returns the first observation of the next episode with reward 0. The adapter marks it
`first=True` (neither terminated nor truncated), so `TimeStep.transition_mask` is False
there and no agent learns from it. `first` is envpool's `elapsed_step == 0`, except
under Atari's episodic life, where a lost life resets without zeroing `elapsed_step`:
there the adapter tracks per env id whether the previous step was `done`.

The terminal observation is the one returned with `terminated | truncated`, so
`final_observation` is `observation`. Episode statistics are computed from unclipped
rewards (Atari's `info["reward"]`) over whole games (with `episodic_life`, a lost life is
`terminated` for learning but the episode ends at game over, `info["terminated"]`).

Continuous tasks (MuJoCo `HalfCheetah-v4`, `Hopper-v4`, ..., classic `Pendulum-v1`) take
float32 actions `[B, *action_shape]`, clipped to the box on the host (envpool's MuJoCo
tasks do not clip: their control cost would see the raw action). MuJoCo tasks compute in
float64; the adapter casts their observations to float32 (`spec.observation_dtype`).
Their XLA interface exchanges float64 arrays, which JAX holds only with `jax_enable_x64`
on: without it envpool would write float64 data into float32 buffers, so `xla()` refuses
those tasks (use `recv`/`send` on the host); with it, `xla()` casts observations to
float32 and clipped float32 actions to the task's dtype inside jit.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from podracer.envs.actions import action_space_fields
from podracer.envs.actions import clip_action
from podracer.envs.checks import check_actions
from podracer.envs.checks import check_env_ids
from podracer.envs.checks import check_sizes
from podracer.envs.extras import install_command
from podracer.envs.names import unknown_name
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep

# envpool config keys the adapter owns; everything else in the task's config may be passed.
_OWNED_KEYS = ("num_envs", "batch_size", "seed", "gym_reset_return_info", "base_path")


@dataclasses.dataclass(frozen=True)
class AtariOptions:
    """The usual Atari wrappers (envpool's defaults); `make_envpool(..., atari=...)`."""

    frame_skip: int = 4  # emulator frames per step (max-pooled over the last two)
    stack_num: int = 4  # stacked frames in an observation
    episodic_life: bool = False  # a lost life is `terminated` (statistics stay per game)
    reward_clip: bool = False  # rewards clipped to their sign (statistics stay unclipped)
    noop_max: int = 30  # up to this many no-ops after a reset
    repeat_action_probability: float = 0.0  # sticky actions (0.25 in Machado et al.)
    img_height: int = 84
    img_width: int = 84
    gray_scale: bool = True
    full_action_space: bool = False  # all 18 actions instead of the game's minimal set

    def as_kwargs(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class EnvpoolXla(NamedTuple):
    """envpool's XLA interface: `handle` and jittable `recv`, `send`, `step` over it."""

    handle: Any  # np.ndarray [handle bytes] uint8, threaded through send/recv
    recv: Any  # handle -> (handle, (obs, reward, terminated, truncated, info))
    send: Any  # (handle, actions, env_ids) -> handle
    step: Any  # (handle, actions, env_ids) -> (handle, (obs, ...)); send then recv


class EpisodeTracker(NamedTuple):
    """Per-env bookkeeping of the next-step reset for `envpool_timestep` (jax arrays)."""

    prev_done: Any  # [num_envs] bool, the env's last step ended an episode (or life)
    stats: EpisodeStats  # [num_envs] running return and length of each env's game


def init_episode_tracker(num_envs: int) -> EpisodeTracker:
    """A tracker for envs just reset by `async_reset()`."""
    return EpisodeTracker(jnp.ones((num_envs,), jnp.bool_), init_episode_stats((num_envs,), jnp))


def _timestep(obs, reward, terminated, truncated, first, emitted: EpisodeStats, end) -> TimeStep:
    """The XLA path's `TimeStep`: the terminal observation is `obs` itself (envpool)."""
    return TimeStep(
        observation=obs,
        reward=reward,
        terminated=terminated,
        truncated=truncated,
        first=first,
        final_observation=obs,
        episode_return=emitted.episode_return,
        episode_length=emitted.episode_length,
        episode_end=end,
    )


def envpool_timestep(
    tracker: EpisodeTracker,
    obs: Any,
    reward: Any,
    terminated: Any,
    truncated: Any,
    info: dict[str, Any],
    episodic_life: bool = False,
) -> tuple[EpisodeTracker, TimeStep]:
    """Converts one envpool gymnasium output (e.g. from the XLA `recv`) into a `TimeStep`.

    Pure and written with `.at[]` updates for jax.numpy arrays: use it inside jit on the
    outputs of `EnvpoolEnv.xla()`; start from `init_episode_tracker(num_envs)` after
    `async_reset()` (the reset observations then come out with `first=True`).
    """
    ids = info["env_id"]
    first = tracker.prev_done[ids]
    done = terminated | truncated
    raw_reward = info["reward"] if "reward" in info else reward
    end = done & ((info["terminated"] != 0) | truncated) if episodic_life else done
    stats = EpisodeStats(tracker.stats.episode_return[ids], tracker.stats.episode_length[ids])
    carried, emitted = update_episode_stats(stats, jnp.asarray(raw_reward), end, ~first)
    tracker = EpisodeTracker(
        tracker.prev_done.at[ids].set(done),
        EpisodeStats(
            tracker.stats.episode_return.at[ids].set(carried.episode_return),
            tracker.stats.episode_length.at[ids].set(carried.episode_length),
        ),
    )
    return tracker, _timestep(obs, reward, terminated, truncated, first, emitted, end)


def envpool_timestep_by_id(
    tracker: EpisodeTracker,
    obs: Any,
    reward: Any,
    terminated: Any,
    truncated: Any,
    info: dict[str, Any],
    episodic_life: bool = False,
) -> tuple[EpisodeTracker, TimeStep]:
    """`envpool_timestep` for a full batch (every env in each `recv`), rows in env-id order.

    The same `TimeStep` as `envpool_timestep` followed by a sort on `info["env_id"]`, but
    cheaper inside a compiled actor loop: the outputs are permuted into id order first
    (one gather per field), so the tracker, already in id order, updates elementwise with
    no per-step gathers or scatters. Needs `batch_size == num_envs`.
    """
    order = jnp.argsort(info["env_id"])
    obs, reward, terminated, truncated = (x[order] for x in (obs, reward, terminated, truncated))
    raw_reward = info["reward"][order] if "reward" in info else reward
    done = terminated | truncated
    end = done & ((info["terminated"][order] != 0) | truncated) if episodic_life else done
    first = tracker.prev_done
    carried, emitted = update_episode_stats(tracker.stats, jnp.asarray(raw_reward), end, ~first)
    return EpisodeTracker(done, carried), _timestep(
        obs, reward, terminated, truncated, first, emitted, end
    )


def _wide_fields(task_spec: Any) -> list[str]:
    """Names of the arrays envpool's XLA functions exchange with 64-bit dtypes."""
    arrays = {**task_spec.state_array_spec, **task_spec.action_array_spec}
    return sorted(k for k, a in arrays.items() if np.dtype(a.dtype).itemsize > 4)


_INT32 = np.dtype(np.int32)
_UINT32 = np.dtype(np.uint32)
# 0-d arrays: faster than Python scalars in np.where and comparisons (no conversion).
_ZERO = np.zeros((), np.float32)
_ZERO_INT = np.zeros((), np.int32)


class EnvpoolEnv:
    """A `HostEnv` over an envpool gymnasium pool; build it with `make_envpool`.

    Per step the bookkeeping is a few whole-array NumPy operations, no loop over envs:
    `first` is `info["elapsed_step"] == 0` (envpool zeroes it on the reset step), the
    episode length is `info["elapsed_step"]` (it counts real transitions of the game,
    even under episodic life), and only the unclipped return is accumulated per env id.
    Under episodic life, `first` comes from the previous step's `done` per env id.
    `envpool_timestep` computes the same from the env ids alone, for the XLA path.
    """

    def __init__(
        self, pool: Any, spec: EnvSpec, num_envs: int, batch_size: int, episodic_life: bool
    ) -> None:
        self.spec = spec
        self.num_envs = num_envs
        self.batch_size = batch_size
        self._pool = pool
        self._episodic_life = episodic_life
        self._shape = (num_envs,)
        self._return = np.zeros(num_envs, np.float32)  # [num_envs] running unclipped return
        self._prev_done = np.ones(num_envs, np.bool_)  # [num_envs] episodic life only
        self._last_ids = None  # the env ids the last recv() returned
        # MuJoCo's float64 observations become float32 (the spec's dtype); others pass as is.
        obs_dtype = np.dtype(spec.observation_dtype)
        self._cast = None if np.dtype(pool.observation_space.dtype) == obs_dtype else obs_dtype

    @property
    def pool(self) -> Any:
        """The underlying envpool object (for what the adapter does not cover)."""
        return self._pool

    def _require_sync(self, method: str) -> None:
        if self.batch_size != self.num_envs:
            raise RuntimeError(
                f"{method}() steps all envs and needs batch_size == num_envs "
                f"(got batch_size={self.batch_size}, num_envs={self.num_envs}); "
                "use async_reset(), recv() and send(actions, env_ids)"
            )

    def _check(self, actions: Any, shape: tuple[int, ...]) -> np.ndarray:
        if self.spec.is_continuous:
            return check_actions(actions, shape[0], self.spec)
        a = actions
        # Fast path (int32 numpy actions): negative values view as huge unsigned ones.
        if (
            a.__class__ is np.ndarray
            and a.dtype == _INT32
            and a.shape == shape
            and a.size
            and a.view(_UINT32).max() < self.spec.num_actions
        ):
            return a
        return check_actions(a, shape[0], self.spec)

    def _reset_tracking(self, prev_done: bool) -> None:
        # New arrays: the caller may hold the old ones.
        self._return = np.zeros(self.num_envs, np.float32)
        self._prev_done = np.full(self.num_envs, prev_done, np.bool_)

    def reset(self) -> TimeStep:
        self._require_sync("reset")
        obs, _ = self._pool.reset()
        if self._cast is not None:
            obs = obs.astype(self._cast)
        self._reset_tracking(prev_done=False)
        n = self.num_envs
        false = np.zeros(n, np.bool_)
        return TimeStep(
            observation=obs,
            reward=np.zeros(n, np.float32),
            terminated=false,
            truncated=false,
            first=np.ones(n, np.bool_),
            final_observation=obs,
            episode_return=np.zeros(n, np.float32),
            episode_length=np.zeros(n, np.int32),
            episode_end=false,
        )

    def step(self, actions: np.ndarray) -> TimeStep:
        if self.batch_size != self.num_envs:
            self._require_sync("step")
        actions = self._check(actions, self._shape)
        obs, reward, terminated, truncated, info = self._pool.step(actions)
        if self._cast is not None:
            obs = obs.astype(self._cast)
        # Sync mode returns every env in env_id order: whole-array updates, no gathers.
        done = terminated | truncated
        if self._episodic_life:
            first = self._prev_done
            self._prev_done = done
            end = done & ((info["terminated"] != 0) | truncated)
        else:
            first = info["elapsed_step"] == _ZERO_INT
            end = done
        episode_return = self._return + info.get("reward", reward)
        self._return = np.where(end, _ZERO, episode_return)
        return TimeStep(
            obs, reward, terminated, truncated, first, obs,
            episode_return, info["elapsed_step"], end,
        )  # fmt: skip

    def async_reset(self) -> None:
        self._reset_tracking(prev_done=True)  # the reset observations come out as `first`
        self._pool.async_reset()

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        # The ids array recv() returned is valid by construction (unless mutated in place);
        # check any other.
        if env_ids is not self._last_ids and not (
            env_ids.__class__ is np.ndarray
            and env_ids.dtype == _INT32
            and env_ids.ndim == 1
            and env_ids.size
            and env_ids.view(_UINT32).max() < self.num_envs
        ):
            env_ids = check_env_ids(env_ids, None, self.num_envs)
        self._pool.send(self._check(actions, env_ids.shape), env_ids)

    def recv(self) -> tuple[TimeStep, np.ndarray]:
        obs, reward, terminated, truncated, info = self._pool.recv()
        if self._cast is not None:
            obs = obs.astype(self._cast)
        ids = self._last_ids = info["env_id"]
        done = terminated | truncated
        if self._episodic_life:
            first = self._prev_done.take(ids)
            self._prev_done.put(ids, done)
            end = done & ((info["terminated"] != 0) | truncated)
        else:
            first = info["elapsed_step"] == _ZERO_INT
            end = done
        episode_return = self._return.take(ids) + info.get("reward", reward)
        self._return.put(ids, np.where(end, _ZERO, episode_return))
        return TimeStep(
            obs, reward, terminated, truncated, first, obs,
            episode_return, info["elapsed_step"], end,
        ), ids  # fmt: skip

    @property
    def xla_supported(self) -> bool:
        """Whether `xla()` works: False for tasks exchanging 64-bit arrays (MuJoCo's float64)
        while `jax_enable_x64` is off; use the host `recv`/`send` loop then."""
        import jax

        return jax.config.jax_enable_x64 or not _wide_fields(self._pool.spec)

    def xla(self) -> EnvpoolXla:
        """envpool's XLA interface, to run `recv -> policy -> send` inside one jit.

        Convert its outputs with `envpool_timestep`. Call `async_reset()` first.
        Discrete tasks get envpool's functions as they are. Continuous ones get `send`
        (and `step`) taking float32 actions `[n, *action_shape]`, clipped to the box, and
        `recv` giving observations of `spec.observation_dtype`. Tasks that exchange
        64-bit arrays (MuJoCo) raise RuntimeError unless `jax_enable_x64` is on.
        """
        wide = _wide_fields(self._pool.spec)
        if not self.xla_supported:
            raise RuntimeError(
                f"{self.spec.name}'s XLA interface exchanges 64-bit arrays ({', '.join(wide)}), "
                "which JAX cannot hold with jax_enable_x64 off: step it with recv()/send() "
                "on the host, or enable x64 (JAX_ENABLE_X64=1)"
            )
        raw = EnvpoolXla(*self._pool.xla())
        if self.spec.is_discrete and self._cast is None:
            return raw
        spec, obs_dtype = self.spec, jnp.dtype(self.spec.observation_dtype)
        action_dtype = self._pool.spec.action_array_spec["action"].dtype

        def convert(out):
            obs, reward, terminated, truncated, info = out
            return obs.astype(obs_dtype), reward, terminated, truncated, info

        def action(actions):
            return actions if spec.is_discrete else clip_action(spec, actions).astype(action_dtype)

        def recv(handle):
            handle, out = raw.recv(handle)
            return handle, convert(out)

        def send(handle, actions, env_ids):
            return raw.send(handle, action(actions), env_ids)

        def step(handle, actions, env_ids):
            handle, out = raw.step(handle, action(actions), env_ids)
            return handle, convert(out)

        return EnvpoolXla(raw.handle, recv, send, step)

    def close(self) -> None:
        self._pool.close()


def check_observation_space(name: str, space: Any) -> None:
    """Raises ValueError (one line) unless `space` holds one array (not a Dict/Tuple)."""
    shape = getattr(space, "shape", None)
    if shape is None or getattr(space, "dtype", None) is None:
        raise ValueError(
            f"{name} has {type(space).__name__} observations; podracer.envs supports "
            "single-array observations only"
        )


def make_envpool(
    task: str,
    num_envs: int,
    batch_size: int | None = None,
    seed: int = 0,
    *,
    max_episode_steps: int | None = None,
    atari: AtariOptions | None = None,
    **envpool_kwargs: Any,
) -> EnvpoolEnv:
    """Builds `num_envs` envpool environments of `task` (e.g. "CartPole-v1", "Pong-v5").

    Args:
      task: an envpool task id (`envpool.list_all_envs()`).
      num_envs: environments in the pool.
      batch_size: environments per `recv()` in async mode (None: num_envs, sync mode).
      seed: base seed (env i is seeded with seed + i by envpool).
      max_episode_steps: time limit that truncates (None: the task's default).
      atari: Atari wrapper options (envpool's defaults if None); Atari tasks only.
      **envpool_kwargs: other keys of the task's envpool config (e.g. `num_threads`,
        or the Atari options one by one, overriding `atari`).
    """
    batch_size = check_sizes(num_envs, batch_size)
    if not isinstance(seed, int | np.integer) or not -(2**31) <= seed < 2**31:
        raise ValueError(f"seed must be an int32, got {seed!r}")
    try:
        import envpool
    except ImportError as e:
        raise ImportError(
            "envpool environments need the envpool extra: "
            + install_command("podracer-envs", "envpool")
        ) from e
    all_tasks = envpool.list_all_envs()
    if task not in all_tasks:
        raise unknown_name(task, list(all_tasks), "envpool task")

    kwargs = dict(atari.as_kwargs()) if atari is not None else {}
    kwargs.update(envpool_kwargs)
    if max_episode_steps is not None:
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        kwargs["max_episode_steps"] = int(max_episode_steps)
    with warnings.catch_warnings():
        # gymnasium warns that float64 Box bounds are cast to float32: harmless.
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        task_spec = envpool.make_spec(task)
        allowed = sorted(set(task_spec.config._fields) - set(_OWNED_KEYS))
        unknown = sorted(set(kwargs) - set(allowed))
        if unknown:
            raise ValueError(f"envpool task {task!r} has no options {unknown}; allowed: {allowed}")
        action_fields = action_space_fields(f"envpool:{task}", task_spec.action_space)
        check_observation_space(f"envpool:{task}", task_spec.observation_space)
        pool = envpool.make(
            task, env_type="gymnasium", num_envs=num_envs, batch_size=batch_size,
            seed=int(seed), **kwargs,
        )  # fmt: skip
        observation_space = pool.observation_space  # built (and warned about) lazily
    config = pool.config
    obs_dtype = np.dtype(observation_space.dtype)
    spec = EnvSpec(
        name=f"envpool:{task}",
        observation_shape=tuple(observation_space.shape),
        # JAX keeps 32 bits by default: float64 (MuJoCo) observations are cast to float32.
        observation_dtype="float32" if obs_dtype == np.float64 else obs_dtype.name,
        max_episode_steps=int(config["max_episode_steps"]),
        **action_fields,
    )
    return EnvpoolEnv(pool, spec, num_envs, batch_size, bool(config.get("episodic_life", False)))
