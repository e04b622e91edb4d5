"""How to install an optional extra, said the way that works where the code runs.

In a checkout of this project (a uv workspace, whose podracer packages are not from
PyPI) the extras come from `uv sync`; `pip install 'podracer-runs[plot]'` would reach
for the system's pip and a package index that may not hold them. Installed from an
index, pip's form is the right one.
"""

from __future__ import annotations

import functools
import pathlib


@functools.cache
def workspace_root() -> pathlib.Path | None:
    """The checkout this code runs from (`<root>/packages/envs/src/podracer/envs/`, beside
    `uv.lock`), or None when installed as a package."""
    root = pathlib.Path(__file__).resolve().parents[5]
    if (root / "uv.lock").is_file() and (root / "packages" / "envs").is_dir():
        return root
    return None


def install_command(distribution: str, extra: str) -> str:
    """The command that installs `distribution`'s `extra` (e.g. "podracer-runs", "plot")."""
    if workspace_root() is not None:
        # --inexact keeps what is installed (other extras, accelerator wheels).
        return f"uv sync --inexact --all-packages --extra {extra}"
    return f"pip install '{distribution}[{extra}]'"
