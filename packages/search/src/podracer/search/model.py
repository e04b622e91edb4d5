"""The MuZero model interface (three pure functions) and its glue to mctx.

A model is three functions over one params pytree (Schrittwieser et al., 2020):

* `representation(params, observation[B, ...]) -> latent[B, ...]`
* `dynamics(params, latent[B, ...], action[B]) -> (reward[B], discount[B], next_latent[B, ...])`
* `prediction(params, latent[B, ...]) -> (logits[B, A], value[B])`

Values and rewards are scalars: a model with categorical heads decodes them (e.g. with
`logits_to_scalar(support, logits)`) before handing them to search. The discount is the
model's: `gamma` for single-agent tasks, `0` after a predicted terminal state, and `-gamma`
in two-player zero-sum games where players alternate (values are then from the point of
view of the player to move, as in mctx). Latents may be any pytree of `[B, ...]` arrays.
The functions may return plain tuples; `DynamicsOutput` / `PredictionOutput` name them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import mctx

Params = Any  # a pytree, forwarded untouched to the three functions
Latent = Any  # a pytree of [B, ...] arrays


class DynamicsOutput(NamedTuple):
    """What `dynamics` returns for a batch of (latent, action) pairs."""

    reward: chex.Array  # [B] scalar reward of the transition (already decoded)
    discount: chex.Array  # [B] discount between reward and next value (-gamma: two players)
    next_latent: Latent  # [B, ...] latent state after the action


class PredictionOutput(NamedTuple):
    """What `prediction` returns for a batch of latents."""

    logits: chex.Array  # [B, A] prior policy logits
    value: chex.Array  # [B] scalar value of the latent (already decoded)


RepresentationFn = Callable[[Params, chex.ArrayTree], Latent]
DynamicsFn = Callable[[Params, Latent, chex.Array], DynamicsOutput]
PredictionFn = Callable[[Params, Latent], PredictionOutput]


class MuZeroModel(NamedTuple):
    """A learned model for search: three pure, batched functions over the same params."""

    representation: RepresentationFn  # (params, observation[B, ...]) -> latent[B, ...]
    dynamics: DynamicsFn  # (params, latent, action[B]) -> (reward[B], discount[B], latent)
    prediction: PredictionFn  # (params, latent) -> (logits[B, A], value[B])


def make_root(model: MuZeroModel, params: Params, observation: chex.ArrayTree) -> mctx.RootFnOutput:
    """Encodes a batch of observations into the root of a search tree."""
    latent = model.representation(params, observation)
    logits, value = model.prediction(params, latent)
    return mctx.RootFnOutput(prior_logits=logits, value=value, embedding=latent)


def make_recurrent_fn(model: MuZeroModel) -> mctx.RecurrentFn:
    """Turns the model's dynamics and prediction into an mctx `RecurrentFn`.

    The model is deterministic: the key that mctx passes in is ignored.
    """

    def recurrent_fn(
        params: Params, rng_key: chex.PRNGKey, action: chex.Array, latent: Latent
    ) -> tuple[mctx.RecurrentFnOutput, Latent]:
        del rng_key
        reward, discount, next_latent = model.dynamics(params, latent, action)
        logits, value = model.prediction(params, next_latent)
        output = mctx.RecurrentFnOutput(
            reward=reward, discount=discount, prior_logits=logits, value=value
        )
        return output, next_latent

    return recurrent_fn
