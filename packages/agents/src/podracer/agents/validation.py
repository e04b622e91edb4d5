"""Validation of frozen config dataclasses: one helper, one message format.

Every config checks its fields in `__post_init__` with these, so bad input fails before
anything compiles with `Owner.field must be <allowed>, got <value>`. The error type,
`ConfigError`, is what command lines report as one line (exit status 2); any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any


class ConfigError(ValueError):
    """A bad value found before compiling; its message names the field and what is allowed."""


def fail(owner: Any, field: str, expected: str, value: Any = None) -> None:
    """Raises `ConfigError("Owner.field must be <expected>, got <value>")`.

    `owner` is a config instance (its class names the field) or a name; `value` defaults
    to the instance's field.
    """
    name = owner if isinstance(owner, str) else type(owner).__name__
    if value is None and not isinstance(owner, str):
        value = getattr(owner, field)
    raise ConfigError(f"{name}.{field} must be {expected}, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """A finite int or float: NaN and infinities are refused wherever a number goes."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_int(cfg: Any, *fields: str, minimum: int = 1) -> None:
    """Each field is an int >= `minimum`."""
    for f in fields:
        v = getattr(cfg, f)
        if not _is_int(v) or v < minimum:
            fail(cfg, f, f"an int >= {minimum}")


def check_finite(cfg: Any) -> None:
    """Every float field (and every float in a tuple field) is finite: NaN and infinities
    are refused before anything trains on them."""
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        values = v if isinstance(v, tuple) else (v,)
        if any(isinstance(x, float) and not math.isfinite(x) for x in values):
            fail(cfg, f.name, "finite", v)


def check_positive(cfg: Any, *fields: str) -> None:
    """Each field is a number > 0."""
    for f in fields:
        v = getattr(cfg, f)
        if not _is_number(v) or not v > 0:
            fail(cfg, f, "finite and > 0")


def check_range(cfg: Any, field: str, low: float, high: float) -> None:
    """The field is a finite number in [low, high] (`high` may be inf: no upper bound)."""
    v = getattr(cfg, field)
    if not _is_number(v) or not low <= v <= high:
        fail(cfg, field, f"in [{low}, {high}]" if math.isfinite(high) else f"finite and >= {low}")


def check_choice(cfg: Any, field: str, choices: Iterable[Any]) -> None:
    """The field is one of `choices`."""
    choices = tuple(choices)
    if getattr(cfg, field) not in choices:
        fail(cfg, field, f"one of {choices}")
