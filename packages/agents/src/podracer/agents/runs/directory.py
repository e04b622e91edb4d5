"""Run directories: where a run keeps everything it writes.

    runs/<name>/
      config.json       the run's config (the current one, after any resume)
      metrics.jsonl     one JSON object per logged row: env_steps, time, metrics
      resumes.jsonl     one line per resume: the checkpoint restored, the fields changed
      tensorboard/      TensorBoard events (rebuilt from metrics.jsonl after a resume)
      checkpoints/      Orbax checkpoints, one folder per loop step
      eval.json, videos/, plots/   what the tools add

Names follow CleanRL's habit, `<env>__<agent>__<seed>__<unix time>`, when none is given.
Nothing here deletes a file the user or an earlier run wrote.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


class RunDir:
    """`root/name/` and the files in it."""

    def __init__(self, root: str | os.PathLike, name: str):
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"run name must be a folder name, got {name!r}")
        self.name = name
        self.path = os.path.abspath(os.path.join(os.fspath(root), name))
        self.checkpoints = os.path.join(self.path, "checkpoints")
        self.metrics_file = os.path.join(self.path, "metrics.jsonl")
        self.config_file = os.path.join(self.path, "config.json")
        self.resumes_file = os.path.join(self.path, "resumes.jsonl")
        self.tensorboard = os.path.join(self.path, "tensorboard")
        self.videos = os.path.join(self.path, "videos")

    @classmethod
    def at(cls, path: str | os.PathLike) -> RunDir:
        """The run directory at `path` (a folder holding config.json)."""
        path = os.path.abspath(os.fspath(path))
        return cls(os.path.dirname(path), os.path.basename(path))

    def exists(self) -> bool:
        """Whether a run was started here (its config was written)."""
        return os.path.exists(self.config_file)

    def write_config(self, config: dict[str, Any]) -> None:
        """Writes config.json atomically (a reader never sees half a file)."""
        os.makedirs(self.path, exist_ok=True)
        _write_json(self.config_file, config)

    def read_config(self) -> dict[str, Any]:
        try:
            with open(self.config_file) as f:
                return json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{self.path} is not a run directory (no config.json)"
            ) from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{self.config_file} is not valid JSON ({e})") from None

    def read_metrics(self) -> list[dict[str, Any]]:
        """The logged rows; a last line torn by a crash mid-write is left out."""
        return read_jsonl(self.metrics_file)

    def append_resume(self, record: dict[str, Any]) -> None:
        with open(self.resumes_file, "a") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """The JSON objects of a `.jsonl` file, without a torn (unterminated) last line."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    if not text.endswith("\n"):  # the last write never finished
        lines = lines[:-1]
    return [json.loads(line) for line in lines if line.strip()]


def _write_json(path: str, obj: Any) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def auto_name(
    env: str, agent: str, seed: int, root: str | os.PathLike, now: float | None = None
) -> str:
    """A new, unused run name: `<env>__<agent>__<seed>__<unix time>` (CleanRL's layout)."""
    stamp = int(time.time() if now is None else now)
    base = f"{env.replace(':', '-').replace('/', '-')}__{agent}__{seed}__{stamp}"
    name, k = base, 1
    while os.path.exists(os.path.join(os.fspath(root), name)):
        name, k = f"{base}-{k}", k + 1
    return name
