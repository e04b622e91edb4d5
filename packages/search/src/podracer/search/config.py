"""Search settings and categorical supports: frozen dataclasses, importable without JAX.

Configs are read by command lines before anything compiles (and `--help` must not pay
for importing JAX), so the hashable settings live here and the code using them in
`policies` and `transforms`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import NamedTuple

DEFAULT_EPS = 1e-3  # the eps of MuZero's value transform h

PolicyName = Literal["gumbel", "muzero"]
QTransformName = Literal["default", "mix_value", "parent_and_siblings", "min_max"]

_POLICIES = ("gumbel", "muzero")
_QTRANSFORMS = ("default", "mix_value", "parent_and_siblings", "min_max")
_DEFAULT_QTRANSFORM = {"gumbel": "mix_value", "muzero": "parent_and_siblings"}


class SearchNumbers(NamedTuple):
    """The search's numbers one member of a sweep may vary (`SearchConfig.SWEEPABLE`):
    Python floats, or traced scalars where a sweep or a population sets them. The
    policies read these here and the search's structure from its `SearchConfig`."""

    gumbel_scale: Any
    dirichlet_alpha: Any
    dirichlet_fraction: Any
    temperature: Any
    pb_c_init: Any
    pb_c_base: Any
    value_scale: Any
    maxvisit_init: Any
    rescale_floor: Any


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static search settings; hashable, so jitted code can close over it.

    Fields used by one policy only are ignored by the other (noted per field). The
    numbers in `SWEEPABLE` are read only as arrays (`numbers`), so members of one
    program may differ in them.
    """

    SWEEPABLE: ClassVar[tuple[str, ...]] = SearchNumbers._fields

    policy: PolicyName = "gumbel"
    num_simulations: int = 32
    max_depth: int | None = None  # None: as deep as num_simulations allows
    # Gumbel MuZero only.
    gumbel_scale: float = 1.0  # 0.0: deterministic search (e.g. evaluation)
    max_num_considered_actions: int = 16
    # MuZero (PUCT) only.
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25  # 0.0: no root noise
    temperature: float = 1.0  # acting ~ visits**(1/temperature); 0.0: most visited
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    # Q-value normalisation: "default" is "mix_value" for gumbel and
    # "parent_and_siblings" for muzero (mctx's defaults); "min_max" needs value_bounds.
    qtransform: QTransformName = "default"
    value_scale: float = 0.1  # mix_value only: scale of the completed Q-values
    maxvisit_init: float = 50.0  # mix_value only: offset added to the max visit count
    # mix_value only: the smallest spread (max - min of the completed Q-values) that the
    # min-max rescaling divides by; smaller spreads, in the value's own units, stay small
    # instead of becoming a full-strength policy target. mctx's default: 1e-8.
    rescale_floor: float = 1e-8
    value_bounds: tuple[float, float] | None = None  # min_max only: (min_value, max_value)

    def __post_init__(self) -> None:
        def fail(field: str, allowed: str) -> None:
            raise ValueError(
                f"SearchConfig.{field} must be {allowed}, got {getattr(self, field)!r}"
            )

        def is_int(value: object) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        def is_number(value: object) -> bool:
            return isinstance(value, int | float) and not isinstance(value, bool)

        def number(value: object, holds) -> bool:
            return is_number(value) and holds(value)

        if self.policy not in _POLICIES:
            fail("policy", f"one of {_POLICIES}")
        if not is_int(self.num_simulations) or self.num_simulations < 1:
            fail("num_simulations", "an int >= 1")
        if self.max_depth is not None and (not is_int(self.max_depth) or self.max_depth < 1):
            fail("max_depth", "None or an int >= 1")
        if not number(self.gumbel_scale, lambda v: v >= 0):
            fail("gumbel_scale", "a number >= 0")
        if not is_int(self.max_num_considered_actions) or self.max_num_considered_actions < 1:
            fail("max_num_considered_actions", "an int >= 1")
        if not number(self.dirichlet_alpha, lambda v: v > 0):
            fail("dirichlet_alpha", "a number > 0")
        if not number(self.dirichlet_fraction, lambda v: 0 <= v <= 1):
            fail("dirichlet_fraction", "a number in [0, 1]")
        if not number(self.temperature, lambda v: v >= 0):
            fail("temperature", "a number >= 0")
        if not number(self.pb_c_init, lambda v: v >= 0):
            fail("pb_c_init", "a number >= 0")
        if not number(self.pb_c_base, lambda v: v > 0):
            fail("pb_c_base", "a number > 0")
        if self.qtransform not in _QTRANSFORMS:
            fail("qtransform", f"one of {_QTRANSFORMS}")
        if not number(self.value_scale, lambda v: v > 0):
            fail("value_scale", "a number > 0")
        if not number(self.maxvisit_init, lambda v: v >= 0):
            fail("maxvisit_init", "a number >= 0")
        if not number(self.rescale_floor, lambda v: v > 0):
            fail("rescale_floor", "a number > 0")
        bounds = self.value_bounds
        if bounds is not None and not (
            isinstance(bounds, tuple | list)
            and len(bounds) == 2
            and all(is_number(b) for b in bounds)
            and bounds[0] < bounds[1]
        ):
            fail("value_bounds", "None or a pair (min_value, max_value) with min < max")
        if self.resolved_qtransform == "min_max" and bounds is None:
            fail("value_bounds", 'a pair (min_value, max_value) when qtransform="min_max"')
        # mctx asserts float types for these (chex.assert_type); ints are accepted here.
        for name in SearchNumbers._fields:
            object.__setattr__(self, name, float(getattr(self, name)))
        if bounds is not None:
            object.__setattr__(self, "value_bounds", (float(bounds[0]), float(bounds[1])))

    def numbers(self, swept: Mapping[str, Any] | None = None) -> SearchNumbers:
        """This config's numbers, a member's `swept` values (name -> value) in their place."""
        swept = swept or {}
        unknown = sorted(set(swept) - set(SearchNumbers._fields))
        if unknown:
            raise ValueError(f"SearchConfig: {unknown} cannot be swept; sweepable: "
                             f"{list(SearchNumbers._fields)}")  # fmt: skip
        return SearchNumbers(*(swept.get(n, getattr(self, n)) for n in SearchNumbers._fields))

    @property
    def resolved_qtransform(self) -> str:
        """The qtransform in use, with "default" resolved for the policy."""
        if self.qtransform == "default":
            return _DEFAULT_QTRANSFORM[self.policy]
        return self.qtransform


@dataclasses.dataclass(frozen=True)
class DiscreteSupport:
    """A categorical support of `num_bins` evenly spaced atoms on `[min_value, max_value]`.

    Scalars are encoded "two-hot": the probability mass is split between the two atoms
    that bracket the (clipped) scalar so that the expectation over the atoms gives the
    scalar back. With `scaled=True` scalars are first squashed with `signed_hyperbolic`
    (and decoded with `signed_parabolic`): `min_value`/`max_value` are then bounds in the
    squashed space (MuZero: `DiscreteSupport(-300, 300, 601, scaled=True)`).

    Hashable, so it can be closed over by jitted code or passed as a static argument.
    """

    min_value: float
    max_value: float
    num_bins: int
    scaled: bool = False  # squash with h before encoding, unsquash after decoding
    eps: float = DEFAULT_EPS  # the eps of h, used only when scaled

    def __post_init__(self) -> None:
        if not isinstance(self.num_bins, int) or self.num_bins < 2:
            raise ValueError(f"DiscreteSupport.num_bins must be an int >= 2, got {self.num_bins!r}")
        if not self.max_value > self.min_value:
            raise ValueError(
                "DiscreteSupport.max_value must be > min_value, got "
                f"min_value={self.min_value!r}, max_value={self.max_value!r}"
            )
        if not self.eps > 0:
            raise ValueError(f"DiscreteSupport.eps must be > 0, got {self.eps!r}")
        object.__setattr__(self, "min_value", float(self.min_value))
        object.__setattr__(self, "max_value", float(self.max_value))
