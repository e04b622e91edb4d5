"""Orbax checkpoints: the train state, the runtime's own state, and JSON metadata.

A checkpoint is one Orbax `CheckpointManager` step (numbered by the runtime's loop step)
holding three items:

* `train`: the `TrainState` (params, optimizer state, key, update count), the same
  pytree on both runtimes, so any tool or runtime can restore it from any run;
* `runtime`: what else the runtime needs to continue exactly (Anakin: env states, keys,
  replay buffers); absent where there is nothing (Sebulba);
* `metadata`: JSON (format version, runtime, agent, config, env spec, env steps,
  package versions).

Orbax writes each step into a temporary folder and renames it when complete, so a
process killed mid-save leaves the previous checkpoint loadable. A checkpoint that still
fails to restore (a truncated file, garbled metadata) is reported, moved aside to
`<step>.corrupt` (kept for inspection, never deleted) and the next older one is tried;
one that reads but holds another structure (other code wrote it) fails as it is, and a
field newer code added without arrays in it (a feed-forward agent's empty core state)
restores from checkpoints that predate it.
Restoring into abstract targets with shardings places every array where the caller
wants it: a checkpoint saved from N devices restores onto M.
"""

from __future__ import annotations

import contextlib
import gc
import glob
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from podracer.runs.config import to_jsonable
from podracer.runs.provenance import package_versions

FORMAT = 2  # of the metadata; 1 (podracer 0.1) stored one "state" item


def abstract_like(tree: Any, sharding: Any = None) -> Any:
    """`ShapeDtypeStruct`s of `tree`, placed with `sharding` (one for all, or a tree)."""
    if sharding is None or isinstance(sharding, jax.sharding.Sharding):
        return jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(
                np.shape(x), x.dtype, sharding=sharding or getattr(x, "sharding", None)
            ),
            tree,
        )
    return jax.tree.map(
        lambda x, s: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=s), tree, sharding
    )


def _abstract(target: Any) -> Any:
    return jax.tree.map(
        lambda x: x if isinstance(x, jax.ShapeDtypeStruct) else abstract_like(x), target
    )


class CheckpointError(RuntimeError):
    """A checkpoint that exists but cannot be restored (the message names its path)."""


class CheckpointMismatch(CheckpointError):
    """A readable checkpoint whose state is not shaped like the target's: it was written
    by other code (or another agent), not damaged, so it is never moved aside."""


def _with_added_fields(target: Any, saved: Any) -> tuple[Any, Callable[[Any], Any]]:
    """`(what to restore, rebuild)` for a NamedTuple `target` against the on-disk tree
    `saved` (a dict of its fields): fields that newer code added and that hold no arrays
    (a feed-forward agent's `core=()`, say) are absent from older checkpoints, so they
    are left out of the restore and put back by `rebuild`. Any other difference in the
    fields raises `CheckpointMismatch` naming them."""
    if not (hasattr(target, "_fields") and isinstance(saved, dict)):
        return target, lambda restored: restored
    added = [f for f in target._fields if f not in saved]
    missing = sorted(set(saved) - set(target._fields))
    holding = [f for f in added if jax.tree.leaves(getattr(target, f))]
    if missing or holding:
        raise CheckpointMismatch(
            f"the saved state has fields {sorted(saved)}, this code's {list(target._fields)}"
        )
    if not added:
        return target, lambda restored: restored
    kept = {f: getattr(target, f) for f in target._fields if f not in added}
    defaults = {f: getattr(target, f) for f in added}
    return kept, lambda restored: type(target)(**restored, **defaults)


def _drop_untracked_save_warning(record) -> bool:
    # Orbax warns on every save without metrics when best checkpoints are tracked; here
    # only evaluations carry a metric and the other saves are the newest ones, kept anyway.
    return "did not provide metrics" not in record.getMessage()


class Checkpointer:
    """Saves and restores checkpoints under `directory`.

    `max_to_keep` keeps the newest N; with `best_metric`, the N best by that metric (as
    passed to `save(..., metrics=)`) are kept as well as the newest.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        max_to_keep: int | None = 3,
        best_metric: str | None = None,
        best_mode: str = "max",
    ):
        if best_mode not in ("max", "min"):
            raise ValueError(f"best_mode must be 'max' or 'min', got {best_mode!r}")
        self.directory = os.path.abspath(os.fspath(directory))
        self.best_metric = best_metric
        keep = ocp.checkpoint_managers
        if best_metric:
            logging.getLogger("absl").addFilter(_drop_untracked_save_warning)
            # Orbax's BestN alone would delete the newest step when it is not among the
            # best, and a run could then not resume from where it stopped: keep it too.
            preservation = keep.AnyPreservationPolicy([
                keep.BestN(
                    get_metric_fn=lambda m: m[best_metric], reverse=best_mode == "min",
                    n=max_to_keep, keep_checkpoints_without_metrics=False,
                ),
                keep.LatestN(n=1),
            ])  # fmt: skip
        else:
            preservation = keep.LatestN(n=max_to_keep)
        options = ocp.CheckpointManagerOptions(
            best_fn=(lambda m: m[best_metric]) if best_metric else None,
            best_mode=best_mode,
            preservation_policy=preservation,
            create=True,
            enable_async_checkpointing=False,
        )
        self._manager = ocp.CheckpointManager(
            self.directory,
            options=options,
            item_handlers={
                "train": ocp.StandardCheckpointHandler(),
                "runtime": ocp.StandardCheckpointHandler(),
                "metadata": ocp.JsonCheckpointHandler(),
            },
        )

    def path(self, step: int) -> str:
        return os.path.join(self.directory, str(int(step)))

    def save(
        self,
        step: int,
        train: Any,
        metadata: dict[str, Any],
        runtime: Any = None,
        metrics: dict[str, float] | None = None,
    ) -> bool:
        """Writes step `step`; a step that exists already is left as it is (False).

        (A loop step checkpointed periodically and then again as the final one, e.g. when
        a signal arrives right after a periodic save, is the same state.)
        """
        if int(step) in self._manager.all_steps():
            return False
        items = dict(
            train=ocp.args.StandardSave(train),
            metadata=ocp.args.JsonSave(
                to_jsonable({"format": FORMAT, **metadata, "versions": package_versions()})
            ),
        )
        if runtime is not None:
            items["runtime"] = ocp.args.StandardSave(runtime)
        try:
            with _quiet_orbax():
                saved = self._manager.save(
                    int(step),
                    args=ocp.args.Composite(**items),
                    metrics={k: float(v) for k, v in (metrics or {}).items()} or None,
                    force=True,
                )
                self._manager.wait_until_finished()
        except Exception as e:  # noqa: BLE001 - reported in one line with the path
            need = sum(getattr(x, "nbytes", 0) for x in jax.tree.leaves((train, runtime)))
            raise CheckpointError(self._save_failure(int(step), e, need)) from e
        return saved

    def _save_failure(self, step: int, error: BaseException, need: int) -> str:
        """One line on a failed save, its partial files removed (a full disk keeps none of
        them): the path, and for a full disk the space free and the space a checkpoint
        of this run takes."""
        for partial in glob.glob(f"{self.path(step)}.orbax-checkpoint-tmp*"):
            shutil.rmtree(partial, ignore_errors=True)
        text = str(error)
        if "No space left on device" not in text and "os_error_code='28'" not in text:
            return f"{self.path(step)}: could not be written ({_first_line(error)})"
        free = shutil.disk_usage(self.directory).free
        return (
            f"{self.path(step)}: no space left on device (a checkpoint of this run needs "
            f"about {_megabytes(need)}, {_megabytes(free)} free in {self.directory}); the "
            f"run stopped there: free space, then resume"
        )

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return sorted(self._manager.all_steps())

    def best_step(self) -> int | None:
        return self._manager.best_step() if self.best_metric else None

    def metadata(self, step: int | None = None) -> dict[str, Any]:
        """The JSON metadata of `step` (default: the newest)."""
        step = self._step(step)
        try:
            with _quiet_orbax():
                restored = self._manager.restore(
                    step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore())
                )
        except Exception as e:  # noqa: BLE001 - reported with the path
            raise CheckpointError(
                f"{self.path(step)}: metadata unreadable ({_first_line(e)})"
            ) from e
        meta = restored.metadata
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            found = meta.get("format", 1) if isinstance(meta, dict) else "?"
            raise CheckpointError(
                f"{self.path(step)}: checkpoint format {found}, this podracer reads {FORMAT}"
            )
        return meta

    def restore(self, train: Any = None, runtime: Any = None, step: int | None = None):
        """`(train, runtime, metadata)` of `step` (default: the newest), restored into the
        targets (concrete arrays or `ShapeDtypeStruct`s with shardings; `train=None`: as
        saved, nested dicts of arrays on the default device). `runtime=None` restores only
        the train state and metadata (what tools and other runtimes read). Fails with
        `CheckpointError` naming the path."""
        step = self._step(step)
        meta = self.metadata(step)
        target = None if train is None else _abstract(train)
        items = dict(train=ocp.args.StandardRestore(target))
        rebuild = lambda restored: restored  # noqa: E731
        if runtime is not None:
            try:
                with _quiet_orbax():
                    saved = self._manager.item_metadata(step)["runtime"].tree
                runtime, rebuild = _with_added_fields(_abstract(runtime), saved)
            except CheckpointMismatch as e:
                raise CheckpointMismatch(f"{self.path(step)}: {e}") from e
            except Exception:  # noqa: BLE001 - unreadable metadata: the restore reports it
                runtime = _abstract(runtime)
            items["runtime"] = ocp.args.StandardRestore(runtime)
        try:
            with _quiet_orbax():
                restored = self._manager.restore(step, args=ocp.args.Composite(**items))
        except Exception as e:  # noqa: BLE001 - reported with the path
            # Orbax's word for a readable checkpoint of another structure.
            kind = CheckpointMismatch if "structures do not match" in str(e) else CheckpointError
            raise kind(f"{self.path(step)}: {_first_line(e)}") from e
        runtime = rebuild(restored.runtime) if runtime is not None else None
        return restored.train, runtime, meta

    def restore_as_saved(self, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """`(train, metadata)` of `step` with no target: the train state as the run saved it
        (nested dicts and lists of arrays, on the default device), whatever agent or
        runtime wrote it; what tools read."""
        step = self._step(step)
        meta = self.metadata(step)
        try:
            with _quiet_orbax():
                tree = self._manager.item_metadata(step)["train"].tree
                device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
                target = jax.tree.map(
                    lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype, sharding=device),
                    tree, is_leaf=lambda m: hasattr(m, "shape") and hasattr(m, "dtype"),
                )  # fmt: skip
                restored = self._manager.restore(
                    step, args=ocp.args.Composite(train=ocp.args.StandardRestore(target))
                )
        except Exception as e:  # noqa: BLE001 - reported with the path
            raise CheckpointError(f"{self.path(step)}: {_first_line(e)}") from e
        return restored.train, meta

    def restore_newest(
        self,
        train: Any,
        runtime: Any = None,
        on_skip: Callable[[int, CheckpointError], None] = lambda step, error: None,
        move_aside: bool = True,
    ) -> tuple[int, Any, Any, dict[str, Any]] | None:
        """The newest checkpoint that restores, as `(step, train, runtime, metadata)`;
        None when there is none. Each one that fails is passed to `on_skip` and (with
        `move_aside`, process 0 of a run) renamed to `<step>.corrupt`; a
        `CheckpointMismatch` (sound files, another structure) is raised as it is."""
        for step in sorted(self._manager.all_steps(), reverse=True):
            try:
                return (step, *self.restore(train, runtime, step))
            except CheckpointMismatch:
                raise
            except CheckpointError as e:
                on_skip(step, e)
                if move_aside:
                    self.move_aside(step)
        return None

    def move_aside(self, step: int) -> str:
        """Renames checkpoint `step` out of Orbax's sight (kept, not deleted)."""
        target, k = f"{self.path(step)}.corrupt", 1
        while os.path.exists(target):
            target, k = f"{self.path(step)}.corrupt-{k}", k + 1
        os.rename(self.path(step), target)
        self._manager.reload()
        return target

    def _step(self, step: int | None) -> int:
        if step is None:
            step = self.latest_step()
            if step is None:
                raise FileNotFoundError(f"no checkpoint in {self.directory}")
        elif int(step) not in self._manager.all_steps():
            raise FileNotFoundError(
                f"no checkpoint for step {step} in {self.directory}; steps: {self.all_steps()}"
            )
        return int(step)

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    if not text:
        return type(error).__name__
    line = text[0].split(" See full TensorStore details")[0]  # then a spec of many lines
    return f"{type(error).__name__}: {line[:300]}"


def _megabytes(n: int) -> str:
    return f"{n / 2**20:,.1f} MB"


def _drop_orbax_task_errors(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    # Orbax's own coroutines, or tensorstore's reads it wrapped (`_wrap_awaitable`, whose
    # message names the store's driver, not Orbax)
    ours = any(word in message for word in ("orbax", "ocdbt", "tensorstore"))
    return not ("exception was never retrieved" in message and ours)


@contextlib.contextmanager
def _quiet_orbax():
    """A failed Orbax save or restore (a full disk, a truncated file) logs the error from
    its writer threads, and tensorstore's callbacks into the closed event loop print
    "Event loop is closed" tracebacks from C++, some after the call has raised: all noise
    after the one line that reports it. The process's stderr (file descriptor 2, which
    those prints bypass Python to reach) goes to a file meanwhile: written out if the
    call succeeds, dropped if it raises."""
    import tempfile

    sys.stderr.flush()
    real = os.dup(2)
    failed = False
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            with _quiet_orbax_coroutines():
                yield
        except BaseException:
            failed = True
            time.sleep(1.0)  # the threads' last callbacks, still captured
            # Its failed tasks, collected later, would log their errors again.
            logging.getLogger("asyncio").addFilter(_drop_orbax_task_errors)
            raise
        finally:
            sys.stderr.flush()
            os.dup2(real, 2)
            os.close(real)
            if not failed:
                captured.seek(0)
                sys.stderr.write(captured.read().decode(errors="replace"))
                sys.stderr.flush()


@contextlib.contextmanager
def _quiet_orbax_coroutines():
    """A failed Orbax restore leaves its other reads' coroutines to fail when collected,
    each printing "Exception ignored in <coroutine ...>" with a traceback after the one
    line that reports the error. Collect them here, their errors unprinted."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        code = getattr(unraisable.object, "cr_code", None)
        if code is None or "orbax" not in code.co_filename:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        gc.collect()
        sys.unraisablehook = previous
