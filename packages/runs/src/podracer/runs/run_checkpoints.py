"""A run's checkpoints, one room of `Run` (`Run.checkpoints`): the newest checkpoint that
restores, checked against the run before it is used; a fresh run's start from another
run's params (`init_from`); saving. `Run` decides when (its loop, its counters); this
room holds how.

A resume must match the config its checkpoint was trained with, not the editable
config.json: a field that changes what is learned is refused, naming each with its old
and new value; a checkpoint that does not restore is reported, moved aside and the next
older one tried; a checkpoint of the other runtime, or of an env of another spec, is
refused in one line.
"""

from __future__ import annotations

import glob
import os
import sys
from typing import Any
from typing import NamedTuple

import numpy as np

from podracer.agents import ConfigError
from podracer.runs.checkpoint import Checkpointer
from podracer.runs.checkpoint import CheckpointError
from podracer.runs.config import RunConfig
from podracer.runs.config import changed_fields
from podracer.runs.directory import RunDir

EVAL_METRIC = "eval/episodic_return"  # what "best" checkpoints are ranked by


class Restored(NamedTuple):
    """What `Run.restore` found."""

    train: Any  # the TrainState
    runtime: Any  # the runtime's own state, or None
    metadata: dict[str, Any]


class RunCheckpoints:
    """The checkpoints of the run `config` names in `directory`, as `runtime` writes them
    (process `is_writer` reports and moves aside what does not restore)."""

    def __init__(self, config: RunConfig, runtime: str, directory: RunDir, is_writer: bool):
        self.config, self.runtime, self.dir, self.is_writer = config, runtime, directory, is_writer
        self.skipped: list[str] = []  # why each checkpoint tried and not restored failed
        self._checkpointer: Checkpointer | None = None

    @property
    def checkpointer(self) -> Checkpointer:
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(
                self.dir.checkpoints,
                max_to_keep=self.config.keep_checkpoints,
                best_metric=EVAL_METRIC if self.config.eval_interval else None,
            )
        return self._checkpointer

    def restore(self, spec: Any, train: Any, runtime: Any) -> tuple[Restored, dict] | None:
        """The newest checkpoint that restores into the targets and the config changes
        the resume makes against it (`{field: (old, new)}`, those a resume may make); None
        when the run never saved one. Raises a one-line error for what cannot resume."""

        def skip(step: int, error: CheckpointError) -> None:
            self.skipped.append(str(error))
            if self.is_writer:
                print(f"{self.runtime}: skipping checkpoint {error}", file=sys.stderr, flush=True)

        found = self.checkpointer.restore_newest(train, runtime, skip, move_aside=self.is_writer)
        if found is None:
            self._none_restored()
            return None
        step, train_state, runtime_state, meta = found
        changes = self._check_config(step, meta)
        if meta.get("runtime") != self.runtime:
            raise ConfigError(
                f"{self.dir.path} is a {meta.get('runtime')} run: resume it with "
                f"{meta.get('runtime')}, or start a {self.runtime} run from it with --init-from"
            )
        stored_spec = type(spec).from_json(meta["env_spec"])
        if not spec.compatible_with(stored_spec):
            raise ConfigError(
                f"the checkpoint's env spec {stored_spec} does not match the env's {spec}"
            )
        return Restored(train_state, runtime_state, meta), changes

    def _none_restored(self) -> None:
        """No checkpoint restored: fine for a run that never saved one, an error where
        some were tried (or moved aside by an earlier resume)."""
        if self.skipped:
            raise CheckpointError(
                f"no checkpoint of {self.dir.path} restores ({len(self.skipped)} tried): "
                f"{self.skipped[-1]}"
            )
        aside = sorted(glob.glob(os.path.join(self.dir.checkpoints, "*.corrupt*")))
        if aside:  # an earlier resume found every checkpoint unreadable
            names = [os.path.basename(a) for a in aside]
            raise CheckpointError(
                f"no checkpoint of {self.dir.path} restores: each was unreadable and moved "
                f"aside ({names}); resuming would start it over. Start a new run (another "
                f"--run-name), or move a repaired checkpoint back"
            )

    def _check_config(self, step: int, meta: dict[str, Any]) -> dict:
        """The checkpoint's own config, not the editable config.json, is what the resume
        must match: a field that changes what is learned is refused; the allowed changes
        are returned (resumes.jsonl records them)."""
        stored = meta.get("config")
        if not isinstance(stored, dict):  # written before configs were stored with them
            return {}
        changes = changed_fields({k: v for k, v in stored.items() if k != "runtime"}, self.config)
        refuse_learning_changes(
            self.config, self.dir, changes,
            f"the config its checkpoint {step} was trained with (an edited config.json, or "
            "flags)", "resume with the checkpoint's values",
        )  # fmt: skip
        return changes

    def warm_start(self, spec: Any, train: Any) -> tuple[Any, str]:
        """`train` (a TrainState, or one per seed; arrays or ShapeDtypeStructs with their
        shardings) with the params of `config.init_from` (the same agent, an env of the
        same spec) placed as its own, and where they came from."""
        from podracer.runs.source import load
        from podracer.runs.source import parse_source
        from podracer.runs.source import warm_start

        config = self.config
        owner = f"{type(config).__name__}.init_from"
        source = parse_source(config.init_from, config.runs_root, owner)
        # This run's own env and agent are the user's (typed, or a trusted config).
        loaded = load(source, spec, owner, config.trust_code, (config.env, config.agent))
        if loaded.metadata["agent"] != config.agent:
            raise ConfigError(
                f"{owner}: {source.run.name} trained agent {loaded.metadata['agent']!r}, "
                f"this run {config.agent!r}"
            )
        train = warm_start(loaded, train, config.init_opt_state, config.num_members, owner)
        return train, f"{source.run.path}@{loaded.step}"

    def save(
        self,
        step: int,
        train: Any,
        runtime: Any,
        *,
        spec: Any,
        counts: dict[str, Any],
        history: list[dict[str, Any]],
        evaluated: bool,
    ) -> bool:
        """Saves loop step `step`'s `train` and `runtime` state with what a resume and
        `podracer eval` read back: the config, the env's spec and `counts` (`env_steps`,
        `elapsed`, ...). `evaluated`: the step evaluated, and the members' mean
        `EVAL_METRIC` in `history` at its env steps (process 0's: it evaluates; the others
        save without one) ranks the checkpoint among the best kept."""
        metrics = None
        scores = [r[EVAL_METRIC] for r in history
                  if r["env_steps"] == counts["env_steps"] and EVAL_METRIC in r]  # fmt: skip
        if evaluated and scores:
            metrics = {EVAL_METRIC: float(np.mean(scores))}
        config = {"runtime": self.runtime, **self.config.to_json()}
        metadata = {"runtime": self.runtime, "agent": self.config.agent, "config": config,
                    "env_spec": spec.to_json(), "step": step, **counts}  # fmt: skip
        return self.checkpointer.save(step, train, metadata, runtime, metrics)

    def newest(self) -> str:
        """Which checkpoint a run stopped now would resume from, in words."""
        steps = self._checkpointer.all_steps() if self._checkpointer is not None else []
        return f"the newest checkpoint is step {steps[-1]}" if steps else "no checkpoint saved"

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.close()
            self._checkpointer = None


def refuse_learning_changes(
    config: RunConfig, directory: RunDir, changes: dict, against: str, hint: str
) -> None:
    """Refuses a resume that changes fields outside `MAY_CHANGE_ON_RESUME`, naming each
    with its old and new value."""
    allowed = type(config).MAY_CHANGE_ON_RESUME
    refused = {k: v for k, v in changes.items() if k.split(".")[0] not in allowed}
    if refused:
        lines = "\n".join(f"  {k}: {old!r} -> {new!r}" for k, (old, new) in refused.items())
        raise ConfigError(
            f"cannot resume {directory.path}: these fields differ from {against} and change "
            f"what is learned:\n{lines}\n{hint}, or start a new run (another --run-name)"
        )
