"""Videos of an agent's episodes: MP4 (imageio's ffmpeg, shipped by imageio-ffmpeg) or GIF.

`Recorder(agent, env_name)` plays `episodes` greedy episodes of a JaxEnv on device (one
compiled scan, reused) or of a HostEnv from Python, draws each observation with
`podracer.envs.render` and writes the episodes one after another. Runs record during
training with `--video-interval` (`videos/<env steps>.mp4` in the run directory); the
`podracer eval --video` tool records from a checkpoint.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from podracer.agents import ConfigError
from podracer.envs.extras import install_command

FPS = 30
RECORD_STEPS = 1000  # the longest episode recorded for envs without a time limit


def check_video_extra() -> None:
    """Fails in one line unless the video extra (imageio, imageio-ffmpeg) imports: called
    before anything trains or plays, so a missing extra loses no work."""
    try:
        import imageio.v3  # noqa: F401
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        raise ConfigError(
            "videos need the video extra: " + install_command("podracer-runs", "video")
        ) from None


def write_video(path: str | os.PathLike, frames: np.ndarray, fps: int = FPS) -> str:
    """Writes frames `[T, H, W, 3]` uint8 to `path` (.mp4: H.264, .gif: a looping GIF)."""
    check_video_extra()
    import imageio.v3 as iio

    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.path.splitext(path)[1]}"  # a reader never sees half a file
    if path.endswith(".gif"):
        iio.imwrite(tmp, frames, duration=1000 / fps, loop=0)
    else:
        with warnings.catch_warnings():
            # imageio-ffmpeg starts ffmpeg with subprocess, which forks and execs at once in
            # C; JAX's at-fork warning (meant for forks that run Python) does not apply.
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
            iio.imwrite(tmp, frames, fps=fps, plugin="FFMPEG", codec="libx264", macro_block_size=2)
    os.replace(tmp, path)
    return path


def episode_frames(spec: Any, observations: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Frames `[T', H, W, 3]` of each env's first episode, one after another: env i's
    observations `[:, i]` up to and including the step `done[:, i]` marks (all of them
    for an episode still running)."""
    from podracer.envs import render

    frames = []
    for i in range(observations.shape[1]):
        ends = np.flatnonzero(done[:, i])
        last = int(ends[0]) if ends.size else observations.shape[0] - 1
        frames.extend(render(spec, observations[t, i]) for t in range(last + 1))
    return np.stack(frames)


class Recorder:
    """Records `episodes` episodes of `agent` on `env_name` (a JaxEnv or HostEnv name, built
    with `env_kwargs`)."""

    def __init__(self, agent: Any, env_name: str, episodes: int = 1, max_steps: int = RECORD_STEPS,
                 greedy: bool = True, env_kwargs: dict[str, Any] | None = None):  # fmt: skip
        from podracer.envs import is_jax_env
        from podracer.envs import make_host

        self._agent, self._episodes, self._greedy = agent, episodes, greedy
        self.spec = agent.spec
        if is_jax_env(env_name):
            import jax

            from podracer.agents import jax_observations
            from podracer.envs import make

            env = make(env_name, **(env_kwargs or {}))
            steps = min(env.spec.max_episode_steps or max_steps, max_steps)
            self._record = jax.jit(jax_observations(agent, env, steps, greedy))
            self._env = None
        else:
            self._env = make_host(env_name, num_envs=episodes, seed=0, **(env_kwargs or {}))
            self._max_steps = max_steps

    def frames(self, params: Any, seed: int = 0) -> np.ndarray:
        """The episodes' frames `[T, H, W, 3]`, played with `params`."""
        import jax

        from podracer.agents import env_keys
        from podracer.agents import host_episodes

        key = jax.random.PRNGKey(seed)
        if self._env is None:
            observations, done = jax.device_get(self._record(params, env_keys(key, self._episodes)))
        else:
            played = host_episodes(self._agent, self._env, params, self._max_steps, self._greedy,
                                   key=key, record=self._episodes)  # fmt: skip
            observations, done = played.observations, played.done
        return episode_frames(self.spec, np.asarray(observations), np.asarray(done))

    def record(self, path: str | os.PathLike, params: Any, seed: int = 0) -> str:
        return write_video(path, self.frames(params, seed))

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
