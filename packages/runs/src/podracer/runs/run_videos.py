"""A run's films of greedy episodes, one room of `Run` (`Run.videos`):
`videos/<env steps>.mp4` in the run directory every `video_interval` env steps (and at
the end), written by process 0. `Run` decides when one is due (`run.due("video")`);
this room checks before anything compiles that the env's observations have a picture
and that the video extra is installed, and keeps the `Recorder` (its env and jitted
policy) between films.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from podracer.agents import ConfigError
from podracer.runs.config import RunConfig
from podracer.runs.directory import RunDir


class RunVideos:
    """The films of the run `config` names, in `directory`; only `is_writer` films."""

    def __init__(self, config: RunConfig, directory: RunDir, is_writer: bool):
        self._config = config
        self._dir = directory
        self._is_writer = is_writer
        self._recorder = None  # made at the first film: an env and the policy's program

    def check(self, spec: Any) -> None:
        """Fails with a one-line error when videos are asked for and cannot be made:
        observations without a picture, or no video writer installed."""
        if not self._config.video_interval:
            return
        from podracer.envs import render
        from podracer.runs.video import check_video_extra

        blank = np.zeros(spec.observation_shape, spec.observation_dtype)
        try:
            render(spec, blank)
        except ValueError as e:
            raise ConfigError(f"{type(self._config).__name__}.video_interval: {e}") from None
        check_video_extra()

    def record(self, agent: Any, params: Any, env_steps: int) -> str | None:
        """Writes `videos/<env_steps>.mp4` of greedy episodes (process 0; None elsewhere).
        `params` as the runtime holds them (replicated, one per member: member 0 is
        filmed)."""
        if not self._is_writer:
            return None
        import jax

        from podracer.runs.video import Recorder

        local = jax.tree.map(lambda x: x.addressable_shards[0].data, params)  # this host's copy
        if self._config.num_members > 1:
            local = jax.tree.map(lambda x: x[0], local)
        if self._recorder is None:
            self._recorder = Recorder(agent, self._config.env, self._config.video_episodes,
                                      env_kwargs=self._config.env_kwargs)  # fmt: skip
        path = os.path.join(self._dir.videos, f"{env_steps}.mp4")
        return self._recorder.record(path, local, seed=self._config.seed)

    def close(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
