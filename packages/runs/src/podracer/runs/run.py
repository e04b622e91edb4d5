"""`Run`: the lifecycle around a runtime's loop, the same for Anakin and Sebulba.

    with Run.open(config, "anakin") as run:      # run dir (auto-named if none), reuse and
        ...build env, agent, programs...          #   resume checks: nothing compiled yet
        restored = run.restore(spec, train=..., runtime=...)   # newest good checkpoint
        state = init(key) if restored is None else ...
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

import difflib
import glob
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from podracer.agents import ConfigError
from podracer.runs import compile_cache
from podracer.runs import signals
from podracer.runs.clock import RunClock
from podracer.runs.config import RunConfig
from podracer.runs.config import changed_fields
from podracer.runs.directory import RunDir
from podracer.runs.directory import RunInUse
from podracer.runs.directory import RunLock
from podracer.runs.directory import auto_name
from podracer.runs.directory import read_jsonl
from podracer.runs.distributed import initialize_distributed
from podracer.runs.provenance import provenance
from podracer.runs.result import RunResult
from podracer.runs.run_checkpoints import EVAL_METRIC
from podracer.runs.run_checkpoints import Restored
from podracer.runs.run_checkpoints import RunCheckpoints
from podracer.runs.run_checkpoints import refuse_learning_changes
from podracer.runs.run_rows import RunRows
from podracer.runs.run_videos import RunVideos
from podracer.runs.signals import StopSignals
from podracer.runs.writer import check_open_files


def _crossed(interval: int, before: int, after: int) -> bool:
    """Whether a multiple of `interval` lies in (before, after]."""
    return interval > 0 and after // interval > before // interval


class Run:
    """One run's directory, counters, writer, checkpoints, progress and stop signals."""

    def __init__(
        self,
        config: RunConfig,
        runtime: str,
        directory: RunDir,
        changes: dict,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ):
        import jax

        self.config = config
        self.runtime = runtime
        self.dir = directory
        self.process_index = jax.process_index()
        self.num_processes = jax.process_count()
        self.is_writer = self.process_index == 0
        self.step = 0  # loop steps so far (Orbax's step number)
        self.env_steps = 0
        self.interrupted = False
        self._changes = changes  # fields a resume changed: {field: (old, new)}
        self._restored: dict[str, Any] | None = None
        self._restored_rows: int | None = None  # metric rows the restored checkpoint saw
        self._initial: str | None = None  # the checkpoint a fresh run started from
        self.checkpoints = RunCheckpoints(config, runtime, directory, self.is_writer)
        self.rows = RunRows(config, runtime, self.is_writer, on_row)
        self.videos = RunVideos(config, directory, self.is_writer)
        # A command line's handlers (and a signal they caught during start-up), or ours.
        self._signals = signals.installed() or StopSignals()
        self._signals.on_second = self._second_signal_message
        self._clock = RunClock()
        self._last = False
        self._previous_env_steps = 0
        self._lock: RunLock | None = None  # the run directory's, on process 0
        # Programs loaded from JAX's persistent cache so far (`Run.open` sets its folder).
        self._cache_hits = compile_cache.CacheHits(None)

    # -- opening: every check before anything is built or written --------------------

    @classmethod
    def open(
        cls,
        config: RunConfig,
        runtime: str,
        on_row: Callable[[dict[str, Any]], None] | None = None,
    ) -> Run:
        """Points JAX's persistent compilation cache at `config.compile_cache` (first:
        nothing compiles before it), joins the multi-process run if asked, names the run
        directory and checks it: a name in use needs `resume`, a resume needs the run,
        and a resume may change only `MAY_CHANGE_ON_RESUME` fields. Writes nothing but
        the cache's folder.

        `on_row(row)` is called in this thread with each row `log` writes (on the
        writing process only), as `rows.history` holds it: `env_steps`, `seed` in a
        multi-seed run, and the metrics."""
        import jax

        cache = compile_cache.apply(config.compile_cache, type(config).__name__)
        initialize_distributed(config.cluster)
        name = config.run_name or _agreed_auto_name(config)
        directory = RunDir(config.runs_root, name)
        # Process 0 holds the run for its whole process group, before any check reads the
        # folder: of two starts of one name, the second is refused, never mixed in.
        lock = _lock(config, directory) if jax.process_index() == 0 else None
        try:
            changes = _check_directory(config, runtime, directory)
            if config.tensorboard and lock is not None and config.num_members > 1:
                check_open_files(config.num_members, type(config).__name__)
            run = cls(config, runtime, directory, changes, on_row)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        run._lock = lock
        run._cache_hits = compile_cache.CacheHits(cache)
        return run

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
        self._clock.elapsed_before = float(meta.get("elapsed", 0.0))
        self._clock.restored_env_steps = self.env_steps
        self._restored = {"step": int(meta["step"]), "env_steps": self.env_steps}
        self._restored_rows = meta.get("metric_rows")  # None: a checkpoint from before it
        return restored

    def warm_start(self, spec: Any, train: Any) -> Any:
        """A fresh run's `train` state (a TrainState, or one per seed), with the params of
        `config.init_from` when it names a run: the same agent, an env of the same spec."""
        if not self.config.init_from or self._restored or self.config.resume:
            return train
        train, self._initial = self.checkpoints.warm_start(spec, train)
        return train

    # -- starting -------------------------------------------------------------------

    def begin(self, spec: Any, status: str) -> None:
        """Writes the config (and the resume record), opens the metric writer and the
        progress line, installs the signal handlers; `status` says what comes next."""
        config = self.config
        if self._signals.requested is not None:  # during start-up: nothing written yet
            raise signals.Interrupted(self._signals.requested)
        # From here a signal stops the run after its current step (a final checkpoint);
        # in place before metrics.jsonl exists, so no one sees the run without them.
        self._signals.on_first = signals.after_the_step
        self._signals.__enter__()
        self.videos.check(spec)
        if self.is_writer:
            self.dir.write_config({"runtime": self.runtime, **config.to_json()})
            # What ran: the first start's in provenance.json, each resume's in its record.
            ran = provenance()
            if config.resume:
                self.dir.append_resume({
                    "time": time.time(), "restored": self._restored,
                    "skipped": self.checkpoints.skipped,
                    "changes": {k: list(v) for k, v in self._changes.items() if k != "resume"},
                    "provenance": ran,
                })  # fmt: skip
            else:
                self.dir.write_provenance(ran)
        self.rows.open(self.dir, self.env_steps, self.total_env_steps, self._restored_rows)
        how = (
            f"resumed at env step {self.env_steps:,}" if self._restored
            else "resumed: no checkpoint yet, from the start" if config.resume
            else f"new run, from {self._initial}'s params" if self._initial else "new run"
        )  # fmt: skip
        self.rows.status(
            f"{self.runtime}: {config.agent} on {config.env}, run {self.dir.path} ({how})"
        )
        rounding = config.rounding_line(self.num_processes)
        if rounding and self.is_writer:  # every check passed; before the loop compiles
            self.rows.status(f"{self.runtime}: {rounding}", always=True)
        self.rows.status(f"{self.runtime}: {status}")
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
        self._clock.step_started()
        return not self._last

    def compiled(self, compile_seconds: float) -> None:
        """The runtime has just compiled its programs, inside the current loop step, and
        measured `compile_seconds` of compiling: SPS counts this session's env steps from
        now (work before, such as probing on a copy of the state, counts no steps), so a
        run of one loop step gets a true SPS and compile time. Without it, the first loop
        step is the compile."""
        self._clock.compiled(compile_seconds)

    def step_seconds(self) -> float:
        """Seconds since the current loop step started (`running()` returned True)."""
        return self._clock.step_seconds()

    @property
    def elapsed(self) -> float:
        """Wall seconds of the whole run (earlier sessions included), compile included."""
        return self._clock.elapsed

    @property
    def budget_spent(self) -> bool:
        """Whether this session's wall-clock budget (`max_wall_seconds`) is spent. Each
        session of a run has its own: a resume with the budget runs that long again, so a
        long run is several bounded sessions (a machine's time limit) joined by resumes."""
        return 0 < self.config.max_wall_seconds <= self._clock.session

    def stop_vote(self) -> bool:
        """This process's wish to stop now: a signal, or the wall-clock budget spent."""
        return self._signals.requested is not None or self.budget_spent

    def advance(self, env_steps: int, stop: bool | None = None) -> None:
        """A loop step of `env_steps` env steps (all processes) has finished.

        `stop`: the stop decision all processes already agreed on (Sebulba carries the
        votes in its update); None: this process's vote, agreed here when there are
        several processes."""
        self._previous_env_steps = self.env_steps
        self.step += 1
        self.env_steps += int(env_steps)
        self._clock.step_ended(self.env_steps)
        if stop is None:
            stop = self.stop_vote()
            if self.num_processes > 1:
                stop = _any_process(stop)
        if stop and self.env_steps < self.total_env_steps:
            self.interrupted = self._signals.requested is not None or not self.budget_spent
        self._last = stop or self.env_steps >= self.total_env_steps

    @property
    def last(self) -> bool:
        """Whether the step just finished is the run's last."""
        return self._last

    def due(self, what: str) -> bool:
        """Whether `what` ("log", "eval", "video", "checkpoint") is due after the step just
        finished: its interval (in env steps) was crossed, or this is the last step."""
        interval = {
            "log": self.config.row_interval,
            "eval": self.config.eval_interval,
            "video": self.config.video_interval,
            "checkpoint": self.config.checkpoint_interval,
        }[what]
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
        rows = row if isinstance(row, list) else [row]
        tags = self.config.member_tags() if isinstance(row, list) else [{}]
        if len(tags) != len(rows):
            raise ValueError(f"Run.log: {len(rows)} rows for {len(tags)} members")
        steps = self.env_steps if env_steps is None else int(env_steps)
        before = self._previous_env_steps
        if not before <= steps <= self.env_steps:
            raise ValueError(f"Run.log: env_steps={steps} is outside the step just finished")
        # One value for every member's row of this step.
        sps, elapsed = self._clock.row(steps, before, self.env_steps)
        for r in rows:
            if math.isfinite(sps):  # not in a row of the step that compiled (`RunClock.row`)
                r.setdefault("charts/SPS", sps)
            r.setdefault("timing/elapsed", elapsed)
        self.rows.write(steps, rows, tags, self._last, self.sps_after_compile())

    def sps_after_compile(self) -> float:
        """Env steps per second of this session, compile excluded: what the progress line,
        the summary and `podracer plot` call SPS (`RunClock` defines it); metrics.jsonl's
        `charts/SPS` is the rate since the previous row."""
        return self._clock.sps(self.env_steps)

    def maybe_save(self, spec: Any, train: Any, runtime: Any = None) -> bool:
        """Saves `train` (the TrainState) and `runtime` (the runtime's own state, or None)
        when a checkpoint is due, at an evaluation (to keep the best ones), or at the last
        step. Decided alike on every process (Orbax saves are collective)."""
        evaluated = self.config.eval_interval > 0 and self.due("eval")
        if not (self.due("checkpoint") or self._last or evaluated):
            return False
        metrics = None
        rows = [
            r for r in self.rows.history if r["env_steps"] == self.env_steps and EVAL_METRIC in r
        ]
        if evaluated and rows:  # process 0 evaluates; the others save without a metric
            metrics = {EVAL_METRIC: float(np.mean([r[EVAL_METRIC] for r in rows]))}
        metadata = {
            "runtime": self.runtime, "agent": self.config.agent,
            "config": {"runtime": self.runtime, **self.config.to_json()},
            "env_spec": spec.to_json(), "env_steps": self.env_steps, "step": self.step,
            "elapsed": self.elapsed, "metric_rows": self.rows.written,
            "compile_cache": {"dir": self._cache_hits.path, "hits": self.compile_cache_hits},
        }  # fmt: skip
        return self.checkpoints.save(self.step, train, metadata, runtime, metrics)

    # -- the end --------------------------------------------------------------------

    def finish(self, state: Any) -> RunResult:
        """Closes the writer and checkpoints and returns the result; says how to resume
        after an interruption."""
        self.close()
        sps, compile_seconds = self._clock.summary(self.env_steps)
        if self.interrupted and self.is_writer:
            print(
                f"{self.runtime}: interrupted at env step {self.env_steps:,} (step {self.step}); "
                f"checkpoint saved. Resume with: {self.resume_command()}",
                file=sys.stderr, flush=True,
            )  # fmt: skip
        return RunResult(state, self.rows.history, self.env_steps, self.step, float(sps),
                         float(compile_seconds), self.interrupted, self.dir.path,
                         self.compile_cache_hits, self.rows.earlier)  # fmt: skip

    def resume_command(self) -> str:
        root = self.config.runs_root
        where = "" if os.path.abspath(root) == os.path.abspath("runs") else f" --runs-root {root}"
        return f"{self.runtime} --run-name {self.dir.name}{where} --resume"

    def _second_signal_message(self) -> str:
        return f"exiting now without a final checkpoint ({self.checkpoints.newest()})"

    def close(self) -> None:
        self._signals.__exit__()
        self._cache_hits.close()
        self.videos.close()
        self.rows.close()
        self.checkpoints.close()
        if self._lock is not None:  # last: after the final checkpoint and metrics
            self._lock.release()
            self._lock = None


def _lock(config: RunConfig, directory: RunDir) -> RunLock:
    owner = type(config).__name__
    try:
        return directory.lock()
    except RunInUse as e:
        raise ConfigError(
            f"{owner}.run_name={directory.name!r}: {e}; wait for it to end, or choose "
            f"another --run-name"
        ) from None
    except OSError as e:  # a runs_root that is a file, read-only, or a name too long
        root = os.path.dirname(directory.path)
        if os.path.exists(root) and not os.path.isdir(root):
            message = f"{owner}.runs_root={config.runs_root!r} is a file, not a folder"
            raise ConfigError(message) from None
        raise ConfigError(
            f"{owner}.runs_root={config.runs_root!r} cannot hold run {directory.name!r}: "
            f"{e.strerror or e}"
        ) from None


def _agreed_auto_name(config: RunConfig) -> str:
    """A new run name; with several processes, process 0's (all must use one folder)."""
    import jax

    now = time.time()
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        now = float(multihost_utils.broadcast_one_to_all(np.float64(now)))
    return auto_name(config.env, config.agent, config.seed, config.runs_root, now)


def _any_process(vote: bool) -> bool:
    """True on every process when any process votes True (one small all-gather)."""
    from jax.experimental import multihost_utils

    return bool(np.any(multihost_utils.process_allgather(np.int32(vote))))


def _check_directory(config: RunConfig, runtime: str, directory: RunDir) -> dict:
    """Refuses what would lose work or mix two runs; returns the fields a resume changes."""
    owner = type(config).__name__
    if not config.resume:
        if directory.exists():
            raise ConfigError(
                f"{owner}.run_name={directory.name!r} names an existing run ({directory.path}): "
                f"continue it with --resume (resume=True), or choose another --run-name"
            )
        if os.path.isdir(directory.path) and os.listdir(directory.path):
            raise ConfigError(
                f"{owner}.run_name={directory.name!r}: {directory.path} exists and is not a run "
                f"directory (no config.json); choose another --run-name"
            )
        return {}
    if not directory.exists():
        root = os.path.dirname(directory.path)
        runs = (
            sorted(n for n in os.listdir(root) if not n.startswith("."))
            if os.path.isdir(root)
            else []
        )
        close = difflib.get_close_matches(directory.name, runs, n=3)
        hint = f"; did you mean {close}?" if close else f"; runs there: {runs[:20]}" if runs else ""
        raise ConfigError(
            f"{owner}.resume: no run {directory.name!r} in {root} (no config.json){hint}"
        )
    try:
        stored = directory.read_config()
        # Every record the run keeps is read before anything is written: a line edited
        # into something else refuses the resume here, not halfway through it.
        for path in sorted(glob.glob(os.path.join(directory.path, "*.jsonl"))):
            read_jsonl(path)
    except ValueError as e:
        raise ConfigError(f"{owner}.resume: {e}") from None
    current = {"runtime": runtime}
    changes = changed_fields({k: v for k, v in stored.items() if k != "runtime"}, config)
    if stored.get("runtime", runtime) != runtime:
        changes = {"runtime": (stored.get("runtime"), current["runtime"]), **changes}
    refuse_learning_changes(config, directory, changes, "the run's",
                             "resume with the run's values (omit these flags)")  # fmt: skip
    return changes
