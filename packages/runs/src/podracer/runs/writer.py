"""Metric rows to `metrics.jsonl`, TensorBoard and (optionally) Weights & Biases.

`metrics.jsonl` is the record: one JSON object per row, `{"env_steps", "time", ...}`
(plus `"seed"` in a multi-seed run, one row per seed; `"member"`, `"seed"` and the swept
values `"sweep/<field>"` in a sweep, one row per member). On resume the writer first drops
the rows logged after the restored checkpoint (they are replayed, exactly) and rebuilds
the TensorBoard events from the rows kept, so both hold each step once. Only process 0
writes; other processes get a writer that drops everything, so callers never branch.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Any

import numpy as np

from podracer.agents import ConfigError
from podracer.envs.extras import install_command
from podracer.runs.directory import RunDir

# Files a run holds open besides its TensorBoard event files: metrics.jsonl, Orbax's
# and JAX's, the interpreter's own, with room to spare.
OTHER_OPEN_FILES = 256


def check_open_files(members: int, owner: str) -> None:
    """A TensorBoard event file stays open per member (a sweep's or a multi-seed run's
    TensorBoard runs): raises this process's soft limit of open files toward its hard limit
    where `members` need it, else a one-line ConfigError naming the way out."""
    import resource

    need = members + OTHER_OPEN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard == resource.RLIM_INFINITY or need <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return
    raise ConfigError(
        f"{owner}.tensorboard: {members:,} members write {members:,} TensorBoard event files, "
        f"about {need:,} open files, and this process may open at most {hard:,} (ulimit -Hn): "
        f"raise the limit, or run with --no-tensorboard (metrics.jsonl keeps every row)"
    )


class MetricWriter:
    """Writes flat scalar rows keyed by env steps.

    Args:
      run_dir: where to write; None writes nothing (non-zero processes, no run dir).
      tensorboard: also write TensorBoard events (under `run_dir/tensorboard`; one
        subfolder per seed or sweep member, so TensorBoard shows each as a run).
      truncate_after: on resume, the restored env-step count: rows after it move to
        `replaced/<time>/metrics.jsonl` (the resume trains those steps again), and the old
        TensorBoard event files to `replaced/<time>/tensorboard/`: nothing is deleted.
      wandb: `dict(project=..., entity=..., mode=..., config=...)` to log to W&B too.
    """

    def __init__(
        self,
        run_dir: RunDir | None,
        tensorboard: bool = True,
        truncate_after: int | None = None,
        wandb: dict[str, Any] | None = None,
    ):
        self._run_dir = run_dir
        self._file = None
        self.rows = 0
        # A resumed run's rows of its earlier sessions, as metrics.jsonl kept them: the
        # run's final return is over the whole run, as `podracer plot` reads it.
        self.earlier: list[dict[str, Any]] = []
        self._tb: dict[str, Any] = {}
        self._texts: list[Any] = []  # `write_text`'s events, for each TensorBoard run
        self._tb_flushed = time.monotonic()
        self._tensorboard = tensorboard
        self._wandb = None
        if run_dir is None:
            return
        os.makedirs(run_dir.path, exist_ok=True)
        kept = None
        # What a resume replaces is kept aside in replaced/<time>/, never deleted.
        aside = os.path.join(run_dir.path, "replaced", time.strftime("%Y%m%d-%H%M%S"))
        if truncate_after is not None or os.path.exists(run_dir.metrics_file):
            # Rewriting also drops a line torn by a crash, which appending would corrupt.
            limit = math.inf if truncate_after is None else truncate_after
            rows = run_dir.read_metrics()
            kept = [m for m in rows if m["env_steps"] <= limit]
            dropped = [m for m in rows if m["env_steps"] > limit]
            if dropped:  # steps past the restored checkpoint, which the resume trains again
                os.makedirs(aside, exist_ok=True)
                with open(os.path.join(aside, "metrics.jsonl"), "a") as f:
                    f.writelines(json.dumps(m) + "\n" for m in dropped)
            tmp = run_dir.metrics_file + ".tmp"
            with open(tmp, "w") as f:
                f.writelines(json.dumps(m) + "\n" for m in kept)
            os.replace(tmp, run_dir.metrics_file)
        self._file = open(run_dir.metrics_file, "a")
        self.rows = 0 if kept is None else len(kept)  # in metrics.jsonl, this session's too
        self.earlier = kept or []
        if tensorboard:
            self._events = _tensorboard_events()  # here, before the run's clock starts
            # Events are derived from metrics.jsonl: rebuilt, they hold each step once. The
            # old event files move aside (they may hold rows metrics.jsonl lost).
            for old in glob.glob(os.path.join(run_dir.tensorboard, "**", "events.out.tfevents.*"),
                                 recursive=True):  # fmt: skip
                target = os.path.join(
                    aside, "tensorboard", os.path.relpath(old, run_dir.tensorboard)
                )
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.replace(old, target)
            for row in kept or []:
                self._write_tensorboard(row)
        if wandb is not None:
            self._wandb = _start_wandb(run_dir, **wandb)

    def write(
        self, env_steps: int, metrics: Mapping[str, Any], tags: Mapping[str, Any] | None = None
    ) -> None:
        """One row; `tags` tell a multi-seed run's seeds or a sweep's members apart
        (`RunConfig.member_tags`)."""
        if self._file is None:
            return
        row: dict[str, Any] = {"env_steps": int(env_steps), "time": time.time()}
        row.update(tags or {})
        row.update({k: float(np.asarray(v)) for k, v in metrics.items()})
        self._file.write(json.dumps(row) + "\n")
        self._file.flush()
        self.rows += 1
        if self._tensorboard:
            self._write_tensorboard(row)
        if self._wandb is not None:
            folder = _member_folder(row)
            prefix = f"{folder}/" if folder else ""
            values = {prefix + k: v for k, v in row.items() if k not in _NOT_SCALARS}
            self._wandb.log({"global_step": row["env_steps"], **values})

    def _write_tensorboard(self, row: dict[str, Any]) -> None:
        # tensorboardX's synchronous event file, one event per row holding every scalar
        # (what add_scalar writes value by value): its SummaryWriter passes each event
        # through a process queue to a writer thread, ~0.3 ms per row of host time, much
        # of a small Anakin call's (benchmarks/harness_ab.py). Flushed once a second and
        # on close; metrics.jsonl, flushed every row, is the record events are rebuilt from.
        _, Event, Summary = self._events
        values = [
            Summary.Value(tag=k, simple_value=v) for k, v in row.items()
            if k not in _NOT_SCALARS and math.isfinite(v)
        ]  # fmt: skip
        self._events_file(_member_folder(row)).write_event(
            Event(wall_time=row.get("time", time.time()), step=row["env_steps"],
                  summary=Summary(value=values))
        )  # fmt: skip
        self._flush_now_and_then()

    def write_text(self, tag: str, text: str, env_steps: int = 0) -> None:
        """A text (markdown) in TensorBoard's text tab, in every TensorBoard run of this
        run (each seed's or member's, as its first row opens it): how a run shows its
        hyperparameters (`hyperparameter_table`). Not in metrics.jsonl, so the events a
        resume rebuilds lack it: the resume writes its own."""
        if self._file is None or not self._tensorboard:
            return
        _, Event, _ = self._events
        event = Event(wall_time=time.time(), step=int(env_steps),
                      summary=_text_summary(tag, text))  # fmt: skip
        self._texts.append(event)
        for tb in self._tb.values():
            tb.write_event(event)

    def _events_file(self, member: str) -> Any:
        """The event file of a TensorBoard run: `member`'s folder, "" the run's own."""
        if member not in self._tb:
            EventsWriter = self._events[0]
            folder = os.path.join(self._run_dir.tensorboard, member)
            os.makedirs(folder, exist_ok=True)
            self._tb[member] = EventsWriter(os.path.join(folder, "events"))
            for event in self._texts:
                self._tb[member].write_event(event)
        return self._tb[member]

    def _flush_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._tb_flushed >= 1.0:
            for tb in self._tb.values():
                tb.flush()
            self._tb_flushed = now

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        for tb in self._tb.values():
            tb.close()
        self._tb = {}
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None


_NOT_SCALARS = ("env_steps", "time", "seed", "member")


def hyperparameter_table(config: Mapping[str, Any]) -> str:
    """A config as a markdown table of `|param|value|` rows (CleanRL's hyperparameters
    text), nested fields as dotted names (`agent_config.learning_rate`)."""

    def rows(prefix: str, obj: Mapping[str, Any]) -> Iterator[str]:
        for key, value in obj.items():
            if isinstance(value, Mapping) and value:
                yield from rows(f"{prefix}{key}.", value)
            else:
                text = value if isinstance(value, str) else json.dumps(value)
                yield f"|{prefix}{key}|" + text.replace("|", "\\|") + "|"

    return "\n".join(["|param|value|", "|-|-|", *rows("", config)])


def _member_folder(row: Mapping[str, Any]) -> str:
    """The TensorBoard run of a row: `seed_<k>` for a multi-seed run's seed, for a sweep's
    member its index, swept values and seed (`member_3_ppo.learning_rate=0.001_seed_1`),
    and "" (the run's folder itself) otherwise."""
    if "member" not in row:
        return "" if row.get("seed") is None else f"seed_{row['seed']}"
    swept = "".join(
        f"_{k.partition('/')[2]}={v:g}" for k, v in row.items() if k.startswith("sweep/")
    )
    return f"member_{row['member']}{swept}_seed_{row.get('seed', 0)}"


def check_wandb_extra(owner: str = "RunConfig") -> None:
    """Fails in one line when wandb is not installed: found without importing it (seconds),
    as a run opens, before anything is built or compiled."""
    import importlib.util

    if importlib.util.find_spec("wandb") is None:
        raise ConfigError(
            f"{owner}.wandb_project needs the wandb extra: "
            + install_command("podracer-runs", "wandb")
        )


def _start_wandb(run_dir: RunDir, project: str, entity: str | None, mode: str, config: dict):
    """A W&B run for `run_dir`; a resumed run continues the same W&B run (its id is kept
    in `run_dir/wandb.json`). Steps are env steps (`global_step`, as CleanRL logs)."""
    check_wandb_extra()
    import wandb

    id_file = os.path.join(run_dir.path, "wandb.json")
    run_id = None
    if os.path.exists(id_file):
        with open(id_file) as f:
            run_id = json.load(f)["id"]
    run = wandb.init(
        project=project, entity=entity, mode=mode, dir=run_dir.path, name=run_dir.name,
        id=run_id, resume="allow", config=config,
    )  # fmt: skip
    if run_id is None:
        with open(id_file, "w") as f:
            json.dump({"id": run.id}, f)
    run.define_metric("global_step")
    run.define_metric("*", step_metric="global_step")
    return run


def _tensorboard_events() -> tuple[Any, Any, Any]:
    """tensorboardX's `EventsWriter`, `Event` and `Summary`, imported with torch hidden.

    tensorboardX's package init imports torch whenever it is installed (to recognise torch
    tensors, which rows never hold): seconds and hundreds of MB a JAX run has no use for.
    Imported at the first row, inside the timed loop, it halved a short run's SPS (an H200,
    16k-env CartPole PPO: 26M SPS with TensorBoard, 63M without; benchmarks/results/
    throughput.md). While tensorboardX loads, `import torch` raises ImportError (a None
    entry in `sys.modules`), unless torch is already loaded; the entry is removed after,
    so the process can still import torch itself.
    """
    with _torch_hidden():
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event
        from tensorboardX.proto.summary_pb2 import Summary
    return EventsWriter, Event, Summary


def _text_summary(tag: str, text: str) -> Any:
    """tensorboardX's `add_text` summary (tag `<tag>/text_summary`)."""
    with _torch_hidden():
        from tensorboardX.summary import text as summary

    return summary(tag, text)


@contextlib.contextmanager
def _torch_hidden() -> Iterator[None]:
    """`import torch` raises ImportError in the block unless torch is already loaded
    (`_tensorboard_events` says why)."""
    hide = "torch" not in sys.modules
    if hide:
        sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if hide and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


def read_tensorboard(folder: str | os.PathLike) -> list[tuple[str, int, float]]:
    """`(tag, step, value)` of every scalar in the event files under `folder`, in file
    order: what TensorBoard would plot, read without TensorFlow (TFRecords of
    tensorboardX's `Event` protos)."""
    return [
        (v.tag, event.step, v.simple_value) for event in read_events(folder)
        for v in event.summary.value if v.WhichOneof("value") == "simple_value"
    ]  # fmt: skip


def read_tensorboard_text(folder: str | os.PathLike) -> list[tuple[str, int, str]]:
    """`(tag, step, text)` of every text (`MetricWriter.write_text`) under `folder`."""
    return [
        (v.tag.removesuffix("/text_summary"), event.step, v.tensor.string_val[0].decode())
        for event in read_events(folder) for v in event.summary.value
        if v.metadata.plugin_data.plugin_name == "text"
    ]  # fmt: skip


def read_events(folder: str | os.PathLike) -> list[Any]:
    """The `Event`s of the event files under `folder`, in file order."""
    import struct

    _, Event, _ = _tensorboard_events()
    out = []
    pattern = os.path.join(os.fspath(folder), "**", "events.out.tfevents.*")
    for path in sorted(glob.glob(pattern, recursive=True)):
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        while offset + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[offset : offset + 8])
            record = data[offset + 12 : offset + 12 + length]  # after the length and its crc
            offset += 12 + length + 4  # and the record's crc
            out.append(Event.FromString(record))
    return out
