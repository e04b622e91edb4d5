"""Q(lambda): the loss against Peng's Q(lambda) targets computed in numpy."""

import dataclasses
import types

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from podracer.agents import PQNConfig
from podracer.agents import QLambdaConfig
from podracer.agents import QNetwork
from podracer.agents import make_agent
from podracer.agents import make_qlambda
from podracer.agents.qlambda import epsilon_schedule

CONFIG = QLambdaConfig(learning_rate=1e-2, gamma=0.9, lambda_=0.7, torso="mlp", hidden_sizes=(8,))
T, B = 4, 2


@pytest.fixture(scope="module")
def agent(vector_spec):
    return make_qlambda(vector_spec, CONFIG)


@pytest.fixture(scope="module")
def params(agent):
    return agent.init(jax.random.key(1))


@pytest.fixture(scope="module")
def loss_and_grad(agent):
    return jax.jit(jax.value_and_grad(agent.loss, has_aux=True))


def peng_targets(ts, q, q_final, gamma, lambda_, ref):
    """G_t = r_t + discount_t ((1 - l_t) max_a Q(s_t+1, a) + l_t G_t+1); l_t = 0 at episode ends."""
    b = ref.bookkeeping(ts, np.max(q, -1), np.max(q_final, -1), gamma)
    targets = np.zeros_like(b["r"])
    for j in range(targets.shape[1]):
        g = b["v_boot"][-1, j]
        for t in reversed(range(targets.shape[0])):
            lam = 0.0 if b["cut"][t, j] else lambda_
            g = b["r"][t, j] + b["disc"][t, j] * ((1 - lam) * b["v_boot"][t, j] + lam * g)
            targets[t, j] = g
    return targets, b["mask"]


@pytest.mark.parametrize("layout", ["jax", "envpool"])
def test_loss_is_half_mean_squared_error_to_peng_targets(
    agent, params, loss_and_grad, vector_spec, random_trajectory, ref, layout
):
    traj = random_trajectory(vector_spec, T, B, layout=layout)
    net = QNetwork(vector_spec.num_actions, "mlp", 1, CONFIG.hidden_sizes, CONFIG.activation)
    ts = traj.timestep
    q = np.asarray(net.apply(params, ts.observation), np.float64)
    q_final = (
        q[1:]
        if ts.final_observation is None
        else np.asarray(net.apply(params, ts.final_observation[1:]))
    )
    targets, mask = peng_targets(ts, q, q_final, CONFIG.gamma, CONFIG.lambda_, ref)
    a = np.asarray(traj.action[:-1])
    q_a = np.take_along_axis(q[:-1], a[..., None], -1)[..., 0]
    expected = 0.5 * ref.masked_mean(np.square(targets - q_a), mask)

    (loss, metrics), grads = loss_and_grad(params, traj, jax.random.key(0))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    np.testing.assert_allclose(metrics["losses/value"], expected, rtol=1e-5)
    np.testing.assert_allclose(metrics["agent/q_mean"], ref.masked_mean(q_a, mask), rtol=1e-5)

    # Semi-gradient: the targets are constants, so the gradient is that of 0.5 (G - Q)^2.
    g_const = jnp.asarray(targets, jnp.float32)

    def surrogate(p):
        q_a = jnp.take_along_axis(net.apply(p, ts.observation[:-1]), traj.action[:-1, :, None], -1)[
            ..., 0
        ]
        m = jnp.asarray(mask, jnp.float32)
        return 0.5 * jnp.sum(m * jnp.square(g_const - q_a)) / jnp.sum(m)

    chex.assert_trees_all_close(grads, jax.grad(surrogate)(params), rtol=1e-4, atol=1e-6)


def test_loss_ignores_the_dummy_transition(
    agent, params, loss_and_grad, vector_spec, random_trajectory
):
    traj = random_trajectory(vector_spec, T, B, layout="envpool")
    # Transition 1 of column 0 is the dummy: its action and the reward it leads to.
    other = traj._replace(
        action=traj.action.at[1, 0].set(1 - traj.action[1, 0]),
        timestep=traj.timestep._replace(reward=traj.timestep.reward.at[2, 0].add(50.0)),
    )
    (a, _), _ = loss_and_grad(params, traj, jax.random.key(0))
    (b, _), _ = loss_and_grad(params, other, jax.random.key(0))
    np.testing.assert_array_equal(a, b)


def test_act_with_zero_epsilon_is_greedy(agent, params, vector_spec):
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(16, 3)), jnp.float32)
    net = QNetwork(vector_spec.num_actions, "mlp", 1, CONFIG.hidden_sizes, CONFIG.activation)
    greedy = np.argmax(net.apply(params, obs), -1)
    action, extras, core = agent.act(params, jax.random.key(2), obs)
    np.testing.assert_array_equal(action, greedy)
    np.testing.assert_array_equal(agent.greedy_act(params, obs)[0], greedy)
    assert action.dtype == jnp.int32 and extras == {} and core == ()


def test_update_lowers_the_loss_without_retracing(agent, params, vector_spec, random_trajectory):
    traj = random_trajectory(vector_spec, T, B)
    chex.clear_trace_counter()  # sgd_update's `update` is shared by every agent
    update = jax.jit(chex.assert_max_traces(agent.update, n=1))
    opt_state = agent.optimizer.init(params)
    p = params
    first_loss = None
    for i in range(5):
        p, opt_state, metrics = update(p, opt_state, traj, jax.random.key(i))
        first_loss = metrics["losses/total"] if first_loss is None else first_loss
    final_loss, _ = agent.loss(p, traj, jax.random.key(0))
    assert float(final_loss) < 0.9 * float(first_loss)
    assert np.isfinite(metrics["losses/grad_norm"]) and metrics["losses/grad_norm"] > 0


def test_gradients_are_finite_on_uint8_frames(frames_spec, random_trajectory, cheap_init):
    agent = make_qlambda(frames_spec, QLambdaConfig())  # auto -> nature_cnn
    params = cheap_init(agent.init, jax.random.key(0))
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree.leaves_with_path(params)]
    assert any("NatureCNN_0" in p and "Conv_2" in p for p in paths)
    traj = random_trajectory(frames_spec, 2, 2)
    (loss, _), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    assert np.isfinite(loss)
    chex.assert_tree_all_finite(grads)
    assert float(jax.tree.reduce(lambda a, g: a + jnp.sum(jnp.abs(g)), grads, 0.0)) > 0


# PQN: Q(lambda) with LayerNorm, minibatch epochs towards fixed targets, a schedule.
PQN = PQNConfig(torso="mlp", hidden_sizes=(8,), num_epochs=2, num_minibatches=2, gamma=0.9)


def test_pqn_is_a_registered_agent_with_its_published_defaults(vector_spec):
    agent = make_agent("pqn", vector_spec)
    assert agent.name == "pqn" and agent.config == PQNConfig()
    assert (PQNConfig().lambda_, PQNConfig().num_minibatches, PQNConfig().optimizer) == (
        0.65, 32, "radam"
    )  # fmt: skip
    params = agent.init(jax.random.key(0))
    assert "LayerNorm_0" in params["params"]["Torso_0"]["MLP_0"]


def test_epsilon_falls_linearly_over_the_first_tenth_of_the_updates():
    config = PQNConfig(epsilon_start=1.0, epsilon=0.05, epsilon_decay=0.1)
    epsilon = epsilon_schedule(config, config.epsilon, 1000)
    values = [float(epsilon(step)) for step in (0, 50, 100, 500)]
    np.testing.assert_allclose(values, [1.0, 0.525, 0.05, 0.05], rtol=1e-6)
    assert float(epsilon_schedule(QLambdaConfig(), 0.3, 1000)(7)) == pytest.approx(0.3)


def _hand_epsilon(config, total_updates, step):
    """The epsilon schedule written out before it was optax's linear schedule."""
    span = max(1.0, config.epsilon_decay * total_updates)
    frac = jnp.minimum(jnp.asarray(step, jnp.float32) / span, 1.0)
    return config.epsilon_start + frac * (config.epsilon - config.epsilon_start)


@pytest.mark.parametrize(
    "start, end, decay, total",
    [(1.0, 0.05, 0.1, 1000), (1.0, 0.05, 0.1, 9766), (0.5, 0.01, 0.25, 333),
     (1.0, 0.1, 1e-4, 100), (1.0, 0.0, 1.0, 7)],
)  # fmt: skip
def test_epsilon_schedule_is_the_hand_written_one(start, end, decay, total):
    """Within a float32 rounding of the hand-written schedule as the runtimes compute it
    (jitted): optax computes (start - end)(1 - t) + end, it start + t (end - start). From
    the end of the decay on it is `epsilon` exactly (the hand-written one was a rounding
    off)."""
    config = PQNConfig(epsilon_start=start, epsilon=end, epsilon_decay=decay)
    span = max(1.0, decay * total)
    steps = np.unique(np.array([0, 1, span / 2, span - 1, span, span + 1, total, 5 * total],
                               np.int32))  # fmt: skip
    steps = jnp.asarray(steps)
    got = jax.jit(epsilon_schedule(config, end, total))(steps)
    want = jax.jit(lambda s: _hand_epsilon(config, total, s))(steps)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)
    assert got[0] == np.float32(start)
    np.testing.assert_array_equal(got[steps >= span], np.float32(end))
    np.testing.assert_allclose(epsilon_schedule(config, end, total)(steps), got, rtol=0, atol=1e-7)


def test_epsilon_schedule_takes_a_swept_epsilon():
    """A sweep traces the final `epsilon` (one per member); the decay's span stays a
    Python number."""
    steps = jnp.arange(0, 30, dtype=jnp.int32)
    config = PQNConfig(epsilon_start=1.0, epsilon_decay=0.2)

    def member(end):
        hand = types.SimpleNamespace(epsilon_start=1.0, epsilon=end, epsilon_decay=0.2)
        return epsilon_schedule(config, end, 100)(steps), _hand_epsilon(hand, 100, steps)

    got, want = jax.jit(jax.vmap(member))(jnp.array([0.05, 0.1]))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-7)


def test_acting_follows_the_schedule(vector_spec):
    agent = make_qlambda(vector_spec, dataclasses.replace(PQN, epsilon_start=1.0, epsilon=0.0),
                         total_updates=100)  # fmt: skip
    params = agent.init(jax.random.key(1))
    obs = jnp.zeros((512, *vector_spec.observation_shape))
    greedy = agent.greedy_act(params, obs)[0]
    early = agent.act(params, jax.random.key(2), obs, 0)[0]
    late = agent.act(params, jax.random.key(2), obs, 100)[0]
    assert float(jnp.mean(early == greedy)) == pytest.approx(0.5, abs=0.08)  # uniform of 2
    assert bool(jnp.all(late == greedy))


def test_minibatches_regress_on_targets_fixed_before_the_first_step(vector_spec, random_trajectory):
    """Every minibatch step moves Q towards the same targets: those of the acting params."""
    agent = make_qlambda(vector_spec, PQN, total_updates=10)
    params = agent.init(jax.random.key(3))
    traj = random_trajectory(vector_spec, 4, 3, layout="jax")
    opt_state = agent.optimizer.init(params)
    new_params, _, metrics = jax.jit(agent.update)(params, opt_state, traj, jax.random.key(4))
    # The loss of the acting params towards their own targets is the first step's loss.
    before, _ = agent.loss(params, traj, jax.random.key(0))
    after, _ = agent.loss(new_params, traj, jax.random.key(0))
    assert float(after) < float(before)
    assert set(metrics) >= {"losses/value", "losses/total", "losses/grad_norm", "agent/q_mean"}


def test_one_epoch_of_one_minibatch_is_one_gradient_step_of_the_loss(
    vector_spec, random_trajectory
):
    agent = make_qlambda(vector_spec, CONFIG)
    params = agent.init(jax.random.key(5))
    traj = random_trajectory(vector_spec, T, B, layout="envpool")
    grads = jax.grad(lambda p: agent.loss(p, traj, jax.random.key(0))[0])(params)
    updates, _ = agent.optimizer.update(grads, agent.optimizer.init(params), params)
    expected = optax.apply_updates(params, updates)
    got, _, _ = agent.update(params, agent.optimizer.init(params), traj, jax.random.key(6))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7), got, expected)


def test_reward_scale_scales_the_targets(vector_spec, random_trajectory):
    traj = random_trajectory(vector_spec, T, B, layout="jax")
    traj = traj._replace(
        timestep=traj.timestep._replace(reward=jnp.ones_like(traj.timestep.reward))
    )
    for scale in (1.0, 0.1):
        agent = make_qlambda(
            vector_spec, dataclasses.replace(CONFIG, reward_scale=scale, gamma=0.0)
        )
        params = agent.init(jax.random.key(1))
        # With gamma 0 the target of every kept transition is the scaled reward itself.
        zero = jax.tree.map(jnp.zeros_like, params)
        loss, _ = agent.loss(zero, traj, jax.random.key(0))
        assert float(loss) == pytest.approx(0.5 * scale**2, rel=1e-5)
