"""Host-side argument checks shared by the HostEnv adapters: fail in Python, not in C++/XLA."""

from __future__ import annotations

import numpy as np


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


def check_actions(actions, size: int, num_actions: int) -> np.ndarray:
    """Returns `actions` as int32 `[size]` or raises ValueError naming the allowed values."""
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
