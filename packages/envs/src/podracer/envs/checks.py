"""Checks that fail in Python, not in C++ or XLA: the HostEnv adapters' argument checks,
and `check_jax_env`, what a runtime checks of a JaxEnv before it compiles."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from podracer.envs.types import EnvSpec


def check_sizes(num_envs: int, batch_size: int | None) -> int:
    """Validates `num_envs` and `batch_size` (None: == num_envs); returns the batch size."""
    if not isinstance(num_envs, int | np.integer) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    if batch_size is None:
        return int(num_envs)
    if not isinstance(batch_size, int | np.integer) or not 1 <= batch_size <= num_envs:
        raise ValueError(
            f"batch_size must be an integer in 1..num_envs={num_envs}, got {batch_size!r}"
        )
    return int(batch_size)


def check_whole_batch(name: str, num_envs: int, batch_size: int | None, steps: str, overlap: str):
    """`num_envs` of an adapter that steps all its envs at once (`steps`: whose), where a
    smaller `batch_size` is refused naming `overlap`, what Sebulba's async_envs overlaps."""
    num_envs = check_sizes(num_envs, None)
    if batch_size is not None and check_sizes(num_envs, batch_size) != num_envs:
        raise ValueError(
            f"{name}: batch_size={batch_size} < num_envs={num_envs}, but {steps} at once: use "
            f"batch_size=num_envs (Sebulba's async_envs overlaps {overlap} instead)"
        )
    return num_envs


def check_actions(actions, size: int, spec: EnvSpec | int) -> np.ndarray:
    """Validates one action per env against the action space of `spec`; returns them.

    Discrete (`spec.num_actions`, or an int): int32 `[size]` in `0..num_actions-1`, else
    ValueError naming the allowed values. Continuous: real numbers `[size, *action_shape]`,
    finite, returned as float32 clipped to the box (out-of-bounds values are clipped, as
    every continuous adapter does; NaN or inf raise).
    """
    if isinstance(spec, EnvSpec) and spec.is_continuous:
        return _check_box_actions(actions, size, spec)
    num_actions = spec.num_actions if isinstance(spec, EnvSpec) else spec
    a = np.asarray(actions)
    if a.shape != (size,):
        raise ValueError(f"actions must have shape ({size},), got {a.shape}")
    if a.dtype.kind == "i":
        # One comparison checks both bounds: negative values view as huge unsigned ones.
        out_of_range = (a.view(a.dtype.str.replace("i", "u")) >= num_actions).any()
    elif a.dtype.kind == "u":
        out_of_range = (a >= num_actions).any()
    else:
        raise ValueError(f"actions must be integers in 0..{num_actions - 1}, got dtype {a.dtype}")
    if out_of_range:
        raise ValueError(
            f"actions must be in 0..{num_actions - 1} (num_actions={num_actions}), "
            f"got values in {a.min()}..{a.max()}"
        )
    return a.astype(np.int32, copy=False)


def _check_box_actions(actions, size: int, spec: EnvSpec) -> np.ndarray:
    a = np.asarray(actions)
    shape = (size, *spec.action_shape)
    if a.shape != shape:
        raise ValueError(f"actions must have shape {shape}, got {a.shape}")
    if a.dtype.kind not in "fiu":
        raise ValueError(f"actions must be real numbers (float32), got dtype {a.dtype}")
    a = a.astype(np.float32, copy=False)
    if not np.isfinite(a).all():
        raise ValueError(f"actions must be finite, got {np.count_nonzero(~np.isfinite(a))} NaN/inf")
    low, high = _bounds(spec)
    return np.clip(a, low, high)


@functools.cache
def _bounds(spec: EnvSpec) -> tuple[np.ndarray, np.ndarray]:
    """float32 `[1, *action_shape]` bounds, broadcastable against `[size, *action_shape]`."""
    low, high = spec.action_bounds()
    return low[None], high[None]


def check_env_ids(env_ids, size: int | None, num_envs: int) -> np.ndarray:
    """Returns `env_ids` as int32 `[size]` (any length if None) of distinct ids in range."""
    ids = np.asarray(env_ids)
    if ids.ndim != 1 or (size is not None and ids.shape[0] != size):
        want = "[n]" if size is None else f"({size},)"
        raise ValueError(f"env_ids must have shape {want}, got {ids.shape}")
    if ids.dtype.kind not in "iu":
        raise ValueError(f"env_ids must be integers in 0..{num_envs - 1}, got dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= num_envs):
        raise ValueError(
            f"env_ids must be in 0..{num_envs - 1} (num_envs={num_envs}), "
            f"got values in {ids.min()}..{ids.max()}"
        )
    return ids.astype(np.int32, copy=False)


def check_send(pending: str | None) -> None:
    """A `send` while a result is still pending (of a `send` or `async_reset`) is refused."""
    if pending is not None:
        raise RuntimeError(
            "send() twice: each send(actions, env_ids) needs the recv() of the previous "
            "one (or of async_reset()) first"
        )


def whole_batch_actions(actions, env_ids, ids: np.ndarray, num_envs: int, what: str):
    """`actions` in env-id order, for a vector env that steps all its `num_envs` envs at
    once (`ids`: `arange(num_envs)`, the order it keeps); `env_ids` must name each env
    once. `what` names the env in the error ("ale-py's vector env")."""
    if env_ids is ids:
        return actions
    env_ids = check_env_ids(env_ids, num_envs, num_envs)
    if np.array_equal(env_ids, ids):
        return actions
    if np.unique(env_ids).size != num_envs:
        raise ValueError(
            f"env_ids must hold every env id 0..{num_envs - 1} once ({what} steps all its "
            f"envs), got {env_ids.tolist()}"
        )
    return np.asarray(actions)[np.argsort(env_ids)]


def check_jax_env(env: Any) -> None:
    """A JaxEnv's `reset` and `step` traced on abstract values (nothing runs, nothing
    compiles): the step must return the state and timestep types, shapes and dtypes the
    reset returned (a runtime's scan carries them), and observations must be the spec's.
    A ValueError naming the env and the first leaf that differs."""
    import jax

    spec = env.spec
    key = jax.eval_shape(lambda: jax.random.PRNGKey(0))
    state, timestep = jax.eval_shape(env.reset, key)
    action = jax.ShapeDtypeStruct(tuple(spec.action_shape), np.dtype(spec.action_dtype))
    next_state, next_timestep = jax.eval_shape(env.step, state, action, key)
    name = f"env {spec.name!r}"
    obs = timestep.observation
    want = (tuple(spec.observation_shape), np.dtype(spec.observation_dtype))
    if (tuple(obs.shape), np.dtype(obs.dtype)) != want:
        raise ValueError(f"{name}: reset's observation is {_leaf(obs)}, its spec says "
                         f"{np.dtype(want[1]).name}{list(want[0])}")  # fmt: skip
    for what, before, after in (
        ("timestep", timestep, next_timestep),
        ("state", state, next_state),
    ):
        paths, tree = jax.tree_util.tree_flatten_with_path(before)
        after_paths, after_tree = jax.tree_util.tree_flatten_with_path(after)
        if tree != after_tree:
            raise ValueError(f"{name}: step returns a {what} of another structure than reset's "
                             f"({after_tree} after {tree})")  # fmt: skip
        for (path, a), (_, b) in zip(paths, after_paths, strict=True):
            if (a.shape, a.dtype) != (b.shape, b.dtype):
                field = jax.tree_util.keystr(path)
                raise ValueError(f"{name}: step returns {what}{field} as {_leaf(b)}, reset as "
                                 f"{_leaf(a)}: a step keeps reset's shapes and dtypes")  # fmt: skip


def _leaf(x: Any) -> str:
    return f"{np.dtype(x.dtype).name}{list(x.shape)}"
