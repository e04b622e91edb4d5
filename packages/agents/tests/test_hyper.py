"""Swept numbers reach the code that uses them: a member's agent built from `hyper` (its
values traced, as inside a sweep's program) acts and learns as the agent of a config with
those values does, for every number each built-in config declares `SWEEPABLE`."""

import dataclasses
import typing

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ConfigError
from podracer.agents import Hyperparams
from podracer.agents import ImpalaConfig
from podracer.agents import MuZeroConfig
from podracer.agents import PPOConfig
from podracer.agents import PQNConfig
from podracer.agents import QLambdaConfig
from podracer.agents import ReplayConfig
from podracer.agents import make_agent
from podracer.agents import sweepable
from podracer.search import DiscreteSupport
from podracer.search import SearchConfig

# A value of every sweepable number far enough from its default to change what an
# agent does within two updates of a tiny config.
NEW = {
    "learning_rate": 0.05, "gamma": 0.5, "lambda_": 0.3, "reward_scale": 3.0, "epsilon": 0.7,
    "clip_eps": 0.01, "entropy_cost": 0.5, "value_cost": 2.0, "clip_rho_threshold": 0.5,
    "clip_pg_rho_threshold": 0.5, "novelty_weight": 2.0, "novelty_fade": 0.5,
    "reward_cost": 2.0, "policy_cost": 2.0, "consistency_cost": 0.5,
    "exploration_epsilon": 0.6, "exploration_fade": 0.9, "exploration_final": 0.5,
    "policy_target_smoothing": 0.4, "search.gumbel_scale": 0.0,
    "search.dirichlet_alpha": 1.0,
    "search.dirichlet_fraction": 0.9, "search.temperature": 0.3, "search.pb_c_init": 5.0,
    "search.pb_c_base": 2.0, "search.value_scale": 1.0, "search.maxvisit_init": 1.0,
    "search.rescale_floor": 0.01,
}  # fmt: skip

_MUZERO = dict(
    num_unroll_steps=2, td_steps=2, torso_hidden_sizes=(8,), latent_size=8, hidden_sizes=(8,),
    value_support=DiscreteSupport(-3.0, 3.0, 7, scaled=True),
    reward_support=DiscreteSupport(-2.0, 2.0, 5, scaled=True), replay=ReplayConfig(),
    # nonzero: the consistency heads and the bonus's networks exist at the defaults too
    consistency_cost=0.1, novelty_weight=0.5,
)  # fmt: skip
_GUMBEL = ("search.pb_c_init", "search.pb_c_base", "search.dirichlet_alpha",
           "search.dirichlet_fraction", "search.temperature")  # fmt: skip
# (agent, config, the paths its acting and learning do not read: the other policy's)
CASES = {
    "qlambda": ("qlambda", QLambdaConfig(hidden_sizes=(8,)), ()),
    "pqn": ("pqn", PQNConfig(hidden_sizes=(8,), num_minibatches=2), ()),
    "ppo": ("ppo", PPOConfig(hidden_sizes=(8,), num_epochs=2, num_minibatches=2), ()),
    "impala": ("impala", ImpalaConfig(hidden_sizes=(8,), novelty_weight=0.5), ()),
    "muzero-gumbel": (
        "muzero",
        MuZeroConfig(**_MUZERO, search=SearchConfig(num_simulations=4)),
        _GUMBEL,
    ),
    "muzero-puct": (
        "muzero",
        MuZeroConfig(**_MUZERO, search=SearchConfig(policy="muzero", num_simulations=4)),
        tuple(p for p in MuZeroConfig.SWEEPABLE if p.startswith("search.") and p not in _GUMBEL),
    ),
}
TOTAL_UPDATES = 10


def _field(config, path) -> float:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def _replaced(config, path, value):
    head, dot, rest = path.partition(".")
    if dot:
        return dataclasses.replace(config, **{head: _replaced(getattr(config, head), rest, value)})
    return dataclasses.replace(config, **{head: value})


def _outputs(agent, trajectory):
    """What the agent does: acting (mid-schedule), greedy acting, and two updates."""
    params = agent.init(jax.random.key(0))
    # Away from the initialisation, whose zeroed heads make every action's value the same
    # (MuZero's), so that the search's numbers matter.
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(9), len(leaves))
    noise = [0.3 * jax.random.normal(k, x.shape, x.dtype) if jnp.issubdtype(x.dtype, jnp.floating)
             else jnp.zeros_like(x) for k, x in zip(keys, leaves, strict=True)]  # fmt: skip
    params = jax.tree.unflatten(tree, [x + n for x, n in zip(leaves, noise, strict=True)])
    obs = trajectory.timestep.observation
    acted = jax.vmap(lambda o, k: agent.act(params, k, o, 5)[:2])(
        obs, jax.random.split(jax.random.key(1), obs.shape[0])
    )
    greedy = jax.vmap(lambda o: agent.greedy_act(params, o)[0])(obs)
    trajectory = trajectory._replace(action=acted[0], extras=acted[1])
    opt_state = agent.optimizer.init(params)
    for k in range(2):
        params, opt_state, metrics = agent.update(params, opt_state, trajectory,
                                                  jax.random.key(2 + k))  # fmt: skip
    return acted, greedy, params, metrics


# MuZero's cases compile a search each (~30 s on 2 cores): in the slow half.
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c.startswith("muzero") else c for c in CASES],
)
def test_swept_numbers_act_as_the_config_s_own(case, vector_spec, random_trajectory):
    """One program takes every number as `hyper`: with the new values it does what the
    config holding them does, and with any one of them at its default something else
    (so each value is read, and read where the config's is)."""
    name, config, unread = CASES[case]
    paths = [p for p in sweepable(type(config)) if p not in unread]
    trajectory = random_trajectory(vector_spec, 6, 16)
    new = {p: jnp.float32(NEW[p]) for p in paths}

    @jax.jit
    def swept(values):
        return _outputs(make_agent(name, vector_spec, config, TOTAL_UPDATES, values), trajectory)

    replaced = config
    for p in paths:
        replaced = _replaced(replaced, p, NEW[p])
    want = jax.jit(lambda: _outputs(make_agent(name, vector_spec, replaced, TOTAL_UPDATES),
                                    trajectory))()  # fmt: skip
    got = swept(new)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=1e-5, err_msg=case)
    for p in paths:
        other = swept({**new, p: jnp.float32(_field(config, p))})
        assert any(
            not np.allclose(a, b, rtol=1e-4, atol=1e-6)
            for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(other), strict=True)
        ), f"{case}: {p} changes nothing"


@pytest.mark.parametrize("config_cls", [QLambdaConfig, PQNConfig, PPOConfig, ImpalaConfig,
                                        MuZeroConfig, SearchConfig])  # fmt: skip
def test_every_sweepable_path_is_a_float_field(config_cls):
    for path in sweepable(config_cls):
        cls = config_cls
        *parents, leaf = path.split(".")
        for p in parents:
            cls = typing.get_type_hints(cls)[p]
        assert typing.get_type_hints(cls)[leaf] is float, path
        named = path if config_cls is not SearchConfig else f"search.{path}"
        assert named in NEW, f"test_swept_numbers_act_as_the_config_s_own misses {path}"


def test_hyperparams_reads_swept_numbers_and_refuses_the_rest():
    config = MuZeroConfig()
    hp = Hyperparams(config, {"gamma": 0.5, "search.gumbel_scale": 2.0})
    assert (hp.gamma, hp.learning_rate) == (0.5, config.learning_rate)
    assert (hp.search.gumbel_scale, hp.search.rescale_floor) == (2.0, 1e-8)
    assert hp.search.values() == {"gumbel_scale": 2.0}
    with pytest.raises(AttributeError, match="MuZeroConfig.td_steps is not sweepable"):
        _ = hp.td_steps
    with pytest.raises(ConfigError, match="MuZeroConfig: td_steps cannot be swept; sweepable: "):
        Hyperparams(config, {"td_steps": 3})
