"""`tree_search.search` against `mctx.search` itself: the same tree, bit for bit, on a
random model with real-valued rewards, discounts and values, for embeddings written by
comparison (small) and by mctx's scatter (large), with a depth limit that expands leaves
again and with invalid root actions."""

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from podracer.search import tree_search

B, A, SIMS = 6, 4, 12


def _model(latent: int):
    """A random recurrent model: latent -> (reward, discount, prior, value), next latent."""
    keys = jax.random.split(jax.random.key(1), 4)
    w_next = jax.random.normal(keys[0], (A, latent, latent)) / np.sqrt(latent)
    w_out = jax.random.normal(keys[1], (latent, A + 3))

    def recurrent_fn(params, key, action, embedding):
        next_latent = jnp.tanh(jnp.einsum("bi,bij->bj", embedding, w_next[action]))
        out = next_latent @ w_out
        step = mctx.RecurrentFnOutput(
            reward=out[:, 0],
            discount=jax.nn.sigmoid(out[:, 1]),
            prior_logits=out[:, 3:],
            value=out[:, 2],
        )
        return step, next_latent

    root = mctx.RootFnOutput(
        prior_logits=jax.random.normal(keys[2], (B, A)),
        value=jax.random.normal(keys[3], (B,)),
        embedding=jax.random.normal(keys[2], (B, latent)),
    )
    return root, recurrent_fn


def _search_arguments(latent: int, **extra) -> dict:
    """`search`'s keyword arguments for the random model, with PUCT selection."""
    root, recurrent_fn = _model(latent)
    selection = functools.partial(
        mctx.muzero_action_selection, qtransform=mctx.qtransform_by_parent_and_siblings
    )
    return dict(
        root=root,
        recurrent_fn=recurrent_fn,
        root_action_selection_fn=functools.partial(selection, depth=0),
        interior_action_selection_fn=selection,
        num_simulations=SIMS,
        **extra,
    )


@pytest.mark.parametrize("latent", [8, 512], ids=["compared", "scattered"])
@pytest.mark.parametrize("max_depth", [None, 1])
def test_the_same_tree_as_mctx(latent, max_depth):
    assert (latent * (SIMS + 1) > tree_search._SELECT_MAX_ELEMENTS) == (latent == 512)
    invalid = np.zeros((B, A), bool)
    invalid[::2, 1] = True
    kwargs = _search_arguments(latent, max_depth=max_depth, invalid_actions=jnp.asarray(invalid))
    ours = jax.jit(lambda key: tree_search.search(None, key, writes="compare", **kwargs))
    theirs = jax.jit(lambda key: mctx.search(None, key, **kwargs))
    for seed in range(2):
        a, b = ours(jax.random.key(seed)), theirs(jax.random.key(seed))
        jax.tree.map(np.testing.assert_array_equal, a, b)
        assert int(a.node_visits[:, 0].min()) == SIMS + 1  # every simulation reached the root
        if max_depth == 1:  # only the root's children, expanded again and again
            assert (np.asarray(a.children_index[:, 1:]) == mctx.Tree.UNVISITED).all()
            assert int(a.node_visits[:, 1:].max()) > 1


def test_no_scatter_writes_the_tree_statistics():
    kwargs = _search_arguments(8)
    key = jax.random.key(0)
    compare = lambda key: tree_search.search(None, key, writes="compare", **kwargs)  # noqa: E731
    ours = jax.jit(compare).lower(key).as_text()
    theirs = jax.jit(lambda key: mctx.search(None, key, **kwargs)).lower(key).as_text()
    assert "scatter" in theirs and "scatter" not in ours


def test_auto_writes_by_comparison_on_a_tpu_only():
    assert tree_search.resolve_writes("auto") == "scatter"  # this machine: a CPU
    assert tree_search.resolve_writes("compare") == "compare"
    with pytest.raises(
        ValueError, match=r"writes must be one of \('auto', 'compare', 'scatter'\), got 'select'"
    ):
        tree_search.resolve_writes("select")
