"""Action spaces: a library's space as `EnvSpec` fields, and clipping to a continuous box.

An `EnvSpec` holds either a discrete count (`num_actions`) or a bounded box
(`action_shape`, `action_low`, `action_high`). gymnax and gymnasium (envpool) spaces
both spell these `Discrete(n)` and `Box(low, high, shape)`, so one converter serves both
adapters. Continuous adapters clip every action to the box (`clip_action` inside jit,
`checks.check_actions` on the host) so an env never sees an out-of-bounds action,
whatever its own library does with one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from podracer.envs.types import EnvSpec


def action_space_fields(name: str, space: Any) -> dict[str, Any]:
    """The `EnvSpec` action fields of a gymnax or gymnasium `Discrete` / `Box` space.

    Raises ValueError (one line, naming `name`) for any other space, and for a box with
    an infinite bound (an agent cannot squash into it).
    """
    kind = type(space).__name__
    if kind == "Discrete":
        start = int(getattr(space, "start", 0))
        if start != 0:
            raise ValueError(
                f"{name} has actions {start}..{start + int(space.n) - 1}; "
                "podracer.envs supports discrete actions from 0 only"
            )
        return {"num_actions": int(space.n)}
    if kind == "Box":
        shape = tuple(int(d) for d in space.shape)
        low, high = (
            np.broadcast_to(np.asarray(b, np.float64), shape).reshape(-1)
            for b in (space.low, space.high)
        )
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise ValueError(
                f"{name} has an unbounded action box (low {low.min()}, high {high.max()}); "
                "podracer.envs supports bounded boxes only"
            )
        return {
            "num_actions": None,
            "action_shape": shape,
            "action_low": tuple(float(x) for x in low),
            "action_high": tuple(float(x) for x in high),
        }
    raise ValueError(
        f"{name} has a {kind} action space; podracer.envs supports Discrete and Box spaces"
    )


def clip_action(spec: EnvSpec, action: Any) -> Any:
    """A continuous action as float32 `[..., *action_shape]` clipped to `spec`'s box (jnp).

    Raises ValueError at trace time if the trailing dims are not `spec.action_shape`.
    """
    import jax.numpy as jnp

    action = jnp.asarray(action, jnp.float32)
    shape = spec.action_shape
    if action.ndim < len(shape) or action.shape[action.ndim - len(shape) :] != shape:
        raise ValueError(
            f"{spec.name} actions must have shape [..., {', '.join(map(str, shape))}], "
            f"got {action.shape}"
        )
    low, high = spec.action_bounds()
    batch = (1,) * (action.ndim - len(shape))  # explicit ranks: rank promotion may raise
    return jnp.clip(action, low.reshape(batch + shape), high.reshape(batch + shape))
