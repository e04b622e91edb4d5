"""ale-py's native multithreaded Atari vector env as a `HostEnv`: `make_host("ale:Pong", 8)`.

`ale_py.vector_env.AtariVectorEnv` (ale-py >= 0.12) steps `num_envs` emulators on a C++
thread pool with envpool's preprocessing (frame skip with max-pooling, no-op starts, fire
reset, grey 84x84 frames, frame stacks), without envpool. Names are `ale:<Game>`, the
game as gymnasium's ALE ids spell it ("ale:Pong", "ale:MsPacman"); any case, with or
without underscores ("ale:ms_pacman"), reaches ale-py's ROM id.

* Options: envpool's `AtariOptions` (the same defaults), as `atari=AtariOptions(...)` or
  one by one as keywords overriding it (`make_host("ale:Breakout", 8, episodic_life=True)`),
  plus ale-py's `num_threads` (None: one per env up to the CPUs this process may use; pass
  fewer where several actor threads each step their own env) and `use_fire_reset`
  (press FIRE after a reset in games that need it; default True, as ale-py and envpool).
  `max_episode_steps` (default 27000, envpool's) becomes ale-py's frame limit
  `max_episode_steps * frame_skip`, which counts the reset's no-op and FIRE frames too: an
  episode is truncated after at most `max_episode_steps` steps.
* Observations: uint8 `[stack_num, img_height, img_width]`; with `gray_scale=False` ale-py's
  `[stack, H, W, 3]` becomes envpool's `[3 * stack, H, W]` (frame-major), so the atari
  presets and `render` read both sources alike. Actions: int32, the game's minimal set
  (all 18 with `full_action_space`).
* Next-step reset: after a game ends (terminated, or truncated at the frame limit) ale-py
  ignores the next action and returns the next game's first observation with reward 0
  (gymnasium's `AutoresetMode.NEXT_STEP`, as envpool). The adapter marks that step
  `first=True`, neither terminated nor truncated, so `TimeStep.transition_mask` is False
  there; `final_observation` is `observation` (the observation of the ending step).
* Episodic life: ale-py's own `episodic_life=True` starts a whole new game at every lost
  life (lives back to full: an agent would never see a game's later lives), so it is not
  used. The adapter builds the env without it and detects a lost life from `info["lives"]`
  dropping: that step is `terminated` (no bootstrap) and `first` (the observation starts
  the next life; the game continues, with no dummy step), while `episode_end`,
  `episode_return` and `episode_length` stay per game, as envpool's adapter keeps them.
* Rewards: ale-py's clipping is off; with `reward_clip` the adapter clips rewards to their
  sign on the host, so the statistics (`podracer.envs.stats`, over the real transitions of
  a game) are of the unclipped score.
* Seeds: env i is seeded with `seed + i` at the first reset; later resets continue each
  env's random stream.
* Stepping: `send` starts ale-py's step (the threads step while the caller computes) and
  `recv` waits for it. Every call steps all `num_envs` envs, so `batch_size` must be
  `num_envs` (Sebulba's `async_envs` overlaps two envs): ale-py's own `batch_size <
  num_envs` mode steps only the envs of its last `recv`, with no env ids to `send` (in
  0.12.1 some envs were never returned).

ale-py reports `info` keys `env_id`, `lives`, `frame_number` and `episode_frame_number`
(int32); `episode_frame_number` counts the reset's no-op frames, so it is not a step count.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import numpy as np

from podracer.envs.checks import check_actions
from podracer.envs.checks import check_send
from podracer.envs.checks import check_whole_batch
from podracer.envs.checks import whole_batch_actions
from podracer.envs.envpool_env import AtariOptions
from podracer.envs.extras import install_command
from podracer.envs.names import unknown_name
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep

PREFIX = "ale:"
DEFAULT_MAX_EPISODE_STEPS = 27000  # 108000 frames at frame_skip 4, as envpool's Atari tasks
_INT32 = np.dtype(np.int32)
_UINT32 = np.dtype(np.uint32)
_ATARI_FIELDS = tuple(f.name for f in dataclasses.fields(AtariOptions))
_OPTIONS = (*_ATARI_FIELDS, "num_threads", "use_fire_reset")


def _import_ale() -> Any:
    try:
        from ale_py import roms
    except ImportError as e:
        raise ImportError(
            "ale: environments need the atari extra: " + install_command("podracer-envs", "atari")
        ) from e
    return roms


def _key(game: str) -> str:
    return game.replace("_", "").lower()


def ale_games() -> list[str]:
    """The games `make_host("ale:<Game>")` accepts, spelled as gymnasium's ALE ids do."""
    roms = _import_ale()
    return sorted(ale_name(rom) for rom in roms.get_all_rom_ids())


def resolve_game(task: str) -> str:
    """ale-py's ROM id of the game `task` ("Pong" -> "pong", "MsPacman" -> "ms_pacman");
    ValueError (one line, with close matches) for an unknown game."""
    roms = _import_ale()
    ids = {_key(rom): rom for rom in roms.get_all_rom_ids()}
    rom = ids.get(_key(task)) if isinstance(task, str) else None
    if rom is None:
        raise unknown_name(PREFIX + str(task), [PREFIX + g for g in ale_games()], "ALE game")
    return rom


class AleEnv:
    """A `HostEnv` over ale-py's `AtariVectorEnv`; build it with `make_ale` (or
    `make_host("ale:<Game>", ...)`).

    Per step the bookkeeping is a few whole-array NumPy operations per batch: `first` is
    the previous step's game end (the next-step reset), or a lost life under episodic
    life; the statistics count every step but the reset step.
    """

    def __init__(
        self,
        envs: Any,
        spec: EnvSpec,
        num_envs: int,
        seed: int,
        episodic_life: bool,
        reward_clip: bool,
    ) -> None:
        self.spec = spec
        self.num_envs = num_envs
        self.batch_size = num_envs
        self._envs = envs
        self._seed: int | None = seed  # used by the first reset only
        self._episodic_life = episodic_life
        self._reward_clip = reward_clip
        self._ids = np.arange(num_envs, dtype=np.int32)
        self._rgb = len(envs.single_observation_space.shape) == 4  # [stack, H, W, 3]
        self._pending: str | None = None  # "reset" or "step": what the next recv() returns
        self._reset_out: Any = None  # async_reset()'s observations, for recv()
        self._track(np.zeros(num_envs, np.int32))

    @property
    def envs(self) -> Any:
        """The underlying `AtariVectorEnv` (for what the adapter does not cover)."""
        return self._envs

    def _track(self, lives: np.ndarray) -> None:
        # New arrays: the caller may hold the old ones.
        self._prev_done = np.zeros(self.num_envs, np.bool_)  # the last step ended a game
        self._lives = np.asarray(lives, np.int32).copy()
        self._stats = init_episode_stats((self.num_envs,), np)

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        if not self._rgb:
            return obs
        n, stack, h, w, c = obs.shape
        return obs.transpose(0, 1, 4, 2, 3).reshape(n, stack * c, h, w)

    def _actions(self, actions: Any) -> np.ndarray:
        a = actions
        if (  # fast path: int32 actions in range (negatives view as huge unsigned)
            a.__class__ is np.ndarray
            and a.dtype == _INT32
            and a.shape == (self.num_envs,)
            and a.view(_UINT32).max() < self.spec.num_actions
        ):
            return a
        return check_actions(a, self.num_envs, self.spec)

    def _reset_timestep(self, out: tuple) -> TimeStep:
        obs, info = out
        obs = self._obs(obs)
        self._track(info["lives"])
        n = self.num_envs
        false = np.zeros(n, np.bool_)
        return TimeStep(
            observation=obs,
            reward=np.zeros(n, np.float32),
            terminated=false,
            truncated=false.copy(),
            first=np.ones(n, np.bool_),
            final_observation=obs,
            episode_return=np.zeros(n, np.float32),
            episode_length=np.zeros(n, np.int32),
            episode_end=false.copy(),
        )

    def _step_timestep(self, out: tuple) -> TimeStep:
        obs, reward, terminated, truncated, info = out
        lives = info["lives"]
        ids = info["env_id"]
        if not np.array_equal(ids, self._ids):  # all envs are returned, so far in id order
            order = np.argsort(ids)
            obs, reward, terminated, truncated = (
                x[order] for x in (obs, reward, terminated, truncated)
            )
            lives = lives[order]
        obs = self._obs(obs)
        raw = reward.astype(np.float32)
        truncated = truncated & ~terminated
        game_over = terminated | truncated
        reset_step = self._prev_done  # ale-py ignored the action and started a new game
        if self._episodic_life:
            lost = (lives < self._lives) & ~reset_step & ~game_over
            terminated = terminated | lost
            first = reset_step | lost
        else:
            first = reset_step
        self._prev_done, self._lives = game_over, lives
        self._stats, emitted = update_episode_stats(self._stats, raw, game_over, ~reset_step)
        return TimeStep(
            observation=obs,
            reward=np.sign(raw) if self._reward_clip else raw,
            terminated=terminated,
            truncated=truncated,
            first=first,
            final_observation=obs,
            episode_return=emitted.episode_return,
            episode_length=emitted.episode_length,
            episode_end=game_over,
        )

    # -- HostEnv -----------------------------------------------------------------------

    def _drain(self) -> None:
        """Waits for an outstanding step (its results are dropped)."""
        pending, self._pending, self._reset_out = self._pending, None, None
        if pending == "step":
            self._envs.recv()

    def _reset(self) -> tuple:
        seed, self._seed = self._seed, None
        return self._envs.reset(seed=seed)

    def reset(self) -> TimeStep:
        self._drain()
        return self._reset_timestep(self._reset())

    def step(self, actions: np.ndarray) -> TimeStep:
        if self._pending is not None:
            raise RuntimeError(
                "step() after async_reset() or send(): take the pending result with recv() "
                "first, or call reset()"
            )
        self._envs.send(self._actions(actions))
        return self._step_timestep(self._envs.recv())

    def async_reset(self) -> None:
        self._drain()
        self._reset_out = self._reset()  # ale-py resets synchronously
        self._pending = "reset"

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        check_send(self._pending)
        actions = whole_batch_actions(actions, env_ids, self._ids, self.num_envs,
                                      "ale-py's vector env")  # fmt: skip
        self._envs.send(self._actions(actions))
        self._pending = "step"

    def recv(self) -> tuple[TimeStep, np.ndarray]:
        pending, self._pending = self._pending, None
        if pending is None:
            raise RuntimeError("recv() needs async_reset() or send(actions, env_ids) first")
        if pending == "reset":
            out, self._reset_out = self._reset_out, None
            return self._reset_timestep(out), self._ids
        return self._step_timestep(self._envs.recv()), self._ids

    def close(self) -> None:
        if getattr(self._envs, "closed", False):
            return
        self._drain()  # a last send() (an actor's) may still be stepping
        self._envs.close()


def _check_int(name: str, field: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name}: {field} must be an int >= {low}, got {value!r}")
    return int(value)


def _check_bool(name: str, field: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{name}: {field} must be True or False, got {value!r}")
    return bool(value)


def _check_options(name: str, o: AtariOptions) -> None:
    for field in ("frame_skip", "stack_num", "img_height", "img_width"):
        _check_int(name, field, getattr(o, field), 1)
    _check_int(name, "noop_max", o.noop_max, 0)
    for field in ("episodic_life", "reward_clip", "gray_scale", "full_action_space"):
        _check_bool(name, field, getattr(o, field))
    p = o.repeat_action_probability
    if isinstance(p, bool) or not isinstance(p, int | float | np.number) or not 0 <= p <= 1:
        raise ValueError(f"{name}: repeat_action_probability must be in [0, 1], got {p!r}")


def _options(name: str, atari: Any, atari_kwargs: dict[str, Any]) -> AtariOptions:
    """`atari` (or the defaults) with `atari_kwargs` over it, every field checked."""
    unknown = sorted(set(atari_kwargs) - set(_ATARI_FIELDS))
    if unknown:
        raise ValueError(f"{name} has no options {unknown}; allowed: {sorted(_OPTIONS)}")
    if atari is not None and not isinstance(atari, AtariOptions):
        raise ValueError(f"{name}: atari must be an AtariOptions or None, got {atari!r}")
    options = dataclasses.replace(atari or AtariOptions(), **atari_kwargs)
    _check_options(name, options)
    return options


def default_num_threads(num_envs: int) -> int:
    """One thread per env, up to the CPUs this process may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(num_envs, cpus))


def make_ale(
    task: str,
    num_envs: int,
    batch_size: int | None = None,
    seed: int = 0,
    *,
    max_episode_steps: int | None = None,
    atari: AtariOptions | None = None,
    num_threads: int | None = None,
    use_fire_reset: bool = True,
    **atari_kwargs: Any,
) -> AleEnv:
    """Builds `num_envs` emulators of the Atari game `task` (e.g. "Pong", "Breakout").

    Args:
      task: an ALE game ("Pong", "MsPacman"; any case, underscores optional).
      num_envs: environments in the vector env.
      batch_size: must be `num_envs` (or None): every step steps all envs.
      seed: env i is seeded with `seed + i` (an int >= 0).
      max_episode_steps: the time limit that truncates (None: 27000 steps).
      atari: the preprocessing options (`AtariOptions()`, envpool's defaults, if None).
      num_threads: ale-py's worker threads (None: `default_num_threads(num_envs)`).
      use_fire_reset: press FIRE after a reset in games that need it.
      **atari_kwargs: `AtariOptions` fields one by one, overriding `atari`.
    """
    name = PREFIX + str(task)
    num_envs = check_whole_batch(name, num_envs, batch_size,
                                 "the adapter steps all of ale-py's envs", "two envs")  # fmt: skip
    options = _options(name, atari, atari_kwargs)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{name}: seed must be an int >= 0, got {seed!r}")
    if seed + num_envs > 2**31:
        raise ValueError(f"{name}: seed + num_envs must be <= 2**31 (int32 seeds), got {seed}")
    steps = DEFAULT_MAX_EPISODE_STEPS if max_episode_steps is None else max_episode_steps
    steps = _check_int(name, "max_episode_steps", steps, 1)
    if num_threads is None:
        num_threads = default_num_threads(num_envs)
    num_threads = _check_int(name, "num_threads", num_threads, 1)
    use_fire_reset = _check_bool(name, "use_fire_reset", use_fire_reset)
    rom = resolve_game(task)
    from ale_py.vector_env import AtariVectorEnv
    from gymnasium.vector import AutoresetMode

    envs = AtariVectorEnv(
        rom,
        num_envs,
        num_threads=num_threads,
        max_num_frames_per_episode=steps * options.frame_skip,
        repeat_action_probability=float(options.repeat_action_probability),
        full_action_space=options.full_action_space,
        autoreset_mode=AutoresetMode.NEXT_STEP,
        img_height=options.img_height,
        img_width=options.img_width,
        grayscale=options.gray_scale,
        stack_num=options.stack_num,
        frameskip=options.frame_skip,
        noop_max=options.noop_max,
        # Life losses are found from info["lives"] (see the module's docstring).
        episodic_life=False,
        life_loss_info=False,
        # Clipped on the host, so that the statistics stay unclipped.
        reward_clipping=False,
        use_fire_reset=use_fire_reset,
    )
    stack, h, w, *rgb = envs.single_observation_space.shape
    spec = EnvSpec(
        name=PREFIX + ale_name(rom),
        observation_shape=(stack * math.prod(rgb), h, w),
        observation_dtype="uint8",
        num_actions=int(envs.single_action_space.n),
        max_episode_steps=steps,
    )
    return AleEnv(envs, spec, num_envs, int(seed), options.episodic_life, options.reward_clip)


def ale_name(rom: str) -> str:
    """The game name of an ale-py ROM id: "ms_pacman" -> "MsPacman"."""
    return rom.title().replace("_", "")
