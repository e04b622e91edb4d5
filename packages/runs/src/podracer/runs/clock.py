"""`RunClock`: when a run's loop steps happened, and the time figures made from that.

One definition of each figure, used by the progress line, metrics.jsonl, the summary and
`podracer plot` alike:

* SPS: env steps of this session per wall second, the compile left out. The compile is
  what the runtime measured and reported (`compiled`: Anakin's probe), else the whole
  first loop step (Sebulba's first update waits for the first compile), plus what was
  traced before the loop (`staged`: a sweep's check traces Anakin's chunk in advance).
* A row's time: when its env steps were made, interpolated within the loop step that
  made them (from the step's start, or the end of a compile measured inside it, to its
  end), not when the row was written after the rows before it.
* Elapsed: wall seconds of the whole run, earlier sessions of a resumed run included.
"""

from __future__ import annotations

import math
import time

import numpy as np


class RunClock:
    """Loop-step times of one session of a run; `budget`: its wall-clock budget in
    seconds (0: none)."""

    def __init__(self, budget: float = 0.0) -> None:
        self.budget = budget
        self.started = time.perf_counter()
        self.elapsed_before = 0.0  # wall seconds of the sessions before a resume
        self.restored_env_steps = 0  # where this session started counting
        self._step_start: float | None = None
        self._first_step: tuple[float, int] | None = None  # (end time, env steps) of step 1
        self._durations: list[float] = []  # seconds of each loop step of this session
        self._end = 0.0  # when the last loop step ended
        # (compile seconds, when it ended) as the runtime measured it (`compiled`).
        self._compiled: tuple[float, float] | None = None
        self._staged = 0.0  # compile work done before the loop (`staged`)
        self._row_mark: tuple[float, int] | None = None  # (time, env steps) of the last row

    def restored(self, elapsed: float, env_steps: int) -> None:
        """This session resumes a run that had run `elapsed` seconds to `env_steps`."""
        self.elapsed_before, self.restored_env_steps = float(elapsed), int(env_steps)

    def step_started(self) -> None:
        self._step_start = time.perf_counter()

    def compiled(self, compile_seconds: float) -> None:
        """The runtime compiled its programs inside the current loop step, in
        `compile_seconds`, and has just finished: SPS counts this session's env steps from
        now (work before, such as probing on a copy of the state, counts no steps), so a
        run of one loop step gets a true SPS and compile time. Without it, the first loop
        step is the compile."""
        self._compiled = (float(compile_seconds), time.perf_counter())

    def staged(self, seconds: float) -> None:
        """The runtime traced or lowered its programs before the loop, in `seconds` (a
        check that had to trace them): part of the compile figure, as it would be had the
        first call traced them, though no loop step holds it."""
        self._staged = float(seconds)

    def step_ended(self, env_steps: int) -> None:
        """The current loop step ended with `env_steps` env steps made in all."""
        now = time.perf_counter()
        self._durations.append(now - (self._step_start or now))
        self._end = now
        if self._first_step is None:
            self._first_step = (now, env_steps)

    def step_seconds(self) -> float:
        """Seconds since the current loop step started."""
        return time.perf_counter() - (self._step_start or self.started)

    @property
    def elapsed(self) -> float:
        return self.elapsed_before + self.session

    @property
    def session(self) -> float:
        """Wall seconds of this session (this process's part of the run)."""
        return time.perf_counter() - self.started

    @property
    def budget_spent(self) -> bool:
        """Whether this session's budget is spent. Each session of a run has its own: a
        resume with the budget runs that long again, so a long run is several bounded
        sessions (a machine's time limit) joined by resumes."""
        return 0 < self.budget <= self.session

    def row(self, steps: int, before: int, after: int) -> tuple[float, float]:
        """`(charts/SPS, timing/elapsed)` of a row at `steps` of the loop step that went
        from `before` to `after` env steps: SPS since the previous row, the first row's
        since the compile ended (NaN for a row that falls within the step that compiled,
        when the runtime did not say how long the compile took)."""
        now = time.perf_counter()
        if before < after:
            start = max(self._step_start or self.started, self._compile_end())
            now = start + (steps - before) / (after - before) * (self._end - start)
        elapsed = self.elapsed_before + now - self.started
        since = self._row_mark or self._first_step
        if self._row_mark is None and self._compiled is not None:
            since = (self._compiled[1], self.restored_env_steps)
        self._row_mark = (now, steps)
        if since is None or steps <= since[1]:
            return math.nan, elapsed
        return (steps - since[1]) / max(now - since[0], 1e-9), elapsed

    def sps(self, env_steps: int, now: float | None = None) -> float:
        """SPS of this session at `env_steps` (NaN until it can be known)."""
        now = time.perf_counter() if now is None else now
        if self._compiled is not None:
            steps = env_steps - self.restored_env_steps
            seconds = now - self._compiled[1]
            return steps / seconds if steps > 0 and seconds > 0 else math.nan
        if self._first_step is None or env_steps <= self._first_step[1]:
            return math.nan
        first_end, first_steps = self._first_step
        return (env_steps - first_steps) / max(now - first_end, 1e-9)

    def summary(self, env_steps: int) -> tuple[float, float]:
        """`(SPS, compile seconds)` of the session at its end."""
        sps, compiled = self._in_the_loop(env_steps)
        return sps, self._staged + compiled

    def _in_the_loop(self, env_steps: int) -> tuple[float, float]:
        """`(SPS, compile seconds within the loop)`: the runtime's measure, else the
        first loop step's excess over a typical one."""
        if self._compiled is not None:
            return self.sps(env_steps, self._end), self._compiled[0]
        if self._first_step is None:
            return math.nan, 0.0
        if len(self._durations) == 1:  # one step: nothing to tell the compile apart from
            return (env_steps - self.restored_env_steps) / max(self._durations[0], 1e-9), 0.0
        # The compile is the first step beyond a typical one: the median, as steps that
        # also evaluate or save would pull a mean up (to 0 compile on short runs).
        typical = float(np.median(self._durations[1:]))
        return self.sps(env_steps, self._end), max(0.0, self._durations[0] - typical)

    def _compile_end(self) -> float:
        return -math.inf if self._compiled is None else self._compiled[1]
