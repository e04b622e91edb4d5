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

import functools
from collections.abc import Callable
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.search.config import SearchConfig
from podracer.search.model import MuZeroModel
from podracer.search.model import Params
from podracer.search.model import make_recurrent_fn
from podracer.search.model import make_root

# mctx's QTransform (not exported by mctx): (unbatched tree, node index) -> q-values [A].
QTransform = Callable[[mctx.Tree, chex.Numeric], chex.Array]


def qtransform_fn(config: SearchConfig) -> QTransform:
    """The mctx qtransform function (`(tree, node_index) -> q[A]`) for `config`."""
    name = config.resolved_qtransform
    if name == "mix_value":
        return functools.partial(
            mctx.qtransform_completed_by_mix_value,
            value_scale=config.value_scale,
            maxvisit_init=config.maxvisit_init,
            epsilon=config.rescale_floor,
        )
    if name == "parent_and_siblings":
        return mctx.qtransform_by_parent_and_siblings
    assert config.value_bounds is not None  # checked by SearchConfig
    min_value, max_value = config.value_bounds
    return functools.partial(mctx.qtransform_by_min_max, min_value=min_value, max_value=max_value)


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
        qtransform=qtransform_fn(config),
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
