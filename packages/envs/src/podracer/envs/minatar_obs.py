"""gymnax MinAtar observations built without scatters, for accelerators.

gymnax's `MinBreakout.get_obs` writes the paddle, ball and trail into a zero board with
`.at[y, x, c].set(True)`. Vmapped over a batch of envs each write is a scatter, which a
TPU runs as a loop: on one TPU v5e chip the three writes and the brick layer's copy
took ~26 of the 93 ms of a PPO chunk on Breakout-MinAtar at 64 envs
(benchmarks/results/tpu_20261206b.md). Here each layer is a comparison of the board's
row and column indices with the position: the same observation (the tests compare them
over random play), elementwise work that fuses with what reads it.

`make_gymnax` uses these classes in place of gymnax's for the same ids; a user's own
subclass of gymnax's class keeps its own `get_obs`.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp


def _at(size: int, index: jax.Array, values: jax.Array) -> jax.Array:
    """`values == index` as `.at[index]` reads it: a negative index counts from the end
    (an index out of the board on either side matches nothing, as the scatter drops it)."""
    index = jnp.where(index < 0, index + size, index)
    return values == index


def breakout_obs(state: Any, shape: tuple[int, int, int]) -> jax.Array:
    """gymnax `MinBreakout.get_obs(state)`, float32 `[10, 10, 4]`: paddle, ball, trail, bricks."""
    rows = jnp.arange(shape[0])[:, None]
    cols = jnp.arange(shape[1])[None, :]

    def cell(y, x):
        return _at(shape[0], y, rows) & _at(shape[1], x, cols)

    layers = (
        cell(jnp.asarray(9), state.pos),
        cell(state.ball_y, state.ball_x),
        cell(state.last_y, state.last_x),
        state.brick_map.astype(jnp.bool_),
    )
    return jnp.stack(layers, axis=-1).astype(jnp.float32)


def scatter_free_class(env_class: type) -> type | None:
    """The class to build in place of gymnax's `env_class`, or None to keep it."""
    from gymnax.environments.minatar.breakout import MinBreakout

    return _breakout_class() if env_class is MinBreakout else None


@functools.cache
def _breakout_class() -> type:
    from gymnax.environments.minatar.breakout import MinBreakout

    class ScatterFreeBreakout(MinBreakout):
        """gymnax's MinAtar Breakout, its observation built by `breakout_obs`."""

        def get_obs(self, state, params=None, key=None) -> jax.Array:
            return breakout_obs(state, self.obs_shape)

    return ScatterFreeBreakout
