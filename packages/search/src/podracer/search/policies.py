"""Search policies on mctx: Gumbel MuZero (default) and MuZero with PUCT.

* Gumbel MuZero ("Policy improvement by planning with Gumbel", Danihelka et al., 2022):
  Sequential Halving with Gumbel at the root; the action is the best of the most visited
  considered actions; the policy target is `softmax(prior_logits + completed Q-values)`.
* MuZero (Schrittwieser et al., 2020): PUCT selection with Dirichlet noise on the root
  prior; the policy target is the root visit distribution and the action is sampled from
  it sharpened by `temperature`.

`search` is a thin layer over `mctx.gumbel_muzero_policy` / `mctx.muzero_policy`: with
the same inputs and key it returns exactly what mctx returns. The only departure: the
MuZero action is sampled among visited, valid actions only (mctx gives unvisited and
invalid actions the weight `tiny**(1/temperature)`, which a high temperature turns into
a real probability); where mctx's sample is visited and valid, both agree bit for bit.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Literal
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.search.model import MuZeroModel
from podracer.search.model import Params
from podracer.search.model import make_recurrent_fn
from podracer.search.model import make_root

PolicyName = Literal["gumbel", "muzero"]
QTransformName = Literal["default", "mix_value", "parent_and_siblings", "min_max"]

# mctx's QTransform (not exported by mctx): (unbatched tree, node index) -> q-values [A].
QTransform = Callable[[mctx.Tree, chex.Numeric], chex.Array]

_POLICIES = ("gumbel", "muzero")
_QTRANSFORMS = ("default", "mix_value", "parent_and_siblings", "min_max")
_DEFAULT_QTRANSFORM = {"gumbel": "mix_value", "muzero": "parent_and_siblings"}


@dataclasses.dataclass(frozen=True)
class SearchConfig:
    """Static search settings; hashable, so jitted code can close over it.

    Fields used by one policy only are ignored by the other (noted per field).
    """

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

        if self.policy not in _POLICIES:
            fail("policy", f"one of {_POLICIES}")
        if not is_int(self.num_simulations) or self.num_simulations < 1:
            fail("num_simulations", "an int >= 1")
        if self.max_depth is not None and (not is_int(self.max_depth) or self.max_depth < 1):
            fail("max_depth", "None or an int >= 1")
        if not is_number(self.gumbel_scale) or self.gumbel_scale < 0:
            fail("gumbel_scale", "a number >= 0")
        if not is_int(self.max_num_considered_actions) or self.max_num_considered_actions < 1:
            fail("max_num_considered_actions", "an int >= 1")
        if not is_number(self.dirichlet_alpha) or self.dirichlet_alpha <= 0:
            fail("dirichlet_alpha", "a number > 0")
        if not is_number(self.dirichlet_fraction) or not 0 <= self.dirichlet_fraction <= 1:
            fail("dirichlet_fraction", "a number in [0, 1]")
        if not is_number(self.temperature) or self.temperature < 0:
            fail("temperature", "a number >= 0")
        if not is_number(self.pb_c_init) or self.pb_c_init < 0:
            fail("pb_c_init", "a number >= 0")
        if not is_number(self.pb_c_base) or self.pb_c_base <= 0:
            fail("pb_c_base", "a number > 0")
        if self.qtransform not in _QTRANSFORMS:
            fail("qtransform", f"one of {_QTRANSFORMS}")
        if not is_number(self.value_scale) or self.value_scale <= 0:
            fail("value_scale", "a number > 0")
        if not is_number(self.maxvisit_init) or self.maxvisit_init < 0:
            fail("maxvisit_init", "a number >= 0")
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
        for name in (
            "gumbel_scale", "dirichlet_alpha", "dirichlet_fraction", "temperature",
            "pb_c_init", "pb_c_base", "value_scale", "maxvisit_init",
        ):  # fmt: skip
            object.__setattr__(self, name, float(getattr(self, name)))
        if bounds is not None:
            object.__setattr__(self, "value_bounds", (float(bounds[0]), float(bounds[1])))

    @property
    def resolved_qtransform(self) -> str:
        """The qtransform in use, with "default" resolved for the policy."""
        if self.qtransform == "default":
            return _DEFAULT_QTRANSFORM[self.policy]
        return self.qtransform

    def qtransform_fn(self) -> QTransform:
        """The mctx qtransform function (`(tree, node_index) -> q[A]`) for this config."""
        name = self.resolved_qtransform
        if name == "mix_value":
            return functools.partial(
                mctx.qtransform_completed_by_mix_value,
                value_scale=self.value_scale,
                maxvisit_init=self.maxvisit_init,
            )
        if name == "parent_and_siblings":
            return mctx.qtransform_by_parent_and_siblings
        assert self.value_bounds is not None  # checked in __post_init__
        min_value, max_value = self.value_bounds
        return functools.partial(
            mctx.qtransform_by_min_max, min_value=min_value, max_value=max_value
        )


class SearchOutput(NamedTuple):
    """The result of one search over a batch of roots."""

    action: chex.Array  # [B] int32, the action to take
    action_weights: chex.Array  # [B, A] policy target
    #   (gumbel: softmax(prior logits + completed Q); muzero: root visit probabilities)
    root_value: chex.Array  # [B] search value of the root (value target)
    q_values: chex.Array  # [B, A] root Q-values r + discount * v (0 for unvisited actions)
    visit_counts: chex.Array  # [B, A] root visit counts
    tree: mctx.Tree  # [B, ...] the whole search tree (dropped by XLA when unused)


def run_policy(
    params: Params,
    key: chex.PRNGKey,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    config: SearchConfig,
    invalid_actions: chex.Array | None = None,
) -> SearchOutput:
    """Runs the configured mctx policy from an already computed root.

    Args:
      params: forwarded to `recurrent_fn`.
      key: consumed; the same key gives mctx's own result.
      root: `RootFnOutput` with prior_logits `[B, A]`, value `[B]`, embedding `[B, ...]`.
      recurrent_fn: an mctx `RecurrentFn` (see `make_recurrent_fn`).
      config: the search settings.
      invalid_actions: `[B, A]` mask at the root, 1 (or True) for invalid actions.
    """
    chex.assert_rank([root.prior_logits, root.value], [2, 1])
    if invalid_actions is not None:
        chex.assert_equal_shape([root.prior_logits, invalid_actions])
    common = dict(
        params=params,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=config.num_simulations,
        invalid_actions=invalid_actions,
        max_depth=config.max_depth,
        qtransform=config.qtransform_fn(),
    )
    if config.policy == "gumbel":
        output = mctx.gumbel_muzero_policy(
            rng_key=key,
            max_num_considered_actions=config.max_num_considered_actions,
            gumbel_scale=config.gumbel_scale,
            **common,
        )
        action = output.action
    else:
        output = mctx.muzero_policy(
            rng_key=key,
            dirichlet_fraction=config.dirichlet_fraction,
            dirichlet_alpha=config.dirichlet_alpha,
            pb_c_init=config.pb_c_init,
            pb_c_base=config.pb_c_base,
            temperature=config.temperature,
            **common,
        )
        # mctx.muzero_policy samples with the first of `split(key, 3)`; we resample with
        # the same key and logits, restricted to visited actions (never invalid ones).
        action_key, _, _ = jax.random.split(key, 3)
        action = _sample_visited(action_key, output.action_weights, config.temperature)
    tree = output.search_tree
    summary = tree.summary()
    return SearchOutput(
        action=action.astype(jnp.int32),
        action_weights=output.action_weights,
        root_value=summary.value,
        q_values=summary.qvalues,
        visit_counts=summary.visit_counts,
        tree=tree,
    )


def search(
    params: Params,
    key: chex.PRNGKey,
    model: MuZeroModel,
    observation: chex.ArrayTree,
    config: SearchConfig,
    invalid_actions: chex.Array | None = None,
) -> SearchOutput:
    """Plans from a batch of observations `[B, ...]` with `model` and returns a `SearchOutput`.

    Jit with `model` and `config` closed over or static (both are hashable).
    `invalid_actions` `[B, A]` masks actions at the root (1 or True: invalid).
    """
    root = make_root(model, params, observation)
    return run_policy(params, key, root, make_recurrent_fn(model), config, invalid_actions)


def _sample_visited(key: chex.PRNGKey, visit_probs: chex.Array, temperature: float) -> chex.Array:
    """Samples from `visit_probs**(1/temperature)` (mctx's logits), visited actions only."""
    tiny = jnp.finfo(visit_probs.dtype).tiny
    logits = jnp.log(jnp.maximum(visit_probs, tiny))
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    logits = logits / jnp.maximum(tiny, temperature)
    visited = visit_probs > 0
    # A root with no visited action cannot happen with num_simulations >= 1; keep mctx's
    # logits there anyway rather than sampling from all -inf.
    any_visited = jnp.any(visited, axis=-1, keepdims=True)
    return jax.random.categorical(key, jnp.where(visited | ~any_visited, logits, -jnp.inf))
