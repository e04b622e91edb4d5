"""Opening a run: every check before anything is built or written (`Run.open`).

In order: JAX's persistent compilation cache points at the run's folder (nothing compiles
before it), the process joins a multi-process run, the run directory is named (process
0's choice for all) and locked by process 0 for the whole group, before any check reads
it, so that of two starts of one name the second is refused, never mixed in. Then the
directory is checked: a name in use needs `resume`, a resume needs the run and every
record it keeps readable, and a resume may change only `MAY_CHANGE_ON_RESUME` fields.
"""

from __future__ import annotations

import difflib
import glob
import os
import time
from typing import NamedTuple

import numpy as np

from podracer.agents import ConfigError
from podracer.runs import compile_cache
from podracer.runs.config import RunConfig
from podracer.runs.config import changed_fields
from podracer.runs.directory import RunDir
from podracer.runs.directory import RunInUse
from podracer.runs.directory import RunLock
from podracer.runs.directory import auto_name
from podracer.runs.directory import read_jsonl
from podracer.runs.distributed import initialize_distributed
from podracer.runs.run_checkpoints import refuse_learning_changes
from podracer.runs.writer import check_open_files
from podracer.runs.writer import check_wandb_extra


class Opened(NamedTuple):
    """A checked run directory, held (`lock`, on process 0) until the run closes."""

    directory: RunDir
    changes: dict  # the fields a resume changes: {field: (old, new)}
    lock: RunLock | None
    cache: str | None  # the compile cache's folder (None: off)

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()


def open_checked(config: RunConfig, runtime: str) -> Opened:
    """The run's directory, checked and held; writes nothing but the cache's folder."""
    import jax

    cache = compile_cache.apply(config.compile_cache, type(config).__name__)
    initialize_distributed(config.cluster)
    name = config.run_name or _agreed_auto_name(config)
    directory = RunDir(config.runs_root, name)
    lock = _lock(config, directory) if jax.process_index() == 0 else None
    try:
        changes = _check_directory(config, runtime, directory)
        if config.tensorboard and lock is not None and config.num_members > 1:
            check_open_files(config.num_members, type(config).__name__)
        if config.wandb_project and lock is not None:  # process 0 logs
            check_wandb_extra(type(config).__name__)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return Opened(directory, changes, lock, cache)


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
