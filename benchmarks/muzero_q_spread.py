"""How sharp a MuZero checkpoint's search targets must be: the spread of its one-step Q.

On the states the saved agent's own acting visits (its env, `--envs` x `--steps`, the
search and exploration as in training), the model's one-step Q(s, a) = r(s, a) + gamma
v(g(s, a)) for every action a, and their spread max_a Q - min_a Q against the value v(s).
Gumbel MuZero min-max rescales the root's Q-values, so any nonzero spread becomes a
full-strength push of its policy target (`SearchConfig.rescale_floor` sets the spread,
in value units, below which it does not); the printout says how large the spreads are,
how sharp the prior and the search policy are, and how often the model's best one-step
action is the prior's (`benchmarks/results/muzero_tuning.md`, Breakout-MinAtar).

    uv run python benchmarks/muzero_q_spread.py RUN[@STEP][:SEED] [--runs-root runs]
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", help="a MuZero run: RUN[@STEP][:SEED]")
    parser.add_argument("--runs-root", default="runs")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    from podracer.agents.muzero import muzero_network
    from podracer.agents.muzero_networks import make_model
    from podracer.envs import make
    from podracer.runs.config import register_sources
    from podracer.runs.source import load
    from podracer.runs.source import parse_source

    where = parse_source(args.source, args.runs_root, owner="muzero_q_spread")
    stored = where.run.read_config()
    register_sources(stored, owner=where.run.config_file)
    env = make(stored["env"], **(stored.get("env_kwargs") or {}))
    loaded = load(where, env.spec, owner="muzero_q_spread")
    agent, params, config = loaded.agent, loaded.params, loaded.agent.config
    if agent.name != "muzero" or not env.spec.is_discrete:
        raise SystemExit("muzero_q_spread: a MuZero run on discrete actions, please")
    # The model the agent searches with: categorical heads decoded to scalars.
    model = make_model(muzero_network(env.spec, config), config.value_support,
                       config.reward_support, config.gamma)  # fmt: skip
    n = args.envs

    @jax.jit
    def step(carry, key):
        env_state, timestep = carry
        act_key, env_key = jax.random.split(key)
        action, extras, _ = agent.act(params, act_key, timestep.observation)
        env_state, next_timestep = jax.vmap(env.step)(
            env_state, action, jax.random.split(env_key, n)
        )
        return (env_state, next_timestep), (timestep.observation, extras["policy"])

    @jax.jit
    def one_step_q(observation):
        latent = model.representation(params, observation)
        root = model.prediction(params, latent)
        q = []
        for a in range(env.spec.num_actions):
            action = jnp.full(observation.shape[:1], a, jnp.int32)
            out = model.dynamics(params, latent, action)
            q.append(out.reward + out.discount * model.prediction(params, out.next_latent).value)
        return jnp.stack(q, -1), root.value, jax.nn.softmax(root.logits)

    key = jax.random.PRNGKey(args.seed)
    carry = jax.vmap(env.reset)(jax.random.split(key, n))
    observations, policies = [], []
    for t in range(args.steps):
        carry, (observation, policy) = step(carry, jax.random.fold_in(key, t))
        observations.append(observation)
        policies.append(policy)
    q, value, prior = map(np.asarray, one_step_q(jnp.concatenate(observations)))
    search_policy = np.asarray(jnp.concatenate(policies))
    spread = q.max(-1) - q.min(-1)
    print(f"{args.source}: {spread.size:,} states of {stored['env']}, step {loaded.step}")
    print(f"value v(s): median {np.median(value):.3f}")
    print("spread max_a Q - min_a Q: " + ", ".join(
        f"p{p} {np.percentile(spread, p):.3f}" for p in (10, 25, 50, 75, 90)
    ))  # fmt: skip
    print(f"share of states with spread > 0.1 / 0.5 / 2: {(spread > 0.1).mean():.2f} / "
          f"{(spread > 0.5).mean():.2f} / {(spread > 2).mean():.2f}")  # fmt: skip
    print(f"largest probability, median: prior {np.median(prior.max(-1)):.3f}, "
          f"search policy {np.median(search_policy.max(-1)):.3f}")  # fmt: skip
    agree = (q.argmax(-1) == prior.argmax(-1)).mean()
    print(f"best one-step action is the prior's: {agree:.2f} of states")


if __name__ == "__main__":
    main()
