"""Any registered gymnasium id as a `HostEnv` (Sebulba): `make_host("gymnasium:CartPole-v1", 8)`.

`num_envs` copies run in one gymnasium vector env (`gymnasium.make_vec`), chosen by
`vectorization_mode`:

* "vector_entry_point": the id's own batched implementation (`spec.vector_entry_point`,
  e.g. CartPole's `CartPoleVectorEnv`, NumPy over the whole batch: ~80x the steps per
  second of a Python loop over copies at 1024 envs).
* "sync": copies stepped one after another in this process.
* "async": one worker process per env. Each is a fork of this process (a JAX process on
  an accelerator host costs ~800 MB per fork), so async workers are capped: the workers of
  all this process's open async envs together may number at most twice its CPUs, and at
  least 16 (two lanes of 8 envs on a small machine). More workers than that add no
  throughput (each steps one env, then waits on a pipe) but add memory: 4 Sebulba actors
  x 256 envs once forked 1024 processes and ran a 40 GB host out of memory. The cap
  counts every open async env of the process, as those actors' envs together did.
  Beyond it "async" is refused, naming "sync".
* "auto" (the default): "vector_entry_point" where the id has a NumPy one whose spaces are
  those of `gymnasium.make(id)` (not phys2d's JAX vector envs, which would run JAX on the
  default device, nor ale-py's `AtariVectorEnv`, whose preprocessed frames are not the
  id's raw ones: use `ale:<Game>` for it); else "async" within the cap, else "sync".

Auto-reset. "sync" and "async" reset an ended episode within the step that ends it
(`AutoresetMode.SAME_STEP`): the step returns the next episode's first observation, and
the ended episode's last one is in `info["final_obs"]` (where `info["_final_obs"]`), which
becomes `final_observation`. So there is no dummy transition (`transition_mask` is all
True, as for a JaxEnv), and `first` is `terminated | truncated` (all True after a reset).
Native vector envs reset on the *next* step (`AutoresetMode.NEXT_STEP`): the step after an
episode's end ignores the action and returns the next episode's first observation with
reward 0. As for envpool, that step is `first=True`, neither terminated nor truncated
(`transition_mask` False: no agent learns from it), its reward and length do not count
towards the statistics, and `final_observation` is `observation` (the step that ends an
episode returns its last observation).

* Asynchronous stepping: `send` calls the vector env's `step_async`, which returns at
  once (async mode: the workers step while the actor computes the other lane's actions);
  `recv` calls `step_wait`. Sync and native modes step in `send`. Every call steps all `num_envs`
  envs, so `batch_size` must be `num_envs` (Sebulba's `async_envs` makes two lanes).
* Spec: `Box` observation spaces only (a Dict or Tuple space is refused, naming it: wrap
  the env, e.g. `gymnasium.wrappers.FlattenObservation`, and register the wrapped id);
  uint8 observations stay uint8 (images), any other dtype becomes float32, as envpool's
  adapter does. Actions: `Discrete` from 0 (int32) or a bounded `Box` (float32, clipped to
  the box before the env sees it). `max_episode_steps`: the id's time limit
  (`gymnasium.spec(id).max_episode_steps`) or a `max_episode_steps` keyword, which adds or
  replaces gymnasium's `TimeLimit`.
* An id with no time limit (max_episode_steps None, so `spec.can_truncate` is False) reports
  every episode end as `terminated`: agents bootstrap from `final_observation` only where
  the spec can truncate, and would otherwise bootstrap a `truncated` step from the next
  episode's first observation. Pass `max_episode_steps` to keep truncation.
* `terminated` and `truncated` come from gymnasium (a step both terminal and at the time
  limit is `terminated` only); `episode_return` / `episode_length` are tracked here from
  the raw rewards (`podracer.envs.stats`), final where `terminated | truncated`.
* Seeds: env i is seeded with `seed + i` at the first reset; later resets continue each
  env's random stream. A native vector env takes `seed` for its batch (CartPole's draws
  every env's start from one generator), so its envs do not replay the sync envs'.
* Ids: any key of `gymnasium.registry`; `module:id` imports `module` first (which
  registers the id), e.g. `gymnasium:ale_py:ALE/Pong-v5`, or your own package's ids.
* Async workers start with multiprocessing's default context (fork on Linux before
  Python 3.14) unless `context=` names another ("forkserver", "spawn": those need the
  main script guarded by `if __name__ == "__main__":`). JAX warns on any fork once its
  backend is up; the adapter silences that warning while it starts the workers, which run
  gymnasium code only and never JAX.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from podracer.envs.actions import action_space_fields
from podracer.envs.checks import check_actions
from podracer.envs.checks import check_send
from podracer.envs.checks import check_whole_batch
from podracer.envs.checks import whole_batch_actions
from podracer.envs.extras import install_command
from podracer.envs.imports import import_module
from podracer.envs.imports import import_path_of
from podracer.envs.names import unknown_name
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep

PREFIX = "gymnasium:"
VECTORIZATION_MODES = ("auto", "vector_entry_point", "async", "sync")
ASYNC_WORKERS_PER_CPU = 2  # the cap on async workers (see the module's docstring)
MIN_ASYNC_WORKERS = 16  # the cap on a small machine: two lanes of 8 envs
_INT32 = np.dtype(np.int32)
_UINT32 = np.dtype(np.uint32)


_async_lock = threading.Lock()  # Sebulba's actor threads may build envs at once
_async_workers = 0  # the worker processes of this process's open async envs


def max_async_workers() -> int:
    """The cap on async workers: `ASYNC_WORKERS_PER_CPU` per CPU this process may use, and
    at least `MIN_ASYNC_WORKERS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(ASYNC_WORKERS_PER_CPU * cpus, MIN_ASYNC_WORKERS)


def _reserve_async(name: str, num_envs: int, refuse: bool) -> bool:
    """Counts `num_envs` more async workers if the cap allows; else False, or ValueError
    (one line) where `refuse`."""
    global _async_workers
    with _async_lock:
        cap, running = max_async_workers(), _async_workers
        if running + num_envs <= cap:
            _async_workers += num_envs
            return True
    if refuse:
        raise ValueError(
            f"{name}: vectorization_mode='async' would fork {num_envs} worker processes "
            f"(with {running} already running), over the cap of {cap} (2 per CPU, at least "
            f"{MIN_ASYNC_WORKERS}; each fork of a JAX process costs memory): use "
            f"vectorization_mode='sync' or fewer envs"
        )
    return False


def _release_async(num_envs: int) -> None:
    global _async_workers
    with _async_lock:
        _async_workers -= num_envs


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def _import_gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError as e:
        raise ImportError(
            "gymnasium environments need the gymnasium extra: "
            + install_command("podracer-envs", "gymnasium")
        ) from e
    return gymnasium


def split_task(task: str) -> tuple[str | None, str]:
    """`"module:Env-v0"` -> `("module", "Env-v0")`; `"Env-v0"` -> `(None, "Env-v0")`."""
    module, sep, env_id = task.rpartition(":")
    return (module, env_id) if sep else (None, task)


def resolve_task(task: str) -> str:
    """The gymnasium id of `task` (after importing its module, if it names one).

    Raises ImportError (one line) when the module cannot be imported, and ValueError (one
    line, with close matches) when the id is not in `gymnasium.registry`.
    """
    gymnasium = _import_gymnasium()
    module, env_id = split_task(task)
    if module is not None:  # one line for any failure (podracer.envs.imports)
        import_module(module, f"{PREFIX}{task}")
    if env_id not in gymnasium.registry:
        names = [PREFIX + k for k in gymnasium.registry]
        raise unknown_name(PREFIX + task, names, "gymnasium environment")
    return env_id


def check_observation_space(name: str, space: Any) -> str:
    """The spec's observation dtype for a gymnasium `Box` ("uint8" or "float32"); raises
    ValueError (one line, naming the space) for any other space."""
    if type(space).__name__ != "Box":
        raise ValueError(
            f"{name} has a {type(space).__name__} observation space ({space}); podracer.envs "
            "supports Box observations only (wrap it, e.g. gymnasium.wrappers."
            "FlattenObservation, and register the wrapped id)"
        )
    return "uint8" if np.dtype(space.dtype) == np.uint8 else "float32"


class GymnasiumEnv:
    """A `HostEnv` over a gymnasium vector env (same-step auto-reset, or next-step for a
    native vector env); build it with `make_gymnasium` (or `make_host("gymnasium:<id>",
    ...)`). `vectorization_mode` is the mode chosen (never "auto")."""

    def __init__(self, envs: Any, spec: EnvSpec, num_envs: int, seed: int, mode: str) -> None:
        self.spec = spec
        self.num_envs = num_envs
        self.batch_size = num_envs
        self.vectorization_mode = mode
        self._envs = envs
        self._seed: int | None = seed  # used by the first reset only
        self._ids = np.arange(num_envs, dtype=np.int32)
        self._obs_dtype = np.dtype(spec.observation_dtype)
        self._action_dtype = np.dtype(envs.single_action_space.dtype)
        self._stats = init_episode_stats((num_envs,), np)
        self._pending: str | None = None  # "reset" or "step": what the next recv() returns
        self._stepped: tuple | None = None  # sync mode: the step that send() took
        self._next_step = mode == "vector_entry_point"  # NEXT_STEP auto-reset
        self._prev_done = np.zeros(num_envs, np.bool_)  # next-step: the last step ended
        self._workers = None
        if mode == "async":  # counted by make_gymnasium; released at close or collection
            self._workers = weakref.finalize(self, _release_async, num_envs)

    @property
    def envs(self) -> Any:
        """The underlying gymnasium vector env (for what the adapter does not cover)."""
        return self._envs

    # -- conversions ------------------------------------------------------------------

    def _obs(self, obs: Any) -> np.ndarray:
        return np.asarray(obs).astype(self._obs_dtype, copy=False)

    def _reset_timestep(self, obs: Any) -> TimeStep:
        self._stats = init_episode_stats((self.num_envs,), np)
        self._prev_done = np.zeros(self.num_envs, np.bool_)
        obs = self._obs(obs)
        n = self.num_envs
        false = np.zeros(n, np.bool_)
        return TimeStep(
            observation=obs,
            reward=np.zeros(n, np.float32),
            terminated=false,
            truncated=false.copy(),
            first=np.ones(n, np.bool_),
            # A distinct array: Sebulba keeps final_observation unless it *is* observation.
            final_observation=obs.copy(),
            episode_return=np.zeros(n, np.float32),
            episode_length=np.zeros(n, np.int32),
            episode_end=false.copy(),
        )

    def _step_timestep(self, out: tuple) -> TimeStep:
        obs, reward, terminated, truncated, info = out
        obs = self._obs(obs)
        reward = np.asarray(reward, np.float32)
        terminated = np.asarray(terminated, np.bool_)
        truncated = np.asarray(truncated, np.bool_)
        done = terminated | truncated
        if self.spec.can_truncate:
            truncated = truncated & ~terminated
        else:  # no known time limit: see the module's docstring
            terminated, truncated = done, np.zeros_like(done)
        if self._next_step:  # this step's observation ends the episode; the next one resets
            final, first = obs, self._prev_done
            self._prev_done = done
            self._stats, emitted = update_episode_stats(self._stats, reward, done, ~first)
        else:
            final, first = obs.copy(), done
            ended = info.get("_final_obs")
            if ended is not None:
                last = info["final_obs"]
                for i in np.flatnonzero(ended):
                    final[i] = last[i]
            self._stats, emitted = update_episode_stats(self._stats, reward, done)
        return TimeStep(
            observation=obs,
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            first=first,
            final_observation=final,
            episode_return=emitted.episode_return,
            episode_length=emitted.episode_length,
            episode_end=done,
        )

    def _actions(self, actions: Any) -> np.ndarray:
        a = actions
        if (  # fast path: discrete int32 actions in range (negatives view as huge unsigned)
            self.spec.is_discrete
            and a.__class__ is np.ndarray
            and a.dtype == _INT32
            and a.shape == (self.num_envs,)
            and a.view(_UINT32).max() < self.spec.num_actions
        ):
            return a
        # Box actions are clipped to the bounds here.
        return check_actions(a, self.num_envs, self.spec).astype(self._action_dtype, copy=False)

    # -- HostEnv -----------------------------------------------------------------------

    def _drain(self) -> None:
        """Waits for an outstanding async reset or step (its results are dropped)."""
        pending, self._pending, self._stepped = self._pending, None, None
        if pending is not None and self.vectorization_mode == "async":
            self._envs.reset_wait() if pending == "reset" else self._envs.step_wait()

    def _reset_seed(self) -> int | None:
        seed, self._seed = self._seed, None
        return seed

    def reset(self) -> TimeStep:
        self._drain()
        obs, _ = self._envs.reset(seed=self._reset_seed())
        return self._reset_timestep(obs)

    def step(self, actions: np.ndarray) -> TimeStep:
        if self._pending is not None:
            raise RuntimeError(
                "step() after async_reset() or send(): take the pending result with recv() "
                "first, or call reset()"
            )
        return self._step_timestep(self._envs.step(self._actions(actions)))

    def async_reset(self) -> None:
        self._drain()
        seed = self._reset_seed()
        if self.vectorization_mode == "async":
            self._envs.reset_async(seed=seed)
        else:
            self._stepped = self._envs.reset(seed=seed)
        self._pending = "reset"

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        check_send(self._pending)
        actions = whole_batch_actions(actions, env_ids, self._ids, self.num_envs,
                                      "a gymnasium vector env")  # fmt: skip
        actions = self._actions(actions)
        if self.vectorization_mode == "async":
            self._envs.step_async(actions)
        else:
            self._stepped = self._envs.step(actions)
        self._pending = "step"

    def recv(self) -> tuple[TimeStep, np.ndarray]:
        pending, self._pending = self._pending, None
        if pending is None:
            raise RuntimeError("recv() needs async_reset() or send(actions, env_ids) first")
        if self.vectorization_mode == "async":
            out = self._envs.reset_wait() if pending == "reset" else self._envs.step_wait()
        else:
            out, self._stepped = self._stepped, None
        if pending == "reset":
            return self._reset_timestep(out[0]), self._ids
        return self._step_timestep(out), self._ids

    def close(self) -> None:
        if getattr(self._envs, "closed", False):
            return
        try:
            self._drain()  # a last send() (an actor's) may still be stepping
        except Exception:  # noqa: BLE001 - a broken worker: terminate instead
            self._envs.close(terminate=True)
        else:
            self._envs.close()
        finally:
            if self._workers is not None:
                self._workers()  # the workers are gone: uncount them (once)


def _max_steps(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}: max_episode_steps must be an int >= 1, got {value!r}")
    return int(value)


def make_gymnasium(
    task: str,
    num_envs: int,
    batch_size: int | None = None,
    seed: int = 0,
    vectorization_mode: str = "auto",
    context: str | None = None,
    **make_kwargs: Any,
) -> GymnasiumEnv:
    """Builds `num_envs` copies of the gymnasium id `task` as a `HostEnv`.

    Args:
      task: a key of `gymnasium.registry` (e.g. "CartPole-v1"), or "module:id" to import
        `module` first (it registers the id).
      num_envs: environments in the vector env.
      batch_size: must be `num_envs` (or None): every step steps all envs.
      seed: env i is seeded with `seed + i` (an int >= 0).
      vectorization_mode: "auto" (the id's native vector env if it has one, else "async"
        within the cap on workers, else "sync"), "vector_entry_point" (the id's native
        vector env), "async" (a worker process per env, stepped while the caller
        computes) or "sync" (stepped in this process); see the module's docstring.
      context: the multiprocessing start method of async workers (None: the default).
      **make_kwargs: keyword arguments of the env's constructor, and gymnasium.make's
        `max_episode_steps` (a time limit that truncates).
    """
    name = PREFIX + task
    num_envs = _check_arguments(name, num_envs, batch_size, vectorization_mode, context, seed)
    if make_kwargs.get("max_episode_steps") is not None:
        _max_steps(name, make_kwargs["max_episode_steps"])
    gymnasium = _import_gymnasium()
    env_id = resolve_task(task)
    spec, spaces = _probe_spec(gymnasium, name, env_id, make_kwargs)
    mode = vectorization_mode
    if mode in ("auto", "vector_entry_point"):
        envs = _make_native(gymnasium, name, env_id, num_envs, spaces, make_kwargs, mode)
        if envs is not None:
            return GymnasiumEnv(envs, spec, num_envs, int(seed), "vector_entry_point")
        mode = "async"
    if mode == "async" and not _reserve_async(name, num_envs, vectorization_mode == "async"):
        mode = "sync"  # "auto" over the cap on async workers
    try:
        envs = _make_vector(gymnasium, env_id, num_envs, mode, context, make_kwargs)
    except BaseException:
        if mode == "async":
            _release_async(num_envs)
        raise
    return GymnasiumEnv(envs, spec, num_envs, int(seed), mode)


def _make_native(
    gymnasium,
    name: str,
    env_id: str,
    num_envs: int,
    spaces: tuple[Any, Any],
    make_kwargs: dict[str, Any],
    mode: str,
) -> Any:
    """The id's own vector env (`vector_entry_point`), or None under "auto" where it has
    none that fits (see the module's docstring); "vector_entry_point" refuses in one line."""
    entry = gymnasium.spec(env_id).vector_entry_point
    where = entry if isinstance(entry, str) else import_path_of(entry)
    why = None
    if entry is None:
        why = "has no vector entry point (gymnasium.spec(id).vector_entry_point is None)"
    elif "jax" in str(where).lower():
        why = f"has a JAX vector entry point ({where}), which would run JAX on the default device"
    envs = None
    if why is None:
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings(
                    "ignore", message=".*precision lowered.*", category=UserWarning
                )
                envs = gymnasium.make_vec(
                    env_id, num_envs, vectorization_mode="vector_entry_point", **make_kwargs
                )
        except Exception as e:  # noqa: BLE001 - "auto" falls back; the mode refuses
            why = f"cannot build its vector entry point {where} ({_one_line(e)})"
    if envs is not None and (envs.single_observation_space, envs.single_action_space) != spaces:
        envs.close()
        envs = None
        why = f"has a vector entry point {where} whose spaces are not gymnasium.make's"
    if envs is None and mode == "vector_entry_point":
        raise ValueError(f"{name} {why}: use vectorization_mode 'sync' or 'async' (or 'auto')")
    return envs


def _check_arguments(
    name: str,
    num_envs: int,
    batch_size: int | None,
    vectorization_mode: str,
    context: str | None,
    seed: int,
) -> int:
    """`num_envs`, checked with the other arguments (one line naming the bad one)."""
    steps = "a gymnasium vector env steps all its envs"
    num_envs = check_whole_batch(name, num_envs, batch_size, steps, "two vector envs")
    if vectorization_mode not in VECTORIZATION_MODES:
        raise ValueError(
            f"{name}: vectorization_mode must be one of {list(VECTORIZATION_MODES)}, got "
            f"{vectorization_mode!r}"
        )
    methods = multiprocessing.get_all_start_methods()
    if context is not None and (
        vectorization_mode not in ("async", "auto") or context not in methods
    ):
        raise ValueError(
            f"{name}: context must be None or, with vectorization_mode 'async' or 'auto', one of "
            f"{methods}, got {context!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{name}: seed must be an int >= 0, got {seed!r}")
    return num_envs


def _probe_spec(
    gymnasium, name: str, env_id: str, make_kwargs: dict[str, Any]
) -> tuple[EnvSpec, tuple[Any, Any]]:
    """The spec of one env built first (its constructor checks the keywords and gives the
    spaces, before any worker process starts), and its observation and action spaces."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        try:
            probe = gymnasium.make(env_id, **make_kwargs)
        except TypeError as e:
            raise ValueError(f"{name}: {_one_line(e)}") from None
        except gymnasium.error.DependencyNotInstalled as e:
            raise ImportError(f"{name}: {_one_line(e)}") from None
    try:
        observation_space, action_space = probe.observation_space, probe.action_space
        max_steps = probe.spec.max_episode_steps if probe.spec is not None else None
    finally:
        probe.close()
    obs_dtype = check_observation_space(name, observation_space)
    return EnvSpec(
        name=name,
        observation_shape=tuple(observation_space.shape),
        observation_dtype=obs_dtype,
        max_episode_steps=None if max_steps is None else _max_steps(name, max_steps),
        **action_space_fields(name, action_space),
    ), (observation_space, action_space)


def _make_vector(
    gymnasium,
    env_id: str,
    num_envs: int,
    vectorization_mode: str,
    context: str | None,
    make_kwargs: dict[str, Any],
):
    """gymnasium's vector env, resetting in the step that ends an episode."""
    vector_kwargs: dict[str, Any] = {"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP}
    if vectorization_mode == "async" and context is not None:
        vector_kwargs["context"] = context
    with warnings.catch_warnings():
        # Workers run gymnasium code only, never JAX (see the module's docstring).
        warnings.filterwarnings(
            "ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning
        )
        warnings.filterwarnings(
            "ignore", message=".*multi-threaded.*fork", category=DeprecationWarning
        )
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        return gymnasium.make_vec(
            env_id, num_envs, vectorization_mode=vectorization_mode,
            vector_kwargs=vector_kwargs, **make_kwargs,
        )  # fmt: skip
