"""What a run ran with: package versions, the code's git commit, the command line.

`provenance()` is what a run records when it starts (`provenance.json`) and each time it
is resumed (its line in `resumes.jsonl`); `package_versions()` is also what every
checkpoint's metadata records. Nothing here fails a run: what cannot be found (a package
not installed, no git, code not run from a checkout) is left out or None.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
import time
from typing import Any

# Beside every installed podracer-* distribution; each only when installed.
PACKAGES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint")
ENV_PACKAGES = ("gymnax", "envpool", "gymnasium", "ale-py", "brax", "jumanji", "craftax")
GIT_TIMEOUT = 2.0  # seconds per git command


def package_versions() -> dict[str, str]:
    """`{distribution: version}` of the installed podracer-* distributions, the JAX stack
    (`PACKAGES`) and the env libraries (`ENV_PACKAGES`); one not installed is left out."""
    return dict(_package_versions())


@functools.cache  # read once a process: every checkpoint records them
def _package_versions() -> tuple[tuple[str, str], ...]:
    podracer = set()
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("podracer-"):
            podracer.add(name)
    out = []
    for name in (*sorted(podracer), *PACKAGES, *ENV_PACKAGES):
        try:
            out.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            pass
    return tuple(out)


def git_state(path: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """`{"commit", "dirty", "root"}` of the git checkout that tracks the file `path`
    (default: podracer.runs's own `__init__.py`, so the checkout the code runs from);
    `dirty`: tracked files differ from the commit (None if git could not tell in time).
    None when git is not installed, too slow, or the file is not tracked by a checkout
    (an installed wheel, a copy of the code)."""
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "--no-optional-locks", "-C", folder, *args], capture_output=True,
            text=True, timeout=GIT_TIMEOUT, check=True, stdin=subprocess.DEVNULL,
        ).stdout.strip()  # fmt: skip

    try:
        git("ls-files", "--error-unmatch", "--", name)  # tracked: the code is the checkout's
        commit, root = git("rev-parse", "HEAD", "--show-toplevel").splitlines()
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    try:
        dirty: bool | None = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        dirty = None
    return {"commit": commit, "dirty": dirty, "root": root}


def provenance() -> dict[str, Any]:
    """What this process runs: when, where, the command line, Python, the packages'
    versions and the git checkout's commit (`git_state`)."""
    return {
        "time": time.time(),
        "host": socket.gethostname(),
        "argv": list(sys.argv),
        "python": platform.python_version(),
        "packages": package_versions(),
        "git": git_state(),
    }
