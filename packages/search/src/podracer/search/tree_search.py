"""The simulations of a search, as `mctx.search` runs them, with the tree written by
comparisons rather than scatters: the same tree, bit for bit, and cheap on a TPU.

mctx writes a node's statistics with `x.at[node].set(value)` vmapped over the batch, a
scatter of B index pairs into a `[B, N]` or `[B, N, A]` array (N = num_simulations + 1
nodes), several times per simulation and per step of each backward pass. A TPU emits a
scatter as a loop over its index pairs, so each of these tiny writes cost ~68 us at
B = 768: in a MuZero MinAtar run on one TPU v5e chip (3 seeds x 256 envs) the tree's
scatters were ~68% of the chip's time and its gathers ~10% more
(`benchmarks/results/tpu_20261206c.md`). Here a write is `where(iota == node, value, x)`
and a read the sum of `where(iota == node, x, 0)`: one pass over the node's small arrays,
which XLA fuses, the same values on every backend.

Elsewhere mctx's own search is the faster (a comparison passes over all N nodes where a
CPU's scatter touches one: 1.5-2.5x slower searches at 32 simulations on a CPU), so
`search` runs mctx's there: `writes="auto"` compares on a TPU and scatters elsewhere.

The embeddings are an exception: a node's embedding can be large (a conv latent), and a
comparison passes over every node's, so past `_SELECT_MAX_ELEMENTS` per batch entry they
keep mctx's scatter and gather.

Action selection is mctx's own functions (`mctx.muzero_action_selection`,
`mctx.gumbel_muzero_*_action_selection`), given the tree as seen from the node being
left (its row alone, as node 0: `_node_view`), so that their reads are static slices,
not gathers; a selection function that reads other nodes than the one it is given needs
`writes="scatter"`.
"""

from __future__ import annotations

import math
from typing import Any
from typing import Literal
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

Tree = mctx.Tree
Writes = Literal["auto", "compare", "scatter"]

# An embedding leaf with at most this many elements per batch entry (over all N nodes) is
# written by comparison; a larger one by mctx's scatter (a pass over all nodes would cost
# more than the scatter's loop over the batch).
_SELECT_MAX_ELEMENTS = 4096


def search(
    params: Any,
    rng_key: chex.PRNGKey,
    *,
    root: mctx.RootFnOutput,
    recurrent_fn: mctx.RecurrentFn,
    root_action_selection_fn: mctx.RootActionSelectionFn,
    interior_action_selection_fn: mctx.InteriorActionSelectionFn,
    num_simulations: int,
    max_depth: int | None = None,
    invalid_actions: chex.Array | None = None,
    extra_data: Any = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    writes: Writes = "auto",
) -> Tree:
    """`mctx.search` with the same arguments and result: `num_simulations` simulations
    from `root` (`[B, A]` prior logits, `[B]` value, `[B, ...]` embedding), each one
    selection down the tree, one `recurrent_fn` call expanding a leaf, and a backward
    pass; returns the `mctx.Tree` `[B, N, ...]`.

    `writes`: "compare" (the tree written and read by comparisons), "scatter" (mctx's
    search itself), or "auto": "compare" where JAX's default backend is a TPU, else
    "scatter". The tree is the same bit for bit."""
    writes = resolve_writes(writes)
    if writes == "scatter":
        return mctx.search(
            params, rng_key, root=root, recurrent_fn=recurrent_fn,
            root_action_selection_fn=root_action_selection_fn,
            interior_action_selection_fn=interior_action_selection_fn,
            num_simulations=num_simulations, max_depth=max_depth,
            invalid_actions=invalid_actions, extra_data=extra_data, loop_fn=loop_fn,
        )  # fmt: skip

    def select(key, view, depth):  # `view`: the tree seen from the node, as node 0
        return jax.lax.cond(
            depth == 0,
            lambda x: root_action_selection_fn(x[0], x[1], 0),
            lambda x: interior_action_selection_fn(x[0], x[1], 0, x[2]),
            (key, view, depth),
        )

    batch_size = root.value.shape[0]
    max_depth = num_simulations if max_depth is None else max_depth
    if invalid_actions is None:
        invalid_actions = jnp.zeros_like(root.prior_logits)

    def simulation(sim, carry):
        key, tree = carry
        key, simulate_key, expand_key = jax.random.split(key, 3)
        keys = jax.random.split(simulate_key, batch_size)
        parent, action = _simulate(keys, tree, select, max_depth)
        # A node first expanded by simulation `sim` gets index `sim + 1` (0 is the root).
        child = _read_edge(tree.children_index, parent, action)
        child = jnp.where(child == Tree.UNVISITED, sim + 1, child)
        tree = _expand(params, expand_key, tree, recurrent_fn, parent, action, child)
        return key, _backward(tree, child)

    tree = _tree_from_root(root, num_simulations, invalid_actions, extra_data)
    _, tree = loop_fn(0, num_simulations, simulation, (rng_key, tree))
    return tree


def resolve_writes(writes: Writes) -> Literal["compare", "scatter"]:
    """`writes` with "auto" decided by JAX's default backend (see `search`)."""
    if writes not in ("auto", "compare", "scatter"):
        raise ValueError(f"writes must be one of ('auto', 'compare', 'scatter'), got {writes!r}")
    if writes == "auto":
        return "compare" if jax.default_backend() == "tpu" else "scatter"
    return writes


# -- reads and writes of one node (or edge), written for one tree and vmapped ----------


def _node_mask(x: chex.Array, node: chex.Array) -> chex.Array:
    """`[N, 1...]`: True at `node` of one tree's `x` `[N, ...]`."""
    hit = jnp.arange(x.shape[0]) == node
    return hit.reshape(hit.shape + (1,) * (x.ndim - 1))


def _edge_mask(x: chex.Array, node: chex.Array, action: chex.Array) -> chex.Array:
    """`[N, A]`: True at `(node, action)` of one tree's `x` `[N, A]`."""
    return (jnp.arange(x.shape[0])[:, None] == node) & (jnp.arange(x.shape[1])[None, :] == action)


def _at(x: chex.Array, node: chex.Array) -> chex.Array:
    """`x[node]`: the sum over nodes of `where(node mask, x, 0)` (exact: one term)."""
    return jnp.sum(jnp.where(_node_mask(x, node), x, 0), axis=0).astype(x.dtype)


def _at_edge(x: chex.Array, node: chex.Array, action: chex.Array) -> chex.Array:
    """`x[node, action]`, as `_at`."""
    return jnp.sum(jnp.where(_edge_mask(x, node, action), x, 0)).astype(x.dtype)


def _set(x: chex.Array, node: chex.Array, value: chex.Array) -> chex.Array:
    """`x` with `x[node] = value`."""
    return jnp.where(_node_mask(x, node), jnp.asarray(value, x.dtype)[None], x)


def _set_edge(x: chex.Array, node: chex.Array, action: chex.Array, value: chex.Array):
    """`x` with `x[node, action] = value`."""
    return jnp.where(_edge_mask(x, node, action), jnp.asarray(value, x.dtype), x)


# The same over a batch of trees `[B, N, ...]`, one node (or edge) each.
_read_node, _read_edge = jax.vmap(_at), jax.vmap(_at_edge)
_write_node, _write_edge = jax.vmap(_set), jax.vmap(_set_edge)


def _small(x: chex.Array) -> bool:
    return math.prod(x.shape[1:]) <= _SELECT_MAX_ELEMENTS


def _read_embedding(x: chex.Array, node: chex.Array) -> chex.Array:
    if _small(x):
        return _read_node(x, node)
    return x[jnp.arange(x.shape[0]), node]


def _write_embedding(x: chex.Array, node: chex.Array, value: chex.Array) -> chex.Array:
    if _small(x):
        return _write_node(x, node, value)
    return x.at[jnp.arange(x.shape[0]), node].set(value)


# -- the search's steps ---------------------------------------------------------------


def _tree_from_root(
    root: mctx.RootFnOutput, num_simulations: int, invalid_actions: chex.Array, extra_data: Any
) -> Tree:
    """An empty tree of `num_simulations + 1` nodes with the root's node filled in."""
    chex.assert_rank(root.prior_logits, 2)
    batch_size, num_actions = root.prior_logits.shape
    chex.assert_shape(root.value, [batch_size])
    nodes = (batch_size, num_simulations + 1)
    edges = nodes + (num_actions,)
    dtype = root.value.dtype
    tree = Tree(
        node_visits=jnp.zeros(nodes, jnp.int32),
        raw_values=jnp.zeros(nodes, dtype),
        node_values=jnp.zeros(nodes, dtype),
        parents=jnp.full(nodes, Tree.NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(nodes, Tree.NO_PARENT, jnp.int32),
        children_index=jnp.full(edges, Tree.UNVISITED, jnp.int32),
        children_prior_logits=jnp.zeros(edges, root.prior_logits.dtype),
        children_values=jnp.zeros(edges, dtype),
        children_visits=jnp.zeros(edges, jnp.int32),
        children_rewards=jnp.zeros(edges, dtype),
        children_discounts=jnp.zeros(edges, dtype),
        embeddings=jax.tree.map(lambda x: jnp.zeros(nodes + x.shape[1:], x.dtype), root.embedding),
        root_invalid_actions=invalid_actions,
        extra_data=extra_data,
    )
    at_root = jnp.full([batch_size], Tree.ROOT_INDEX, jnp.int32)
    return _fill_node(tree, at_root, root.prior_logits, root.value, root.embedding)


def _fill_node(
    tree: Tree, node: chex.Array, prior_logits: chex.Array, value: chex.Array, embedding: Any
) -> Tree:
    """Writes a newly evaluated node: its prior, value, embedding, one more visit (a leaf
    past `max_depth` can be expanded again)."""
    chex.assert_shape(prior_logits, (tree.node_visits.shape[0], tree.num_actions))
    visits = _read_node(tree.node_visits, node) + 1
    return tree.replace(
        children_prior_logits=_write_node(tree.children_prior_logits, node, prior_logits),
        raw_values=_write_node(tree.raw_values, node, value),
        node_values=_write_node(tree.node_values, node, value),
        node_visits=_write_node(tree.node_visits, node, visits),
        embeddings=jax.tree.map(
            lambda x, e: _write_embedding(x, node, e), tree.embeddings, embedding
        ),
    )


_NODE_FIELDS = (
    "node_visits", "raw_values", "node_values", "parents", "action_from_parent",
    "children_index", "children_prior_logits", "children_visits", "children_rewards",
    "children_discounts", "children_values",
)  # fmt: skip


def _node_view(tree: Tree, node: chex.Array) -> Tree:
    """The (unbatched) tree as action selection sees it from `node`: every per-node field
    holds `node`'s row alone, as node 0, so that selection indexes it statically rather
    than gathering (mctx's selection functions and Q transforms read the node's row, the
    root's invalid actions and `extra_data` only). The embeddings stay as they are."""
    row = lambda x: _at(x, node)[None]  # noqa: E731
    return tree.replace(**{name: row(getattr(tree, name)) for name in _NODE_FIELDS})


class _Descent(NamedTuple):
    key: chex.PRNGKey
    node: chex.Array  # the node whose action is being chosen
    action: chex.Array
    next_node: chex.Array  # where the action leads (UNVISITED: a leaf's edge)
    depth: chex.Array
    going: chex.Array


def _simulate(keys: chex.Array, tree: Tree, select, max_depth: int):
    """`(node [B], action [B])`: each batch entry's walk from the root down to an
    unexpanded edge, or to `max_depth` (mctx's `simulate`, the same keys consumed)."""

    def one(key, tree):  # one batch entry's (unbatched) tree
        def step(s: _Descent) -> _Descent:
            key, select_key = jax.random.split(s.key)
            action = select(select_key, _node_view(tree, s.next_node), s.depth)
            next_node = _at_edge(tree.children_index, s.next_node, action)
            depth = s.depth + 1
            going = (next_node != Tree.UNVISITED) & (depth < max_depth)
            return _Descent(key, s.next_node, action, next_node, depth, going)

        start = _Descent(
            key,
            jnp.array(Tree.NO_PARENT, jnp.int32),
            jnp.array(Tree.NO_PARENT, jnp.int32),
            jnp.array(Tree.ROOT_INDEX, jnp.int32),
            jnp.zeros((), tree.children_prior_logits.dtype),
            jnp.array(True),
        )
        end = jax.lax.while_loop(lambda s: s.going, step, start)
        return end.node, end.action

    return jax.vmap(one)(keys, tree)


def _expand(params, key, tree: Tree, recurrent_fn, parent, action, child) -> Tree:
    """Evaluates `action` from each `parent` with `recurrent_fn` and writes the result as
    node `child`, linked under its parent's edge."""
    embedding = jax.tree.map(lambda x: _read_embedding(x, parent), tree.embeddings)
    step, embedding = recurrent_fn(params, key, action, embedding)
    batch_size = tree.node_visits.shape[0]
    chex.assert_shape(step.prior_logits, [batch_size, tree.num_actions])
    chex.assert_shape([step.reward, step.discount, step.value], [batch_size])
    tree = _fill_node(tree, child, step.prior_logits, step.value, embedding)
    return tree.replace(
        children_index=_write_edge(tree.children_index, parent, action, child),
        children_rewards=_write_edge(tree.children_rewards, parent, action, step.reward),
        children_discounts=_write_edge(tree.children_discounts, parent, action, step.discount),
        parents=_write_node(tree.parents, child, parent),
        action_from_parent=_write_node(tree.action_from_parent, child, action),
    )


def _backward(tree: Tree, leaf: chex.Array) -> Tree:
    """From each `leaf` up to the root: every ancestor's value becomes the running mean
    of the discounted returns through it, and its visit counts grow by one."""
    kept = (tree.parents, tree.action_from_parent, tree.children_rewards, tree.children_discounts)
    changed = (tree.node_values, tree.node_visits, tree.children_values, tree.children_visits)

    def one(kept, changed, leaf):  # one batch entry's (unbatched) arrays
        parents, from_parent, rewards, discounts = kept

        def up(carry):
            (values, visits, child_values, child_visits), leaf_value, index = carry
            parent, action = _at(parents, index), _at(from_parent, index)
            count = _at(visits, parent)
            leaf_value = (
                _at_edge(rewards, parent, action) + _at_edge(discounts, parent, action) * leaf_value
            )
            parent_value = (_at(values, parent) * count + leaf_value) / (count + 1.0)
            changed = (
                _set(values, parent, parent_value),
                _set(visits, parent, count + 1),
                _set_edge(child_values, parent, action, _at(values, index)),
                _set_edge(child_visits, parent, action, _at_edge(child_visits, parent, action) + 1),
            )
            return changed, leaf_value, parent

        start = (changed, _at(changed[0], leaf), leaf.astype(jnp.int32))
        changed, _, _ = jax.lax.while_loop(lambda c: c[2] != Tree.ROOT_INDEX, up, start)
        return changed

    values, visits, child_values, child_visits = jax.vmap(one)(kept, changed, leaf)
    return tree.replace(
        node_values=values,
        node_visits=visits,
        children_values=child_values,
        children_visits=child_visits,
    )
