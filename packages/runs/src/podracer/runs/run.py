"""`Run`: the lifecycle around a runtime's loop, the same for Anakin and Sebulba.

    with Run.open(config, "anakin") as run:      # run dir (auto-named if none), reuse and
        ...build env, agent, programs...          #   resume checks: nothing compiled yet
        restored = run.restore(spec, train=..., runtime=...)   # newest good checkpoint
        run.check(spec, abstract_train)           # videos, init_from: before any compile
        state = run.warm_start(init(key)) if restored is None else ...
        run.begin(spec, "compiling the first chunk")           # config.json, writer, signals
        while run.running():
            state, metrics = step(state)
            run.advance(steps)                    # counts; budget, wall time, signals
            run.log(row)                          # when due: metrics.jsonl, TensorBoard
            run.maybe_save(spec, train, runtime_state)
        return run.finish(state)                 # summary line, `RunResult`

Rules it keeps: an existing run name needs `resume`; a resume of a missing run is an
error; a resume that changes a field defining what is learned is refused naming each
field (the others are recorded in `resumes.jsonl`); a checkpoint that does not restore
is reported, moved aside and the next older one used; the first SIGINT/SIGTERM ends the
run after the current loop step with a final checkpoint, the second exits at once;
multi-process runs agree on when to stop, so they save the same final checkpoint.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from podracer.runs import compile_cache
from podracer.runs import signals
from podracer.runs.clock import RunClock
from podracer.runs.config import RunConfig
from podracer.runs.provenance import provenance
from podracer.runs.result import RunResult
from podracer.runs.run_checkpoints import Restored
from podracer.runs.run_checkpoints import RunCheckpoints
from podracer.runs.run_opening import Opened
from podracer.runs.run_opening import open_checked
from podracer.runs.run_rows import RunRows
from podracer.runs.run_videos import RunVideos
from podracer.runs.signals import StopSignals

# What `Run.due` asks of each thing a step may be followed by: its config's interval.
_INTERVALS = {"log": "row_interval", "eval": "eval_interval", "video": "video_interval",
              "checkpoint": "checkpoint_interval"}  # fmt: skip


def _crossed(interval: int, before: int, after: int) -> bool:
    """Whether a multiple of `interval` lies in (before, after]."""
    return interval > 0 and after // interval > before // interval


class Run:
    """One run's directory, counters, writer, checkpoints, progress and stop signals."""

    def __init__(
        self,
        config: RunConfig,
        runtime: str,
        opened: Opened,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ):
        import jax

        self.config, self.runtime, self.dir = config, runtime, opened.directory
        self._lock = opened.lock  # the run directory's, on process 0
        # Programs loaded from JAX's persistent cache (its folder `opened.cache`) so far.
        self._cache_hits = compile_cache.CacheHits(opened.cache)
        self.process_index = jax.process_index()
        self.num_processes = jax.process_count()
        self.is_writer = self.process_index == 0
        self.step = 0  # loop steps so far (Orbax's step number)
        self.env_steps = 0
        self.interrupted = False
        self._changes = opened.changes  # fields a resume changed: {field: (old, new)}
        self._restored: dict[str, Any] | None = None
        self._restored_rows: int | None = None  # metric rows the restored checkpoint saw
        self._initial: str | None = None  # the checkpoint a fresh run started from
        self._warm: Any = None  # its train state, as `check` loaded it for `warm_start`
        self.checkpoints = RunCheckpoints(config, runtime, self.dir, self.is_writer)
        self.rows = RunRows(config, runtime, self.is_writer, on_row)
        self.videos = RunVideos(config, self.dir, self.is_writer)
        # A command line's handlers (and a signal they caught during start-up), or ours.
        self._signals = signals.installed() or StopSignals()
        self._signals.on_second = self._second_signal_message
        # When the loop's steps happened (SPS, elapsed, the session's budget): the
        # runtimes tell it when they compiled (`clock.compiled`) and read `step_seconds`.
        self.clock = RunClock(config.max_wall_seconds)
        self._last = False
        self._previous_env_steps = 0

    # -- opening: every check before anything is built or written --------------------

    @classmethod
    def open(
        cls,
        config: RunConfig,
        runtime: str,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ) -> Run:
        """The run `config` names, every check passed (`run_opening.open_checked`: the
        compile cache, the process group, the directory, its lock and a resume's
        changes) before anything is built or written.

        `on_row(row)` is called in this thread with each row `log` writes (on the
        writing process only), as `rows.history` holds it: `env_steps`, `seed` in a
        multi-seed run, and the metrics."""
        opened = open_checked(config, runtime)
        try:
            return cls(config, runtime, opened, on_row)
        except BaseException:
            opened.release()
            raise

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def restore(self, spec: Any, train: Any, runtime: Any = None) -> Restored | None:
        """The newest checkpoint of a resumed run that restores into the targets (arrays or
        `ShapeDtypeStruct`s with shardings); None for a new run, or a resumed run that never
        saved one. Sets `step` and `env_steps` to the checkpoint's."""
        if not self.config.resume:
            return None
        found = self.checkpoints.restore(spec, train, runtime)
        if found is None:
            return None
        restored, changes = found
        meta = restored.metadata
        self._changes = {**self._changes, **changes}
        self.step, self.env_steps = int(meta["step"]), int(meta["env_steps"])
        self._previous_env_steps = self.env_steps
        self.clock.restored(meta.get("elapsed", 0.0), self.env_steps)
        self._restored = {"step": int(meta["step"]), "env_steps": self.env_steps}
        self._restored_rows = meta.get("metric_rows")  # None: a checkpoint from before it
        return restored

    def check(self, spec: Any, train: Any) -> None:
        """The checks that need the env's spec and the agent's state, made before anything
        compiles so that bad input stays one line: videos can be made of this env; a fresh
        run's `config.init_from` names the same agent, trained on an env of the same spec,
        with params that fit `train` (this run's TrainState, or one per seed, as
        ShapeDtypeStructs with their shardings). Those are loaded and placed here, for
        `warm_start`."""
        self.videos.check(spec)
        if self.config.init_from and not (self._restored or self.config.resume):
            self._warm, self._initial = self.checkpoints.warm_start(spec, train)

    def warm_start(self, train: Any) -> Any:
        """The fresh run's `train` state the init made, with `config.init_from`'s params
        (and its optimizer state with `init_opt_state`) as `check` loaded them."""
        if self._warm is None:
            return train
        fields = ("params", "opt_state") if self.config.init_opt_state else ("params",)
        warm, self._warm = self._warm, None
        return train._replace(**{field: getattr(warm, field) for field in fields})

    # -- starting -------------------------------------------------------------------

    def stop_if_requested(self) -> None:
        """Raises `Interrupted` if a stop signal came during start-up (nothing written):
        before work that a signal could not cut short, and in `begin`."""
        if self._signals.requested is not None:
            raise signals.Interrupted(self._signals.requested)

    def waiting(self, what: Callable[[], str | None]) -> None:
        """`what()` names start-up work on another thread that must end before the process
        may exit (an XLA compile cannot stop part way), or None; a stop signal's one line
        before `begin` says the process exits once it has (after `begin` the signal's line
        is the loop's, which does not read it; `close` forgets it)."""
        self._signals.waiting = what

    def begin(self, spec: Any, status: str) -> None:
        """Writes the config (and the resume record), opens the metric writer and the
        progress line, installs the signal handlers; `status` says what comes next."""
        config = self.config
        self.stop_if_requested()  # during start-up: nothing written yet
        # From here a signal stops the run after its current step (a final checkpoint);
        # in place before metrics.jsonl exists, so no one sees the run without them.
        self._signals.on_first = signals.after_the_step
        self._signals.__enter__()
        if self.is_writer:
            resume = {
                "restored": self._restored, "skipped": self.checkpoints.skipped,
                "changes": {k: list(v) for k, v in self._changes.items() if k != "resume"},
            }  # fmt: skip
            config_json = {"runtime": self.runtime, **config.to_json()}
            self.dir.record_start(config_json, provenance(), resume if config.resume else None)
        self.rows.open(self.dir, self.env_steps, self.total_env_steps, self._restored_rows)
        how = (
            f"resumed at env step {self.env_steps:,}" if self._restored
            else "resumed: no checkpoint yet, from the start" if config.resume
            else f"new run, from {self._initial}'s params" if self._initial else "new run"
        )  # fmt: skip
        # every check passed: the rounding of the run's length, before the loop compiles
        rounding = config.rounding_line(self.num_processes)
        self.rows.started(self.dir.path, how, rounding, status)
        self._last = self.env_steps >= self.total_env_steps

    @property
    def compile_cache_hits(self) -> int:
        """Programs JAX has loaded from its persistent cache since `open`, instead of
        compiling them (`RunConfig.compile_cache`; `RunResult.compile_cache_hits`)."""
        return self._cache_hits.hits

    @property
    def total_env_steps(self) -> int:
        """Where the run ends: `total_env_steps` rounded up to whole updates."""
        return self.config.planned_env_steps(self.num_processes)

    # -- the loop -------------------------------------------------------------------

    def running(self) -> bool:
        """Whether another loop step runs (budget left, no stop agreed)."""
        self.clock.step_started()
        return not self._last

    def stop_vote(self) -> bool:
        """This process's wish to stop now: a signal, or the wall-clock budget spent."""
        return self._signals.requested is not None or self.clock.budget_spent

    def advance(self, env_steps: int, stop: bool | None = None) -> None:
        """A loop step of `env_steps` env steps (all processes) has finished.

        `stop`: the stop decision all processes already agreed on (Sebulba carries the
        votes in its update); None: this process's vote, agreed here when there are
        several processes."""
        self._previous_env_steps = self.env_steps
        self.step += 1
        self.env_steps += int(env_steps)
        self.clock.step_ended(self.env_steps)
        if stop is None:
            stop = self.stop_vote()
            if self.num_processes > 1:
                stop = _any_process(stop)
        if stop and self.env_steps < self.total_env_steps:
            self.interrupted = self._signals.requested is not None or not self.clock.budget_spent
        self._last = stop or self.env_steps >= self.total_env_steps

    @property
    def last(self) -> bool:
        """Whether the step just finished is the run's last."""
        return self._last

    def due(self, what: str) -> bool:
        """Whether `what` ("log", "eval", "video", "checkpoint") is due after the step just
        finished: its interval (in env steps) was crossed, or this is the last step."""
        interval = getattr(self.config, _INTERVALS[what])
        if what in ("log", "eval", "video") and self._last:
            return what == "log" or interval > 0
        return _crossed(interval, self._previous_env_steps, self.env_steps)

    def log(
        self, row: dict[str, float] | list[dict[str, float]], env_steps: int | None = None
    ) -> None:
        """Writes one row, or a list of one per member (`config.member_tags()`: a
        multi-seed run's seeds, a sweep's members, which the rows' tags tell apart),
        adding `charts/SPS` and `timing/elapsed` where the runtime did not, and moves the
        progress line.

        `env_steps`: where the row falls, if before the end of the step just finished
        (Anakin logs the rows that end within a call after it): its time is interpolated
        within the step, at the step's rate."""
        steps = self.env_steps if env_steps is None else int(env_steps)
        before = self._previous_env_steps
        if not before <= steps <= self.env_steps:
            raise ValueError(f"Run.log: env_steps={steps} is outside the step just finished")
        tags = self.config.member_tags() if isinstance(row, list) else None
        timing = self.clock.row(steps, before, self.env_steps)
        self.rows.log(steps, row, tags, timing, self._last, self.sps_after_compile())

    def sps_after_compile(self) -> float:
        """Env steps per second of this session, compile excluded: what the progress line,
        the summary and `podracer plot` call SPS (`RunClock` defines it); metrics.jsonl's
        `charts/SPS` is the rate since the previous row."""
        return self.clock.sps(self.env_steps)

    def maybe_save(self, spec: Any, train: Any, runtime: Any = None) -> bool:
        """Saves `train` (the TrainState) and `runtime` (the runtime's own state, or None)
        when a checkpoint is due, at an evaluation (to keep the best ones), or at the last
        step. Decided alike on every process (Orbax saves are collective)."""
        evaluated = self.config.eval_interval > 0 and self.due("eval")
        if not (self.due("checkpoint") or self._last or evaluated):
            return False
        counts = {
            "env_steps": self.env_steps, "elapsed": self.clock.elapsed,
            "metric_rows": self.rows.written,
            "compile_cache": {"dir": self._cache_hits.path, "hits": self.compile_cache_hits},
        }  # fmt: skip
        return self.checkpoints.save(self.step, train, runtime, spec=spec, counts=counts,
                                     history=self.rows.history, evaluated=evaluated)  # fmt: skip

    # -- the end --------------------------------------------------------------------

    def finish(self, state: Any) -> RunResult:
        """Closes the writer and checkpoints and returns the result; says how to resume
        after an interruption."""
        self.close()
        sps, compile_seconds = self.clock.summary(self.env_steps)
        if self.interrupted and self.is_writer:
            print(
                f"{self.runtime}: interrupted at env step {self.env_steps:,} (step {self.step}); "
                f"checkpoint saved. Resume with: {self.dir.resume_command(self.runtime)}",
                file=sys.stderr, flush=True,
            )  # fmt: skip
        return RunResult(state, self.rows.history, self.env_steps, self.step, float(sps),
                         float(compile_seconds), self.interrupted, self.dir.path,
                         self.compile_cache_hits, self.rows.earlier)  # fmt: skip

    def _second_signal_message(self) -> str:
        return f"exiting now without a final checkpoint ({self.checkpoints.newest()})"

    def close(self) -> None:
        self._signals.waiting = lambda: None
        self._signals.__exit__()
        self._cache_hits.close()
        self.videos.close()
        self.rows.close()
        self.checkpoints.close()
        if self._lock is not None:  # last: after the final checkpoint and metrics
            self._lock.release()
            self._lock = None


def _any_process(vote: bool) -> bool:
    """True on every process when any process votes True (one small all-gather)."""
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.int32(vote))))
