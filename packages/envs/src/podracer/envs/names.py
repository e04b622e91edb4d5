"""The one-line error for an environment name that does not exist, with close matches:
one home for the registry and every adapter that checks its own library's ids (so the
adapters need not import the registry that imports them)."""

from __future__ import annotations

import difflib


def close_matches(name: str, names: list[str]) -> list[str]:
    """Up to 5 of `names` close to `name`; failing that, those whose task (the part after
    `source:`) is close to its task, e.g. "gymnax:Cartpole-v1" or "CartPole-v1"."""
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if not close:
        tasks: dict[str, str] = {}
        for n in names:
            tasks.setdefault(n.split(":", 1)[-1], n)
        task = name.split(":", 1)[-1]
        close = [tasks[t] for t in difflib.get_close_matches(task, tasks, n=5)]
    return close


def unknown_name(name: str, names: list[str], what: str = "environment") -> ValueError:
    """`ValueError` naming `name`, its close matches and (up to 60 of) the names there are."""
    close = close_matches(name, names)
    hint = f"did you mean {close}? " if close else ""
    shown = names if len(names) <= 60 else [*names[:60], f"... ({len(names) - 60} more)"]
    return ValueError(f"unknown {what} {name!r}; {hint}available: {shown}")
