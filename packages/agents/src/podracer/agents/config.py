"""Validation helpers for frozen config dataclasses: fail before compiling, naming the field."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def _value(cfg: Any, field: str) -> Any:
    return getattr(cfg, field)


def fail(cfg: Any, field: str, expected: str) -> None:
    raise ValueError(f"{type(cfg).__name__}.{field} must be {expected}, got {_value(cfg, field)!r}")


def check_positive(cfg: Any, *fields: str) -> None:
    for f in fields:
        v = _value(cfg, f)
        if not isinstance(v, int | float) or isinstance(v, bool) or not v > 0:
            fail(cfg, f, "> 0")


def check_range(cfg: Any, field: str, low: float, high: float) -> None:
    v = _value(cfg, field)
    if not isinstance(v, int | float) or not low <= v <= high:
        fail(cfg, field, f"in [{low}, {high}]")


def check_choice(cfg: Any, field: str, choices: Iterable[Any]) -> None:
    choices = tuple(choices)
    if _value(cfg, field) not in choices:
        fail(cfg, field, f"one of {choices}")
