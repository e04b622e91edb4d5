"""The clipped surrogate policy loss that PPO and IMPALA's APPO form (V-trace advantages
over several epochs) share, and the diagnostics of the probability ratio it clips."""

from __future__ import annotations

import chex
import jax.numpy as jnp

from podracer.agents.types import masked_mean


def clipped_surrogate(ratio: chex.Array, advantage: chex.Array, clip_eps: float) -> chex.Array:
    """PPO's per-sample policy loss: minus the pessimistic of the ratio's surrogate and
    its clip to [1 - clip_eps, 1 + clip_eps]."""
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    return -jnp.minimum(ratio * advantage, clipped * advantage)


def ratio_metrics(ratio: chex.Array, mask: chex.Array, clip_eps: float) -> dict[str, chex.Array]:
    """How far the policy has moved from the one that acted: the KL estimate
    `(r - 1) - log r` and the fraction of samples the clip holds."""
    clipped = (jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32)
    return {
        "agent/approx_kl": masked_mean((ratio - 1.0) - jnp.log(ratio), mask),
        "agent/clip_fraction": masked_mean(clipped, mask),
    }
