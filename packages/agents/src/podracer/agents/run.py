"""Run directories, metric writers and progress shared by both runtimes.

A run writes `runs/<name>/`: `config.json`, `metrics.jsonl` (one JSON object per
logging step), TensorBoard events and `checkpoints/`. Only process 0 writes; other
processes get a writer that drops everything, so callers never branch on it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, tuples, numpy scalars -> JSON values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(obj, "__array__") and np.ndim(obj) == 0:
        return np.asarray(obj).item()
    return obj


class RunDir:
    """`root/name/` with its config, metrics and checkpoints."""

    def __init__(self, root: str | os.PathLike, name: str):
        if not name or os.sep in name:
            raise ValueError(f"run name must be a non-empty folder name, got {name!r}")
        self.path = os.path.abspath(os.path.join(os.fspath(root), name))
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.metrics_file = os.path.join(self.path, "metrics.jsonl")
        self.config_file = os.path.join(self.path, "config.json")

    def exists(self) -> bool:
        return os.path.exists(self.config_file)

    def write_config(self, config: Any) -> None:
        os.makedirs(self.path, exist_ok=True)
        tmp = self.config_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(to_jsonable(config), f, indent=2, sort_keys=True)
        os.replace(tmp, self.config_file)

    def read_config(self) -> dict[str, Any]:
        with open(self.config_file) as f:
            return json.load(f)

    def read_metrics(self) -> list[dict[str, Any]]:
        """The logged lines; a last line torn by a crash mid-write is left out."""
        if not os.path.exists(self.metrics_file):
            return []
        with open(self.metrics_file) as f:
            text = f.read()
        lines = text.split("\n")
        if not text.endswith("\n"):  # the last write never finished
            lines = lines[:-1]
        return [json.loads(line) for line in lines if line.strip()]


class MetricWriter:
    """Writes flat scalar metrics to `metrics.jsonl` and TensorBoard, keyed by env steps.

    On resume, `truncate_after` drops lines logged after the restored checkpoint, so the
    file reads as one uninterrupted run.
    """

    def __init__(self, run_dir: RunDir | None, tensorboard: bool = True, truncate_after: int | None = None):
        self._file = None
        self._tb = None
        if run_dir is None:
            return
        os.makedirs(run_dir.path, exist_ok=True)
        if truncate_after is not None or os.path.exists(run_dir.metrics_file):
            # Rewriting also drops a line torn by a crash, which appending would corrupt.
            limit = math.inf if truncate_after is None else truncate_after
            kept = [m for m in run_dir.read_metrics() if m["env_steps"] <= limit]
            with open(run_dir.metrics_file, "w") as f:
                f.writelines(json.dumps(m) + "\n" for m in kept)
        self._file = open(run_dir.metrics_file, "a")
        if tensorboard:
            from tensorboardX import SummaryWriter  # heavy import, only when writing

            self._tb = SummaryWriter(os.path.join(run_dir.path, "tensorboard"))

    def write(self, env_steps: int, metrics: Mapping[str, Any]) -> None:
        if self._file is None:
            return
        scalars = {k: float(np.asarray(v)) for k, v in metrics.items()}
        self._file.write(json.dumps({"env_steps": int(env_steps), **scalars}) + "\n")
        self._file.flush()
        if self._tb is not None:
            for k, v in scalars.items():
                if math.isfinite(v):
                    self._tb.add_scalar(k, v, int(env_steps))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None


class Progress:
    """One self-overwriting status line: steps, SPS and recent return (plain text when piped)."""

    def __init__(self, total_steps: int, enabled: bool = True, stream=sys.stderr):
        self.total = total_steps
        self.enabled = enabled
        self.stream = stream
        self.tty = stream.isatty()
        self.start = time.perf_counter()
        self._last_print = 0.0

    def update(self, steps: int, sps: float, episodic_return: float | None = None, **extra: float) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not self.tty and now - self._last_print < 5.0 and steps < self.total:
            return
        self._last_print = now
        frac = min(steps / max(self.total, 1), 1.0)
        bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
        ret = "   n/a" if episodic_return is None or not math.isfinite(episodic_return) else f"{episodic_return:7.2f}"
        more = " ".join(f"{k} {v:.3g}" for k, v in extra.items())
        line = f"[{bar}] {steps:>11,}/{self.total:,} steps | {sps:>10,.0f} SPS | return {ret} {more}"
        end = "\r" if self.tty and steps < self.total else "\n"
        print(line, end=end, file=self.stream, flush=True)

    def close(self) -> None:
        if self.enabled and self.tty:
            print(file=self.stream, flush=True)
