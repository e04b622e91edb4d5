"""Simulations per second of `podracer.search.search` against mctx called directly.

Both run the same small MLP MuZero model (plain jnp), the same batch, key and settings,
and build the same tree, so the difference is how: on a TPU podracer.search writes and
reads the tree by comparisons (`podracer.search.tree_search`) where mctx scatters and
gathers (a TPU loops over a scatter's index pairs; elsewhere podracer.search runs mctx's
own search), plus its glue (root and recurrent_fn wrappers, the root summary it returns,
the MuZero action resample). Timings alternate between the two implementations so that
machine load affects both alike.

    python benchmarks/search.py            # batch 256 and 1024, 8 and 32 simulations
    python benchmarks/search.py --quick    # batch 256, 8 simulations, fewer repeats
"""

from __future__ import annotations

import argparse
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx

from podracer.search import MuZeroModel
from podracer.search import SearchConfig
from podracer.search import search

OBS_DIM, LATENT_DIM, NUM_ACTIONS, DISCOUNT = 32, 64, 8, 0.997


class MLPParams(NamedTuple):
    w_repr: jax.Array  # [OBS_DIM, LATENT_DIM]
    w_dyn: jax.Array  # [LATENT_DIM + NUM_ACTIONS, LATENT_DIM]
    w_reward: jax.Array  # [LATENT_DIM]
    w_policy: jax.Array  # [LATENT_DIM, NUM_ACTIONS]
    w_value: jax.Array  # [LATENT_DIM]


def init_params(key: jax.Array) -> MLPParams:
    keys = jax.random.split(key, 5)
    shapes = [
        (OBS_DIM, LATENT_DIM),
        (LATENT_DIM + NUM_ACTIONS, LATENT_DIM),
        (LATENT_DIM,),
        (LATENT_DIM, NUM_ACTIONS),
        (LATENT_DIM,),
    ]
    return MLPParams(
        *(jax.random.normal(k, s) / jnp.sqrt(s[0]) for k, s in zip(keys, shapes, strict=True))
    )


def representation(params: MLPParams, observation: jax.Array) -> jax.Array:
    return jnp.tanh(observation @ params.w_repr)


def dynamics(params: MLPParams, latent: jax.Array, action: jax.Array):
    inputs = jnp.concatenate([latent, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
    next_latent = jnp.tanh(inputs @ params.w_dyn)
    reward = next_latent @ params.w_reward
    return reward, jnp.full_like(reward, DISCOUNT), next_latent


def prediction(params: MLPParams, latent: jax.Array):
    return latent @ params.w_policy, latent @ params.w_value


MODEL = MuZeroModel(representation, dynamics, prediction)


def direct_mctx(params, key, observation, config: SearchConfig):
    """The same model and settings, written straight against mctx."""
    latent = representation(params, observation)
    logits, value = prediction(params, latent)
    root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=latent)

    def recurrent_fn(params, rng_key, action, latent):
        reward, discount, next_latent = dynamics(params, latent, action)
        logits, value = prediction(params, next_latent)
        out = mctx.RecurrentFnOutput(
            reward=reward, discount=discount, prior_logits=logits, value=value
        )
        return out, next_latent

    if config.policy == "gumbel":
        return mctx.gumbel_muzero_policy(params, key, root, recurrent_fn, config.num_simulations)
    return mctx.muzero_policy(params, key, root, recurrent_fn, config.num_simulations)


def time_pair(ours, theirs, args, repeats: int) -> tuple[float, float]:
    """Best-of-`repeats` seconds per call of each, alternating calls.

    The minimum, not the median: on a shared machine other processes only ever add time,
    and identical programs were seen to differ 2x in median from one process to the next.
    """
    jax.block_until_ready(ours(*args))
    jax.block_until_ready(theirs(*args))
    times_ours, times_theirs = [], []
    for _ in range(repeats):
        for fn, times in ((ours, times_ours), (theirs, times_theirs)):
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times.append(time.perf_counter() - start)
    return min(times_ours), min(times_theirs)


def static_cost(compiled) -> tuple[float, float]:
    """XLA's cost analysis of a compiled program: (flops, bytes accessed)."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost  # older jax returned a list
    return cost.get("flops", float("nan")), cost.get("bytes accessed", float("nan"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch 256, 8 simulations, 10 repeats")
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per cell")
    parser.add_argument("--policies", nargs="+", default=["gumbel", "muzero"])
    args = parser.parse_args()
    batches, sims = ((256,), (8,)) if args.quick else ((256, 1024), (8, 32))
    repeats = args.repeats or (10 if args.quick else 30)

    params = init_params(jax.random.key(0))
    key = jax.random.key(1)
    print(f"backend={jax.default_backend()} devices={jax.device_count()} repeats={repeats}")
    print("overhead = ours/mctx - 1 in best-of-repeats time; flops/bytes = same, from XLA's")
    print("cost analysis of the compiled programs (deterministic, unlike time on a busy host)")
    header = (
        f"{'policy':>7} {'batch':>6} {'sims':>5} {'ours sims/s':>13} {'mctx sims/s':>13} "
        f"{'overhead':>9} {'flops':>7} {'bytes':>7}"
    )
    print(header)
    print("-" * len(header))
    for policy in args.policies:
        for batch in batches:
            observation = jax.random.normal(jax.random.key(2), (batch, OBS_DIM))
            call_args = (params, key, observation)
            for num_simulations in sims:
                config = SearchConfig(policy=policy, num_simulations=num_simulations)
                ours = jax.jit(lambda p, k, o, c=config: search(p, k, MODEL, o, c))
                theirs = jax.jit(lambda p, k, o, c=config: direct_mctx(p, k, o, c))
                ours = ours.lower(*call_args).compile()
                theirs = theirs.lower(*call_args).compile()
                t_ours, t_theirs = time_pair(ours, theirs, call_args, repeats)
                (flops_ours, bytes_ours), (flops_theirs, bytes_theirs) = map(
                    static_cost, (ours, theirs)
                )
                work = batch * num_simulations
                print(
                    f"{policy:>7} {batch:>6} {num_simulations:>5} {work / t_ours:>13,.0f} "
                    f"{work / t_theirs:>13,.0f} {100 * (t_ours / t_theirs - 1):>8.1f}% "
                    f"{100 * (flops_ours / flops_theirs - 1):>6.1f}% "
                    f"{100 * (bytes_ours / bytes_theirs - 1):>6.1f}%",
                    flush=True,
                )


if __name__ == "__main__":
    main()
