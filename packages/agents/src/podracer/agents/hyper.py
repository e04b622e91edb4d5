"""Swept hyperparameters: the numbers one member of a sweep or a population trains with.

A sweep (`--sweep ppo.learning_rate=1e-4,3e-4`) and population-based training put many
members in one compiled program, each with its own values of a few of the agent's
numbers. As in optax's `inject_hyperparams`, a member's agent is built inside the traced
program from its values, handed to the agent's factory as an explicit mapping
(`make_ppo(spec, config, hyper={"learning_rate": <array>})`); the config itself stays a
Python value, checked once when it was made.

Each config class declares what may be swept (`SWEEPABLE`, dotted paths into nested
configs such as `search.gumbel_scale`): numbers its agent reads only as arrays, never in
a Python branch, a shape or a loop count, so members of one program can differ in them.
The agent reads them through `Hyperparams(config, hyper)`: a member's value where it is
swept, the config's own number elsewhere (so an unswept run traces the same program as
before there were sweeps).

JAX-free: the command lines check sweeps against `sweepable` before anything imports JAX.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from podracer.agents.validation import ConfigError

# A config path (`learning_rate`, `search.gumbel_scale`) -> one member's value: a Python
# number, or a traced scalar inside the program.
Hyper = Mapping[str, Any]


def sweepable(config_cls: type) -> tuple[str, ...]:
    """The paths a config class declares sweepable (nested configs' as `field.path`)."""
    return tuple(getattr(config_cls, "SWEEPABLE", ()))


def check_hyper(config: Any, hyper: Hyper) -> None:
    """Every path of `hyper` is one `config`'s class declares sweepable (a one-line
    `ConfigError` naming the allowed paths otherwise)."""
    allowed = sweepable(type(config))
    unknown = sorted(set(hyper) - set(allowed))
    if unknown:
        name = type(config).__name__
        shown = ", ".join(allowed) if allowed else "none (it declares no SWEEPABLE)"
        raise ConfigError(f"{name}: {', '.join(unknown)} cannot be swept; sweepable: {shown}")


class Hyperparams:
    """A member's sweepable numbers: `hp.gamma` is the member's swept value where
    `hyper` holds one (an array inside the program), else `config.gamma`; `hp.search`
    the same view of the nested config `search`. Any other field is read from the config
    itself: asking for one here fails, so structure never comes from a swept value."""

    __slots__ = ("_config", "_hyper", "_allowed")

    def __init__(
        self, config: Any, hyper: Hyper | None = None, allowed: tuple[str, ...] | None = None
    ):
        hyper = dict(hyper or {})
        if allowed is None:
            check_hyper(config, hyper)
            allowed = sweepable(type(config))
        self._config, self._hyper, self._allowed = config, hyper, allowed

    def __getattr__(self, name: str) -> Any:
        if name in self._allowed:
            return self._hyper.get(name, getattr(self._config, name))
        prefix = name + "."
        nested = tuple(p[len(prefix) :] for p in self._allowed if p.startswith(prefix))
        if nested:
            sub = {p[len(prefix) :]: v for p, v in self._hyper.items() if p.startswith(prefix)}
            return Hyperparams(getattr(self._config, name), sub, nested)
        kind = type(self._config).__name__
        raise AttributeError(f"{kind}.{name} is not sweepable: read it from the config")

    def values(self) -> dict[str, Any]:
        """The swept values alone (paths relative to this view's config)."""
        return dict(self._hyper)


def is_zero(value: Any) -> bool:
    """A number that is the Python number 0 (not a member's swept array): the term it
    weighs (a cost, a fade) is left out of the program."""
    return isinstance(value, int | float) and value == 0
