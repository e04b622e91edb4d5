"""Recurrent cores: reset where an episode starts, acting step by step equals the
learner's unroll from a trajectory's start state, bad configs refused before compiling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import PQNConfig
from podracer.agents import QLambdaConfig
from podracer.agents import Trajectory
from podracer.agents import make_agent
from podracer.agents.networks import Memory
from podracer.agents.networks import QNetwork
from podracer.agents.networks import initial_core
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec
from podracer.envs import TimeStep

SPEC = EnvSpec("probe", (3,), "float32", 3, max_episode_steps=10)
BOX = EnvSpec("box", (3,), "float32", None, max_episode_steps=10, action_shape=(2,),
              action_low=(-1.0, -2.0), action_high=(1.0, 2.0))  # fmt: skip
SMALL = dict(hidden_sizes=(8,), core_size=6)
T, B, WARMUP = 6, 4, 3


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_a_sequence_across_an_episode_end_equals_its_halves_run_separately(kind):
    memory = Memory(kind, 5)
    x = jax.random.normal(jax.random.key(0), (6, 2, 3))
    zeros = initial_core(kind, 5, 1, 2)[0]
    start = jax.tree.map(lambda z: z + 0.5, zeros)  # mid-episode: not the initial state
    no_reset = jnp.zeros((3, 2), bool)
    first = jnp.concatenate([no_reset, jnp.ones((1, 2), bool), no_reset[:2]])
    params = memory.init(jax.random.key(1), start, x, first)
    states, y = memory.apply(params, start, x, first)
    states_a, y_a = memory.apply(params, start, x[:3], no_reset)
    _, y_b = memory.apply(params, zeros, x[3:], no_reset)
    np.testing.assert_allclose(y, jnp.concatenate([y_a, y_b]), rtol=1e-6, atol=1e-6)
    # The states are the cell's: the last before the reset is what a second half from
    # it without the reset would continue from, and it differs from the initial state.
    _, y_carried = memory.apply(params, jax.tree.map(lambda s: s[2], states_a), x[3:], no_reset)
    assert not np.allclose(y_carried, y_b, atol=1e-4)
    jax.tree.map(lambda s, sa: np.testing.assert_allclose(s[:3], sa, rtol=1e-6), states, states_a)


def episodes(seed: int = 0) -> TimeStep:
    """`[WARMUP + T + 1, B]` steps with episode ends inside the recorded part (same-step
    resets: the ending step is `first`) and a truncation with its final observation."""
    rng = np.random.default_rng(seed)
    shape = (WARMUP + T + 1, B)
    terminated, truncated = np.zeros(shape, bool), np.zeros(shape, bool)
    terminated[WARMUP + 2, 0] = terminated[WARMUP + 4, 2] = True
    truncated[WARMUP + 3, 1] = True
    first = terminated | truncated
    first[0] = True
    observation = rng.normal(size=shape + (3,)).astype(np.float32)
    final = observation.copy()
    final[truncated] = rng.normal(size=final[truncated].shape)
    return TimeStep(
        jnp.asarray(observation), jnp.asarray(rng.normal(size=shape), jnp.float32),
        jnp.asarray(terminated), jnp.asarray(truncated), jnp.asarray(first), jnp.asarray(final),
        jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.int32),
    )  # fmt: skip


def act_through(agent, params, ts: TimeStep, greedy: bool = False):
    """Acts step by step from the initial core; returns the trajectory of the steps after
    the warm-up (its start state mid-episode, not the initial one) and greedy actions."""
    core = agent.initial_core(B)
    actions, extras, greedy_actions, start = [], [], [], None
    for t in range(ts.reward.shape[0]):
        if t == WARMUP:
            start = core
        if greedy:
            greedy_actions.append(agent.greedy_act(params, ts.observation[t], core, ts.first[t])[0])
        action, ex, core = agent.act(params, jax.random.key(t), ts.observation[t], 0, core,
                                     ts.first[t])  # fmt: skip
        actions.append(action)
        extras.append(ex)
    rows = slice(WARMUP, None)
    stack = lambda xs: jax.tree.map(lambda *x: jnp.stack(x)[rows], *xs)  # noqa: E731
    trajectory = Trajectory(
        jax.tree.map(lambda x: x[rows], ts), stack(actions), stack(extras),
        jax.tree.map(lambda c: c[None], start),
    )  # fmt: skip
    return trajectory, (stack(greedy_actions) if greedy else None)


ACTOR_CRITICS = {
    "ppo-lstm": ("ppo", SPEC, PPOConfig(core="lstm", **SMALL)),
    "ppo-gru-shared": ("ppo", SPEC, PPOConfig(core="gru", separate_critic=False, **SMALL)),
    "ppo-lstm-gaussian": ("ppo", BOX, PPOConfig(core="lstm", squash="tanh", **SMALL)),
    "impala-gru": ("impala", SPEC, ImpalaConfig(core="gru", **SMALL)),
    "impala-lstm-gaussian": ("impala", BOX, ImpalaConfig(core="lstm", **SMALL)),
}


def sharp(params):
    """Policy heads scaled up from their near-zero init, so policies differ between states."""
    heads = ("policy_head", "mean_head")
    return {"params": {k: jax.tree.map(lambda x: 300.0 * x, v) if k in heads else v
                       for k, v in params["params"].items()}}  # fmt: skip


@pytest.mark.parametrize("name", ACTOR_CRITICS)
def test_the_learner_unrolls_from_the_start_state_to_what_acting_computed(name):
    agent_name, spec, config = ACTOR_CRITICS[name]
    agent = make_agent(agent_name, spec, config)
    params = sharp(agent.init(jax.random.key(0)))
    trajectory, _ = act_through(agent, params, episodes())
    _, metrics = jax.jit(agent.loss)(params, trajectory, jax.random.key(0))
    if agent_name == "ppo":  # the same params: every ratio pi / mu is 1
        assert abs(float(metrics["agent/approx_kl"])) < 1e-5
        assert float(metrics["agent/clip_fraction"]) == 0.0
    else:
        np.testing.assert_allclose(metrics["agent/rho_mean"], 1.0, rtol=1e-5)
    # From the initial state instead of the recorded one, the learner sees other policies.
    zero_start = trajectory._replace(core=jax.tree.map(jnp.zeros_like, trajectory.core))
    _, wrong = jax.jit(agent.loss)(params, zero_start, jax.random.key(0))
    key = "agent/approx_kl" if agent_name == "ppo" else "agent/rho_mean"
    assert abs(float(wrong[key]) - float(metrics[key])) > 1e-4  # 10x the exactness above


Q_CONFIGS = [QLambdaConfig(core="gru", **SMALL), PQNConfig(core="lstm", num_minibatches=2, **SMALL)]


@pytest.mark.parametrize("config", Q_CONFIGS)
def test_q_networks_act_step_by_step_as_they_unroll(config):
    agent = make_agent("pqn" if isinstance(config, PQNConfig) else "qlambda", SPEC, config)
    params = agent.init(jax.random.key(0))
    trajectory, greedy = act_through(agent, params, episodes(), greedy=True)
    net = QNetwork(SPEC.num_actions, "mlp", 1, config.hidden_sizes, config.activation,
                   config.layer_norm, config.core, config.core_size)  # fmt: skip
    start = jax.tree.map(lambda c: c[0], trajectory.core)
    ts = trajectory.timestep
    q, _ = net.apply(params, ts.observation, ts.first, start, method="unroll")
    np.testing.assert_array_equal(greedy, jnp.argmax(q, -1))
    assert len(np.unique(np.asarray(greedy))) > 1  # the comparison is not of constants
    new, _, metrics = jax.jit(agent.update)(params, agent.optimizer.init(params), trajectory,
                                            jax.random.key(1))  # fmt: skip
    assert np.isfinite(float(metrics["losses/total"]))
    memory = lambda p: jax.tree.leaves(p["params"]["Memory_0"])  # noqa: E731
    changed = [not np.allclose(a, b) for a, b in zip(memory(new), memory(params), strict=True)]
    assert any(changed)  # the core learns


@pytest.mark.slow
@pytest.mark.parametrize("name", ["ppo-lstm", "impala-gru"])
def test_recurrent_updates_learn_with_minibatches_of_whole_sequences(name):
    agent_name, spec, config = ACTOR_CRITICS[name]
    agent = make_agent(agent_name, spec, config)
    params = agent.init(jax.random.key(0))
    trajectory, _ = act_through(agent, params, episodes())
    opt_state = agent.optimizer.init(params)
    before = float(agent.loss(params, trajectory, jax.random.key(0))[0])
    update = jax.jit(agent.update)
    for i in range(20):
        params, opt_state, _ = update(params, opt_state, trajectory, jax.random.key(i))
    assert float(agent.loss(params, trajectory, jax.random.key(0))[0]) < before


def test_bad_core_configs_fail_naming_the_field():
    allowed = r"PPOConfig.core must be one of \('none', 'lstm', 'gru'\)"
    with pytest.raises(ConfigError, match=allowed):
        PPOConfig(core="rnn")
    with pytest.raises(ConfigError, match=r"QLambdaConfig.core_size must be an int >= 1"):
        QLambdaConfig(core="gru", core_size=0)
