"""Orbax checkpoints: the train state (any pytree) plus JSON metadata.

A checkpoint is an Orbax `CheckpointManager` step holding `args.Composite(state=...,
metadata=...)`. Orbax writes each step into a temporary directory and renames it when
complete, so a process killed mid-save leaves the previous checkpoint loadable.
Restoring into an abstract target with shardings places every array where the caller
wants it: a checkpoint saved from N devices restores onto M.
"""

from __future__ import annotations

import importlib.metadata
import os
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from podracer.agents.run import to_jsonable


def package_versions() -> dict[str, str]:
    names = ("podracer-envs", "podracer-agents", "podracer-search", "podracer-anakin",
             "podracer-sebulba", "jax", "flax", "optax", "orbax-checkpoint")
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def abstract_like(tree: Any, sharding: Any = None) -> Any:
    """`ShapeDtypeStruct`s of `tree`, placed with `sharding` (one for all, or a tree)."""
    if sharding is None or isinstance(sharding, jax.sharding.Sharding):
        return jax.tree.map(
            lambda x: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=sharding or getattr(x, "sharding", None)),
            tree,
        )
    return jax.tree.map(lambda x, s: jax.ShapeDtypeStruct(np.shape(x), x.dtype, sharding=s), tree, sharding)


class Checkpointer:
    """Saves and restores `(state, metadata)` steps under `directory`.

    `max_to_keep` keeps the newest N; with `best_metric`, the N best by that metric (as
    passed to `save(..., metrics=)`) are kept instead, plus always the newest.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        max_to_keep: int | None = 3,
        best_metric: str | None = None,
        best_mode: str = "max",
        save_interval_steps: int = 1,
    ):
        if best_mode not in ("max", "min"):
            raise ValueError(f"best_mode must be 'max' or 'min', got {best_mode!r}")
        self.directory = os.path.abspath(os.fspath(directory))
        # Orbax's BestN alone would delete the newest step when it is not among the best,
        # and a run could then not resume from where it stopped: keep it as well.
        keep = ocp.checkpoint_managers
        if best_metric:
            preservation = keep.AnyPreservationPolicy([
                keep.BestN(
                    get_metric_fn=lambda m: m[best_metric], reverse=best_mode == "min",
                    n=max_to_keep, keep_checkpoints_without_metrics=False,
                ),
                keep.LatestN(n=1),
            ])
        else:
            preservation = keep.LatestN(n=max_to_keep)
        options = ocp.CheckpointManagerOptions(
            best_fn=(lambda m: m[best_metric]) if best_metric else None,
            best_mode=best_mode,
            preservation_policy=preservation,
            save_interval_steps=save_interval_steps,
            create=True,
            enable_async_checkpointing=False,
        )
        self._manager = ocp.CheckpointManager(
            self.directory, options=options, item_names=("state", "metadata")
        )

    def save(self, step: int, state: Any, metadata: dict[str, Any], metrics: dict[str, float] | None = None,
             force: bool = True) -> bool:
        metadata = to_jsonable({**metadata, "versions": package_versions()})
        saved = self._manager.save(
            int(step),
            args=ocp.args.Composite(state=ocp.args.StandardSave(state), metadata=ocp.args.JsonSave(metadata)),
            metrics={k: float(v) for k, v in (metrics or {}).items()} or None,
            force=force,
        )
        self._manager.wait_until_finished()
        return saved

    def latest_step(self) -> int | None:
        return self._manager.latest_step()

    def all_steps(self) -> list[int]:
        return list(self._manager.all_steps())

    def best_step(self) -> int | None:
        return self._manager.best_step()

    def metadata(self, step: int | None = None) -> dict[str, Any]:
        step = self._step(step)
        restored = self._manager.restore(step, args=ocp.args.Composite(metadata=ocp.args.JsonRestore()))
        return restored.metadata

    def restore(self, target: Any, step: int | None = None) -> tuple[Any, dict[str, Any]]:
        """Restores into `target`: concrete arrays or `ShapeDtypeStruct`s with shardings."""
        step = self._step(step)
        abstract = jax.tree.map(
            lambda x: x if isinstance(x, jax.ShapeDtypeStruct) else abstract_like(x), target
        )
        restored = self._manager.restore(
            step,
            args=ocp.args.Composite(state=ocp.args.StandardRestore(abstract), metadata=ocp.args.JsonRestore()),
        )
        return restored.state, restored.metadata

    def _step(self, step: int | None) -> int:
        if step is None:
            step = self.latest_step()
            if step is None:
                raise FileNotFoundError(f"no checkpoint in {self.directory}")
        return int(step)

    def close(self) -> None:
        self._manager.close()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
