"""Run directories: where a run keeps everything it writes.

    runs/<name>/
      config.json       the run's config (the current one, after any resume)
      metrics.jsonl     one JSON object per logged row: env_steps, time, metrics
      provenance.json   what the first start ran with: versions, git commit, command line
      resumes.jsonl     one line per resume: the checkpoint restored, the fields changed,
                        its own provenance
      tensorboard/      TensorBoard events (rebuilt from metrics.jsonl after a resume)
      checkpoints/      Orbax checkpoints, one folder per loop step
      eval.json, videos/, plots/   what the tools add
    runs/.<name>.lock   while a process trains the run (`RunDir.lock`)

Names follow CleanRL's habit, `<env>__<agent>__<seed>__<unix time>`, when none is given.
Nothing here deletes a file the user or an earlier run wrote.
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    import filelock


class RunInUse(RuntimeError):
    """Another process holds the run's lock."""


class RunLock:
    """A held run lock (a `filelock.FileLock`: `flock` on Unix); `release` removes the
    file, then unlocks it, so a run leaves no lock file behind (a killed holder's file
    stays, and is simply taken by the next start)."""

    def __init__(self, lock: filelock.FileLock):
        self.lock: filelock.FileLock | None = lock  # held until `release`

    def release(self) -> None:
        if self.lock is not None:
            try:
                os.unlink(self.lock.lock_file)  # still locked: no other start holds this file
            except FileNotFoundError:
                pass
            self.lock.release(force=True)
            self.lock = None


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
        self.provenance_file = os.path.join(self.path, "provenance.json")
        self.tensorboard = os.path.join(self.path, "tensorboard")
        self.videos = os.path.join(self.path, "videos")

    @classmethod
    def at(cls, path: str | os.PathLike) -> RunDir:
        """The run directory at `path` (a folder holding config.json)."""
        path = os.path.abspath(os.fspath(path))
        return cls(os.path.dirname(path), os.path.basename(path))

    @property
    def lock_file(self) -> str:
        """Beside the run's folder, not in it: a new run's folder stays empty until its
        config is written, and a lock taken before the folder exists orders two starts."""
        return os.path.join(os.path.dirname(self.path), f".{self.name}.lock")

    def lock(self) -> RunLock:
        """Takes the run's lock, without waiting: one process (group) trains a run at a
        time. Raises `RunInUse` naming the holder's pid and host when another holds it.
        The OS releases it when the holder exits, however it exits (kill -9 included)."""
        import filelock

        os.makedirs(os.path.dirname(self.path), exist_ok=True)

        def record_holder(fd: int) -> None:  # read by a start this lock refuses
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)

        lock = filelock.FileLock(self.lock_file, thread_local=False, on_acquired=record_holder)
        for attempt in range(_LOCK_ATTEMPTS):
            try:
                lock.acquire(blocking=False)
                return RunLock(lock)
            except filelock.Timeout:
                holder = _read_holder(self.lock_file)
            # No holder named: the one before us removed its file as it released it (our
            # lock was on a file no longer at the path), or has not yet written its name.
            if holder or attempt == _LOCK_ATTEMPTS - 1:
                holder = holder or "another process"
                raise RunInUse(f"run {self.path} is in use by {holder}") from None
            time.sleep(0.01)
        raise AssertionError("unreachable")

    def exists(self) -> bool:
        """Whether a run was started here (its config was written)."""
        return os.path.exists(self.config_file)

    def record_start(
        self, config: dict[str, Any], ran: dict[str, Any], resume: dict[str, Any] | None
    ) -> None:
        """A session's start: its config, and what ran (`ran`, `provenance()`'s): the
        first start's in provenance.json, each resume's in its `resumes.jsonl` record
        (`resume`: what it restored, skipped and changed)."""
        self.write_config(config)
        if resume is None:
            self.write_provenance(ran)
        else:
            self.append_resume({"time": time.time(), **resume, "provenance": ran})

    def resume_command(self, runtime: str) -> str:
        """The command line that resumes this run."""
        root = os.path.dirname(self.path)
        where = "" if os.path.abspath(root) == os.path.abspath("runs") else f" --runs-root {root}"
        return f"{runtime} --run-name {self.name}{where} --resume"

    def write_config(self, config: dict[str, Any]) -> None:
        """Writes config.json atomically (a reader never sees half a file)."""
        os.makedirs(self.path, exist_ok=True)
        _write_json(self.config_file, config)

    def write_provenance(self, record: dict[str, Any]) -> bool:
        """Writes provenance.json (`podracer.runs.provenance`), the run's first start's;
        never replaces one (False): a resume records its own in resumes.jsonl."""
        if os.path.exists(self.provenance_file):
            return False
        os.makedirs(self.path, exist_ok=True)
        _write_json(self.provenance_file, record)
        return True

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


_LOCK_ATTEMPTS = 20


def _read_holder(path: str) -> str:
    """What a lock's holder wrote in its file (`RunDir.lock`); "" if nothing, or no file."""
    try:
        with open(path, "rb") as f:
            return f.read(256).decode(errors="replace").strip()
    except FileNotFoundError:
        return ""


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The JSON objects of a `.jsonl` file (metrics.jsonl, resumes.jsonl, ...), the one
    reader of them all. A last line that is cut short or not JSON is torn (a crash
    mid-write) and left out; any other line that is not a JSON object (edited by hand,
    written by another program) is a one-line ValueError naming the file and line."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        text = f.read()
    lines = text.split("\n")
    if not text.endswith("\n"):  # the last write never finished
        lines = lines[:-1]
    while lines and not lines[-1].strip():
        lines.pop()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row, why = json.loads(line), f"{line[:40]!r}"
        except json.JSONDecodeError as e:
            if number == len(lines):  # torn
                break
            row, why = None, e.msg
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: not a JSON object ({why}); repair or delete "
                             f"that line (nothing was changed)")  # fmt: skip
        rows.append(row)
    return rows


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
