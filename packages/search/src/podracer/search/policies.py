"""Search policies on mctx: Gumbel MuZero (default) and MuZero with PUCT.

* Gumbel MuZero ("Policy improvement by planning with Gumbel", Danihelka et al., 2022):
  Sequential Halving with Gumbel at the root; the action is the best of the most visited
  considered actions; the policy target is `softmax(prior_logits + completed Q-values)`.
* MuZero (Schrittwieser et al., 2020): PUCT selection with Dirichlet noise on the root
  prior; the policy target is the root visit distribution and the action is sampled from
  it sharpened by `temperature`.

Both are `mctx.gumbel_muzero_policy`'s and `mctx.muzero_policy`'s steps, with mctx's
action selection and Q transforms, run on `tree_search.search` (on a TPU, mctx's
simulations with the tree written by comparisons, not scatters, which a TPU runs as
loops; elsewhere mctx's own search): with the same inputs and key, the same tree and
outputs as mctx's, bit for bit (tested against mctx).
The only departure: the MuZero action is sampled among visited, valid actions only (mctx
gives unvisited and invalid actions the weight `tiny**(1/temperature)`, which a high
temperature turns into a real probability); where mctx's sample is visited and valid,
both agree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.search import tree_search
from podracer.search.config import SearchConfig
from podracer.search.config import SearchNumbers
from podracer.search.model import MuZeroModel
from podracer.search.model import Params
from podracer.search.model import make_recurrent_fn
from podracer.search.model import make_root

# mctx's QTransform (not exported by mctx): (unbatched tree, node index) -> q-values [A].
QTransform = Callable[[mctx.Tree, chex.Numeric], chex.Array]


def qtransform_fn(config: SearchConfig, numbers: SearchNumbers | None = None) -> QTransform:
    """The mctx qtransform function (`(tree, node_index) -> q[A]`) for `config` (with a
    member's `numbers` where swept)."""
    numbers = config.numbers() if numbers is None else numbers
    name = config.resolved_qtransform
    if name == "mix_value":
        return functools.partial(
            mctx.qtransform_completed_by_mix_value,
            value_scale=numbers.value_scale,
            maxvisit_init=numbers.maxvisit_init,
            epsilon=numbers.rescale_floor,
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
    writes: tree_search.Writes = "auto",
    swept: Mapping[str, Any] | None = None,
) -> SearchOutput:
    """Runs the configured policy from an already computed root.

    Args:
      params: forwarded to `recurrent_fn`.
      key: consumed; the same key gives mctx's own result.
      root: `RootFnOutput` with prior_logits `[B, A]`, value `[B]`, embedding `[B, ...]`.
      recurrent_fn: an mctx `RecurrentFn` (see `make_recurrent_fn`).
      config: the search settings.
      invalid_actions: `[B, A]` mask at the root, 1 (or True) for invalid actions.
      writes: how the tree is written (`tree_search.search`): "auto" (by comparisons on
        a TPU, mctx's scatters elsewhere), "compare" or "scatter"; the same result.
      swept: a member's values of the config's numbers (`SearchConfig.SWEEPABLE` names ->
        traced scalars) where a sweep or a population varies them.
    """
    chex.assert_rank([root.prior_logits, root.value], [2, 1])
    if invalid_actions is not None:
        chex.assert_equal_shape([root.prior_logits, invalid_actions])
    numbers = config.numbers(swept)
    qtransform = qtransform_fn(config, numbers)
    # The search's arguments both policies share; each adds its root, key and selection.
    search = functools.partial(
        tree_search.search,
        params,
        recurrent_fn=recurrent_fn,
        num_simulations=config.num_simulations,
        max_depth=config.max_depth,
        invalid_actions=invalid_actions,
        writes=writes,
    )
    policy = _gumbel_muzero if config.policy == "gumbel" else _muzero
    tree, action, action_weights = policy(
        search, key, root, config, numbers, invalid_actions, qtransform
    )
    summary = tree.summary()
    return SearchOutput(
        action=action.astype(jnp.int32),
        action_weights=action_weights,
        root_value=summary.value,
        q_values=summary.qvalues,
        visit_counts=summary.visit_counts,
        tree=tree,
    )


def _gumbel_muzero(search, key, root, config, numbers, invalid_actions, qtransform):
    """`mctx.gumbel_muzero_policy`'s steps on `tree_search.search`: Gumbel noise on the
    root's masked prior, Sequential Halving at the root; the action is the best-scored of
    the most visited considered actions, the target softmax(prior + completed Q)."""
    root = root.replace(prior_logits=_mask_invalid(root.prior_logits, invalid_actions))
    key, gumbel_key = jax.random.split(key)
    logits = root.prior_logits
    gumbel = numbers.gumbel_scale * jax.random.gumbel(gumbel_key, logits.shape, logits.dtype)
    tree = search(
        key,
        root=root,
        root_action_selection_fn=functools.partial(
            mctx.gumbel_muzero_root_action_selection,
            num_simulations=config.num_simulations,
            max_num_considered_actions=config.max_num_considered_actions,
            qtransform=qtransform,
        ),
        interior_action_selection_fn=functools.partial(
            mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform
        ),
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel),
    )
    visits = tree.summary().visit_counts
    completed_q = jax.vmap(qtransform, in_axes=[0, None])(tree, tree.ROOT_INDEX)
    # Sequential Halving's final score: only the most visited actions may be chosen.
    most_visited = visits == jnp.max(visits, axis=-1, keepdims=True)
    centred = logits - jnp.max(logits, axis=-1, keepdims=True)
    score = jnp.maximum(-1e9, gumbel + centred + completed_q)
    score = score + jnp.where(most_visited, 0, -jnp.inf)
    if invalid_actions is not None:
        score = jnp.where(invalid_actions, -jnp.inf, score)
    action = jnp.argmax(score, axis=-1)
    action_weights = jax.nn.softmax(_mask_invalid(logits + completed_q, invalid_actions))
    return tree, action, action_weights


def _muzero(search, key, root, config, numbers, invalid_actions, qtransform):
    """`mctx.muzero_policy`'s steps on `tree_search.search`: Dirichlet noise on the root
    prior, PUCT everywhere; the target is the root's visit distribution, the action
    sampled from it sharpened by `temperature`, among visited actions only (mctx gives
    unvisited and invalid actions `tiny**(1/temperature)`, which a high temperature makes
    a real probability); where mctx's sample is visited, both are the same."""
    action_key, noise_key, search_key = jax.random.split(key, 3)
    batch_size, num_actions = root.prior_logits.shape
    alpha = jnp.full([num_actions], numbers.dirichlet_alpha)
    noise = jax.random.dirichlet(noise_key, alpha=alpha, shape=(batch_size,))
    fraction = numbers.dirichlet_fraction
    probs = (1 - fraction) * jax.nn.softmax(root.prior_logits) + fraction * noise
    noisy_logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
    root = root.replace(prior_logits=_mask_invalid(noisy_logits, invalid_actions))
    interior = functools.partial(
        mctx.muzero_action_selection,
        pb_c_base=numbers.pb_c_base,
        pb_c_init=numbers.pb_c_init,
        qtransform=qtransform,
    )
    tree = search(
        search_key,
        root=root,
        root_action_selection_fn=functools.partial(interior, depth=0),
        interior_action_selection_fn=interior,
    )
    action_weights = tree.summary().visit_probs
    return tree, _sample_visited(action_key, action_weights, numbers.temperature), action_weights


def _mask_invalid(logits: chex.Array, invalid_actions: chex.Array | None) -> chex.Array:
    """Logits with invalid actions at the dtype's lowest value (not -inf, which would
    make a softmax NaN where every action is invalid), after mctx."""
    if invalid_actions is None:
        return logits
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(invalid_actions, jnp.finfo(logits.dtype).min, logits)


def search(
    params: Params,
    key: chex.PRNGKey,
    model: MuZeroModel,
    observation: chex.ArrayTree,
    config: SearchConfig,
    invalid_actions: chex.Array | None = None,
    writes: tree_search.Writes = "auto",
    swept: Mapping[str, Any] | None = None,
) -> SearchOutput:
    """Plans from a batch of observations `[B, ...]` with `model` and returns a `SearchOutput`.

    Jit with `model`, `config` and `writes` closed over or static (all hashable).
    `invalid_actions` `[B, A]` masks actions at the root (1 or True: invalid); `writes`
    and `swept` as `run_policy`'s.
    """
    root = make_root(model, params, observation)
    recurrent_fn = make_recurrent_fn(model)
    return run_policy(params, key, root, recurrent_fn, config, invalid_actions, writes, swept)


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
