"""MuZero: n-step and unroll targets against plain loops, the loss and its gradients, learning."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import MuZeroConfig
from podracer.agents import Trajectory
from podracer.agents import bootstrap_values
from podracer.agents import boundaries
from podracer.agents import make_agent
from podracer.agents import make_muzero
from podracer.agents import novelty
from podracer.agents.muzero import consistency_similarity
from podracer.agents.muzero import muzero_network
from podracer.agents.muzero import n_step_returns
from podracer.agents.muzero import unroll_targets
from podracer.agents.muzero_networks import MuZeroNetwork
from podracer.agents.muzero_networks import make_model
from podracer.agents.muzero_networks import normalize_latent
from podracer.agents.muzero_networks import scale_gradient
from podracer.envs import EnvSpec

T, B, A = 8, 2, 2


def envpool_trajectory(make_timestep, seed=0):
    """`[T+1, B]`, envpool's next-step resets; column 0 has every kind of boundary.

    Column 0: terminates at step 2 (dummy transition 2 -> 3), truncated at step 6 (dummy
    6 -> 7). Column 1: one long episode.
    """
    rng = np.random.default_rng(seed)
    shape = (T + 1, B)
    terminated = np.zeros(shape, bool)
    truncated = np.zeros(shape, bool)
    first = np.zeros(shape, bool)
    terminated[2, 0] = truncated[6, 0] = True
    first[0] = first[3, 0] = first[7, 0] = True
    ts = make_timestep(
        rng.normal(size=shape), terminated, truncated, first, final_observation=None, seed=seed
    )
    policy = rng.uniform(0.1, 1.0, size=shape + (A,))
    extras = {
        "policy": jnp.asarray(policy / policy.sum(-1, keepdims=True), jnp.float32),
        "root_value": jnp.asarray(rng.normal(size=shape), jnp.float32),
    }
    action = jnp.asarray(rng.integers(0, A, size=shape), jnp.int32)
    return Trajectory(ts, action, extras)


def ref_n_step(b, n):
    """G_t as an explicit discounted sum of at most n rewards plus a bootstrap value."""
    num_steps, batch = b["r"].shape
    g = np.zeros((num_steps, batch))
    for j in range(batch):
        for t in range(num_steps):
            acc, coef = 0.0, 1.0
            for i in range(n):
                s = t + i
                acc += coef * b["r"][s, j]
                coef *= b["disc"][s, j]
                if b["cut"][s, j] or i == n - 1 or s == num_steps - 1:
                    acc += coef * b["v_boot"][s, j]
                    break
            g[t, j] = acc
    return g


def ref_unroll(traj, g_ext, b, num_unroll):
    """Targets of every (k, t, b) by looking for the episode's end with a loop."""
    num_steps, batch = b["r"].shape
    term = np.asarray(traj.timestep.terminated)[1:]
    policy = np.asarray(traj.extras["policy"])
    action = np.asarray(traj.action)
    out = {
        name: np.zeros((num_unroll + 1, num_steps, batch))
        for name in ("value", "value_mask", "policy_mask", "reward", "reward_mask", "action")
    }
    out["policy"] = np.zeros((num_unroll + 1, num_steps, batch, policy.shape[-1]))
    for j in range(batch):
        for t in range(num_steps):
            end = next((s for s in range(t, num_steps) if b["cut"][s, j]), None)
            for k in range(num_unroll + 1):
                u = t + k
                in_episode = u <= num_steps and (end is None or u <= end)
                absorbing = end is not None and end < u and term[end, j]
                valid = b["mask"][t, j]
                out["value"][k, t, j] = g_ext[u, j] if in_episode else 0.0
                out["value_mask"][k, t, j] = valid and (in_episode or absorbing)
                out["policy_mask"][k, t, j] = valid and in_episode
                if in_episode:
                    out["policy"][k, t, j] = policy[u, j]
                if k < num_unroll:
                    has_reward = in_episode and u < num_steps
                    out["reward"][k, t, j] = b["r"][u, j] if has_reward else 0.0
                    out["reward_mask"][k, t, j] = valid and (has_reward or absorbing)
                    out["action"][k, t, j] = action[u, j] if u <= num_steps else -1
    return out


def test_n_step_returns_match_a_loop(make_timestep, ref):
    traj = envpool_trajectory(make_timestep)
    ts = traj.timestep
    root_value = np.asarray(traj.extras["root_value"])
    b = ref.bookkeeping(ts, root_value, None, 0.9)
    bounds = boundaries(ts, 0.9)
    v_t = bootstrap_values(traj.extras["root_value"], None, ts)
    for n in (1, 3, 20):
        g = n_step_returns(bounds.reward, bounds.discount, bounds.cut, v_t, n)
        np.testing.assert_allclose(g, ref_n_step(b, n), rtol=1e-5, atol=1e-6)
    # Spot values of column 0: transition 1 terminates, so G_0 = r_0 + 0.9 r_1.
    r = b["r"][:, 0]
    g = n_step_returns(bounds.reward, bounds.discount, bounds.cut, v_t, 3)
    np.testing.assert_allclose(g[0, 0], r[0] + 0.9 * r[1], rtol=1e-6)
    # Transition 5 is truncated: G_5 = r_5 + 0.9 v(step 6), step 6's own search value.
    np.testing.assert_allclose(g[5, 0], r[5] + 0.9 * root_value[6, 0], rtol=1e-6)


@pytest.mark.parametrize("num_unroll", [1, 3, 10])
def test_unroll_targets_match_a_loop(make_timestep, ref, num_unroll):
    traj = envpool_trajectory(make_timestep, seed=num_unroll)
    ts = traj.timestep
    bounds = boundaries(ts, 0.9)
    b = ref.bookkeeping(ts, np.asarray(traj.extras["root_value"]), None, 0.9)
    g_ext = np.random.default_rng(1).normal(size=(T + 1, B)).astype(np.float32)
    got = unroll_targets(traj, jnp.asarray(g_ext), bounds, num_unroll)
    want = ref_unroll(traj, g_ext, b, num_unroll)
    for name in ("value", "value_mask", "policy_mask"):
        np.testing.assert_allclose(getattr(got, name), want[name], rtol=1e-6, err_msg=name)
    for name in ("reward", "reward_mask"):
        np.testing.assert_allclose(getattr(got, name), want[name][:-1], rtol=1e-6, err_msg=name)
    pm = want["policy_mask"].astype(bool)
    np.testing.assert_allclose(np.asarray(got.policy)[pm], want["policy"][pm], rtol=1e-6)
    known = want["action"][:-1] >= 0
    np.testing.assert_array_equal(np.asarray(got.action)[known], want["action"][:-1][known])
    # The dummy transitions' positions (2 and 6 of column 0) learn nothing.
    assert not np.any(want["value_mask"][:, [2, 6], 0]) and not np.any(
        want["reward_mask"][:, [2, 6], 0]
    )


def test_unroll_targets_by_hand(make_timestep):
    """Column 0 from position 0, K = 3: states 0, 1 in the episode, 2 (terminal) on absorbing."""
    traj = envpool_trajectory(make_timestep)
    bounds = boundaries(traj.timestep, 0.9)
    g_ext = jnp.arange(T + 1, dtype=jnp.float32)[:, None] * jnp.ones((1, B))
    got = unroll_targets(traj, g_ext, bounds, 3)
    r = np.asarray(traj.timestep.reward)[1:, 0]
    np.testing.assert_allclose(got.value[:, 0, 0], [0.0, 1.0, 0.0, 0.0])  # 0 from termination on
    np.testing.assert_array_equal(got.value_mask[:, 0, 0], [True, True, True, True])
    np.testing.assert_array_equal(got.policy_mask[:, 0, 0], [True, True, False, False])
    np.testing.assert_allclose(got.reward[:, 0, 0], [r[0], r[1], 0.0], rtol=1e-6)
    np.testing.assert_array_equal(got.reward_mask[:, 0, 0], [True, True, True])
    np.testing.assert_array_equal(got.action[:, 0, 0], np.asarray(traj.action)[0:3, 0])
    # From position 4 the episode is truncated at step 6: nothing from state 6 on is learned.
    np.testing.assert_array_equal(got.value_mask[:, 4, 0], [True, True, False, False])
    np.testing.assert_array_equal(got.reward_mask[:, 4, 0], [True, True, False])
    # Column 1 from position 6: state 8 (= T) still has targets, state 9 does not exist.
    np.testing.assert_allclose(got.value[:, 6, 1], [6.0, 7.0, 8.0, 0.0])
    np.testing.assert_array_equal(got.value_mask[:, 6, 1], [True, True, True, False])
    np.testing.assert_array_equal(got.reward_mask[:, 6, 1], [True, True, False])


@pytest.fixture(scope="module")
def agent(muzero_small, vector_spec):
    return make_muzero(vector_spec, muzero_small)


@pytest.fixture(scope="module")
def params(agent):
    return agent.init(jax.random.key(1))


@pytest.mark.parametrize("bootstrap", ["network", "search"])
def test_value_targets_bootstrap_and_use_the_final_observation(
    muzero_small, vector_spec, random_trajectory, ref, cheap_init, bootstrap
):
    import dataclasses

    config = dataclasses.replace(muzero_small, value_bootstrap=bootstrap)
    agent = make_muzero(vector_spec, config)
    params = cheap_init(agent.init, jax.random.key(0), scale=0.5)  # non-zero value head
    traj = random_trajectory(vector_spec, T, B, layout="jax")  # column 1 truncated at T
    rng = np.random.default_rng(0)
    policy = rng.uniform(size=(T + 1, B, A))
    root_value = rng.normal(size=(T + 1, B)).astype(np.float32)
    traj = traj._replace(
        extras={
            "policy": jnp.asarray(policy / policy.sum(-1, keepdims=True), jnp.float32),
            "root_value": jnp.asarray(root_value),
        }
    )
    ts = traj.timestep
    net = MuZeroNetwork(A, "mlp", 1, 8, (8,), (8,), 13, 9)
    model = make_model(net, config.value_support, config.reward_support, config.gamma)
    value = lambda obs: np.asarray(
        model.prediction(params, model.representation(params, obs)).value
    )
    values = root_value if bootstrap == "search" else value(ts.observation)
    final_v = value(ts.final_observation[1:])
    b = ref.bookkeeping(ts, values, final_v, config.gamma)
    g = ref_n_step(b, config.td_steps)
    _, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    np.testing.assert_allclose(
        metrics["agent/value_target_mean"], ref.masked_mean(g, b["mask"]), rtol=1e-5
    )
    # The truncated transition bootstraps from the final observation's value, not step T's.
    assert b["cut"][T - 1, 1] and not np.isclose(final_v[T - 1, 1], values[T, 1])


@pytest.mark.parametrize("bootstrap", ["network", "search"])
def test_priority_is_the_mean_value_error_of_each_sequence(
    muzero_small, vector_spec, random_trajectory, ref, cheap_init, bootstrap
):
    import dataclasses

    config = dataclasses.replace(muzero_small, value_bootstrap=bootstrap)
    agent = make_muzero(vector_spec, config)
    params = cheap_init(agent.init, jax.random.key(1), scale=0.5)
    traj = random_trajectory(vector_spec, T, B, layout="jax")  # column 1 truncated at T
    rng = np.random.default_rng(1)
    policy = rng.uniform(size=(T + 1, B, A))
    traj = traj._replace(
        extras={
            "policy": jnp.asarray(policy / policy.sum(-1, keepdims=True), jnp.float32),
            "root_value": jnp.asarray(rng.normal(size=(T + 1, B)), jnp.float32),
        }
    )
    ts = traj.timestep
    net = MuZeroNetwork(A, "mlp", 1, 8, (8,), (8,), 13, 9)
    model = make_model(
        net, muzero_small.value_support, muzero_small.reward_support, muzero_small.gamma
    )
    value = lambda obs: np.asarray(
        model.prediction(params, model.representation(params, obs)).value
    )
    values = value(ts.observation)
    boot = np.asarray(traj.extras["root_value"]) if bootstrap == "search" else values
    b = ref.bookkeeping(ts, boot, value(ts.final_observation[1:]), muzero_small.gamma)
    g = ref_n_step(b, muzero_small.td_steps)
    mask = np.asarray(b["mask"], np.float64)
    expected = np.sum(np.abs(values[:-1] - g) * mask, 0) / np.maximum(mask.sum(0), 1.0)
    np.testing.assert_allclose(jax.jit(agent.priority)(params, traj), expected, rtol=1e-5)


def test_consistency_loss_by_hand(muzero_small, vector_spec, make_timestep, ref, cheap_init):
    """EfficientZero's term, by a loop over (t, b, k): from each learnable position, unroll
    the actions taken while no episode has ended; -cos(predictor(projection(unrolled)),
    projection(represent(observation[t+k]))), averaged as the reward loss is."""
    config = dataclasses.replace(muzero_small, consistency_cost=2.0)
    agent = make_muzero(vector_spec, config)
    params = cheap_init(agent.init, jax.random.key(0), scale=0.5)
    net = muzero_network(vector_spec, config)
    traj = envpool_trajectory(make_timestep)  # column 0: a termination and a truncation
    total, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    ts = traj.timestep
    b = ref.bookkeeping(ts, np.zeros((T + 1, B)), None, config.gamma)
    obs, action, K = (
        np.asarray(ts.observation),
        np.asarray(traj.action),
        muzero_small.num_unroll_steps,
    )

    def call(method, *args):
        return jax.tree.map(np.asarray, net.apply(params, *args, method=method))

    def cos(x, y):
        return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))

    expected, terms = 0.0, 0
    for j in range(B):
        for t in range(T):
            if not b["mask"][t, j]:
                continue
            end = next((s for s in range(t, T) if b["cut"][s, j]), T)
            latent = call(MuZeroNetwork.represent, obs[t, j])
            for k in range(1, K + 1):
                if t + k > end:  # transition t+k-1 crossed an episode end, or past T
                    break
                _, latent = call(MuZeroNetwork.dynamics, latent, action[t + k - 1, j])
                unrolled = call(MuZeroNetwork.project, latent)
                predicted = call(MuZeroNetwork.predict_projection, unrolled)
                observed = call(MuZeroNetwork.project, call(MuZeroNetwork.represent, obs[t + k, j]))
                expected -= cos(predicted, observed) / K
                terms += 1
    expected /= b["mask"].sum()
    assert 0 < terms < T * B * K  # the episode ends and the trajectory's end cut some
    np.testing.assert_allclose(metrics["losses/consistency"], expected, rtol=1e-4, atol=1e-6)
    # The term is added at its cost, and the observed branch takes no gradient.
    without = dataclasses.replace(config, consistency_cost=1e-30)
    other, _ = jax.jit(make_muzero(vector_spec, without).loss)(params, traj, jax.random.key(0))
    np.testing.assert_allclose(total - other, 2.0 * expected, rtol=1e-4, atol=1e-6)
    observed = jax.grad(
        lambda z: jnp.sum(consistency_similarity(net, params, jnp.ones_like(z), z))
    )(jnp.ones((3, muzero_small.latent_size)))
    np.testing.assert_array_equal(observed, 0.0)


def test_consistency_heads_only_when_trained(muzero_small, vector_spec):
    def has_heads(cost):
        agent = make_muzero(vector_spec, dataclasses.replace(muzero_small, consistency_cost=cost))
        shapes = jax.eval_shape(agent.init, jax.random.key(0))
        return any(
            "projection" in jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(shapes)
        )

    assert not has_heads(0.0) and has_heads(2.0)


def test_novelty_bonus_joins_the_rewards_and_trains_the_predictor_only(
    muzero_small, vector_spec, make_timestep, ref
):
    """With `novelty_weight`, the loss is MuZero's on the trajectory whose rewards carry
    the weight times each step's bonus, plus the predictor's error. An update merges the
    batch into the statistics first, then moves the predictor and the model, never the
    fixed network; the model's initialisation is the one without the bonus."""
    config = dataclasses.replace(muzero_small, novelty_weight=0.7)
    agent, plain = make_muzero(vector_spec, config), make_muzero(vector_spec, muzero_small)
    params = agent.init(jax.random.key(0))
    chex.assert_trees_all_equal(params["params"], plain.init(jax.random.key(0))["params"])
    traj = envpool_trajectory(make_timestep)  # column 0: a termination and a truncation
    ts = traj.timestep
    assert ts.final_observation is None  # envpool's layout: each step's own observation
    by_hand, predictor_loss = ref.novelty(params, traj, ts.observation, 0.7)
    total, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    expected, _ = jax.jit(plain.loss)(params, by_hand, jax.random.key(0))
    np.testing.assert_allclose(total, expected + predictor_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["losses/novelty"], predictor_loss, rtol=1e-5)
    assert metrics["agent/novelty_bonus"] > 0

    opt_state = agent.optimizer.init(params)
    stepped, _, _ = jax.jit(agent.update)(params, opt_state, traj, jax.random.key(0))
    observed = novelty.observe(params, ts.observation[1:], 1, ts.transition_mask[1:])
    for key in (novelty.OBS_KEY, novelty.ERROR_KEY, novelty.UPDATES_KEY):
        chex.assert_trees_all_close(stepped[key], observed[key], rtol=1e-6)
    chex.assert_trees_all_equal(stepped[novelty.TARGET_KEY], params[novelty.TARGET_KEY])
    moved = lambda key: jax.tree.leaves(  # noqa: E731
        jax.tree.map(lambda a, b: bool(np.any(a != b)), stepped[key], params[key])
    )
    # Every predictor weight; the model's zero-initialised heads (only they have a
    # gradient at the first step).
    assert all(moved(novelty.PREDICTOR_KEY)) and any(moved("params"))
    # With a window, the update's statistics weigh the batch against the last 5 errors.
    windowed = make_muzero(vector_spec, dataclasses.replace(config, novelty_window=5))
    long_seen = {**params[novelty.ERROR_KEY], "count": jnp.float32(1e3)}
    long_seen = {**params, novelty.ERROR_KEY: long_seen}
    stepped, _, _ = jax.jit(windowed.update)(long_seen, opt_state, traj, jax.random.key(0))
    observed = novelty.observe(long_seen, ts.observation[1:], 1, ts.transition_mask[1:], window=5.0)
    chex.assert_trees_all_close(stepped[novelty.ERROR_KEY], observed[novelty.ERROR_KEY], rtol=1e-6)
    assert float(stepped[novelty.ERROR_KEY]["count"]) == 5.0 + float(ts.transition_mask[1:].sum())
    # Faded over half of a 4-update run, 2 updates in: the bonus is gone from the loss.
    faded = make_muzero(vector_spec, dataclasses.replace(config, novelty_fade=0.5), total_updates=4)
    twice = {**params, novelty.UPDATES_KEY: {"count": jnp.float32(2.0)}}
    _, metrics = jax.jit(faded.loss)(twice, traj, jax.random.key(0))
    assert metrics["agent/novelty_bonus"] == 0.0


def test_replay_weights_scale_each_sequence_loss(agent, params, make_timestep):
    traj = envpool_trajectory(make_timestep)
    loss = jax.jit(lambda t: agent.loss(params, t, jax.random.key(0))[0])

    def weighted(w):
        w = jnp.broadcast_to(jnp.asarray(w, jnp.float32), traj.action.shape)
        return loss(traj._replace(extras={**traj.extras, "replay_weight": w}))

    plain = float(loss(traj))
    np.testing.assert_allclose(weighted([1.0, 1.0]), plain, rtol=1e-6)
    np.testing.assert_allclose(weighted([2.0, 2.0]), 2 * plain, rtol=1e-6)
    # Linear in each sequence's weight: the two columns' parts add up to the whole.
    only0, only1 = float(weighted([1.0, 0.0])), float(weighted([0.0, 1.0]))
    assert only0 > 0 and only1 > 0
    np.testing.assert_allclose(only0 + only1, plain, rtol=1e-5)


def test_loss_ignores_the_dummy_transition_reward(agent, params, make_timestep):
    traj = envpool_trajectory(make_timestep)
    other = traj._replace(
        timestep=traj.timestep._replace(reward=traj.timestep.reward.at[3, 0].add(50.0))
    )
    loss = jax.jit(agent.loss)
    (a, _), (b, _) = loss(params, traj, jax.random.key(0)), loss(params, other, jax.random.key(0))
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_update_lowers_the_loss_with_finite_gradients(agent, params, make_timestep):
    traj = envpool_trajectory(make_timestep)
    (_, metrics), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    chex.assert_tree_all_finite(grads)
    assert all(np.isfinite(v) for v in metrics.values())
    chex.clear_trace_counter()
    update = jax.jit(chex.assert_max_traces(agent.update, n=1))
    opt_state = agent.optimizer.init(params)
    p, first = params, None
    for i in range(30):
        p, opt_state, m = update(p, opt_state, traj, jax.random.key(i))
        first = m["losses/total"] if first is None else first
    assert float(agent.loss(p, traj, jax.random.key(0))[0]) < 0.9 * float(first)
    assert m["losses/grad_norm"] > 0


@pytest.mark.parametrize(
    "torso, size, module", [("auto", 12, "ImpalaResNet"), ("nature_cnn", 36, "NatureCNN")]
)
def test_gradients_are_finite_on_uint8_frames(random_trajectory, cheap_init, torso, size, module):
    spec = EnvSpec("frames", (2, size, size), "uint8", 3, max_episode_steps=100)
    config = MuZeroConfig(num_unroll_steps=2, latent_size=8, hidden_sizes=(8,), torso=torso)
    agent = make_muzero(spec, config)
    params = cheap_init(agent.init, jax.random.key(0))
    paths = [jax.tree_util.keystr(p) for p, _ in jax.tree.leaves_with_path(params)]
    assert any(module in p for p in paths)
    traj = random_trajectory(spec, 2, 2)
    traj = traj._replace(
        extras={"policy": jnp.full((3, 2, 3), 1 / 3), "root_value": jnp.zeros((3, 2))}
    )
    (loss, _), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    assert np.isfinite(loss)
    chex.assert_tree_all_finite(grads)


def test_scale_gradient_and_latent_normalisation():
    x = jnp.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(scale_gradient(x, 0.5), x)
    np.testing.assert_allclose(jax.grad(lambda y: jnp.sum(scale_gradient(y, 0.5)))(x), 0.5)
    np.testing.assert_allclose(normalize_latent(x), [0.0, 1.0, 0.5])
    # Layer norm: mean 2, variance 2/3 (plus the epsilon), no learnt scale or bias.
    np.testing.assert_allclose(
        normalize_latent(x, "layer_norm"), (x - 2.0) / np.sqrt(2 / 3 + 1e-5), rtol=1e-6
    )


def test_latent_norm_reaches_representation_and_dynamics(muzero_small, vector_spec, cheap_init):
    config = dataclasses.replace(muzero_small, latent_norm="layer_norm")
    agent = make_muzero(vector_spec, config)
    params = cheap_init(agent.init, jax.random.key(0), scale=0.5)
    net = muzero_network(vector_spec, config)
    obs = jax.random.normal(jax.random.key(1), (4, *vector_spec.observation_shape))
    latent = net.apply(params, obs, method=MuZeroNetwork.represent)
    action = jnp.zeros(4, jnp.int32)
    _, next_latent = net.apply(params, latent, action, method=MuZeroNetwork.dynamics)
    for z in (latent, next_latent):
        np.testing.assert_allclose(z.mean(-1), 0.0, atol=1e-5)
        np.testing.assert_allclose(z.var(-1), 1.0, rtol=1e-3)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(gamma=1.5), "gamma"),
        (dict(num_unroll_steps=0), "num_unroll_steps"),
        (dict(td_steps=2.5), "td_steps"),
        (dict(learning_rate=0.0), "learning_rate"),
        (dict(torso="resnet"), "torso"),
        (dict(search={"num_simulations": 4}), "search"),
        (dict(value_support=(-1, 1, 5)), "value_support"),
        (dict(hidden_sizes=(8, 0)), "hidden_sizes"),
        (dict(value_cost=-1.0), "value_cost"),
        (dict(entropy_cost=-0.01), "entropy_cost"),
        (dict(num_action_samples=0), "num_action_samples"),
        (dict(value_bootstrap="target"), "value_bootstrap"),
        (dict(latent_norm="batch_norm"), "latent_norm"),
        (dict(consistency_cost=-2.0), "consistency_cost"),
        (dict(novelty_weight=-1.0), "novelty_weight"),
        (dict(novelty_fade=1.5), "novelty_fade"),
        (dict(novelty_window=-1), "novelty_window"),
        (dict(exploration_epsilon=1.5), "exploration_epsilon"),
        (dict(exploration_fade=-0.1), "exploration_fade"),
        (dict(exploration_final=2.0), "exploration_final"),
        (dict(replay={"capacity": 64}), "replay"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"MuZeroConfig.{field}"):
        MuZeroConfig(**kwargs)


def test_registered_as_muzero(muzero_small, vector_spec):
    agent = make_agent("muzero", vector_spec, muzero_small)
    assert agent.name == "muzero" and agent.config is muzero_small


@pytest.mark.slow
def test_learns_catch_on_anakin():
    """MuZero's Catch preset (Gumbel search, 4 replay updates per rollout) at Anakin's
    Catch layout; about 1-2 minutes on 2 CPU cores. Where the test was written every seed
    tried (5 on the command line, 3 more in a sweep) caught every ball greedily from 2e5
    steps on. On another 2-core machine (AMD EPYC, 2026-12-07; its floating point is
    another draw of the same seeds) 5 seeds at once did so from 2.6-3.6e5 and seed 0 alone
    from 4.6e5, when 3.1e5, this test's budget then, left it at 0.625. The budget is 6.1e5.

    Lives here for the agent's sake but needs podracer-anakin (skipped without it). The
    greedy return is that of the deterministic search after the last chunk, over 128
    episodes; the training return that of the acting policy (Gumbel-sampled search
    actions, and a random action 10% of the time: ~0.8 once solved).
    """
    anakin = pytest.importorskip("podracer.anakin")
    from podracer.runs import final_return  # a dependency of podracer-anakin

    config, _ = anakin.AnakinConfig.from_preset(
        "catch", "muzero",
        updates_per_chunk=100,
        total_env_steps=614_400,
        eval_interval=614_400,  # once, at the end
        eval_episodes=128,
        progress=False,
        tensorboard=False,
    )  # fmt: skip
    result = anakin.train(config)
    assert result.history[-1]["eval/episodic_return"] >= 0.95  # random play: about -0.6
    assert final_return(result, last=2) >= 0.5


def test_policy_target_smoothing_is_the_loss_on_a_smoothed_search_policy(
    muzero_small, vector_spec, make_timestep
):
    # By hand: smoothing s is the plain loss on (1 - s) x the search's policy + s / A, for
    # the policy term only (the other terms and the logged search entropy unchanged).
    traj = envpool_trajectory(make_timestep)
    s = 0.3
    smooth = make_muzero(vector_spec, dataclasses.replace(muzero_small, policy_target_smoothing=s))
    plain = make_muzero(vector_spec, muzero_small)
    # Params away from their init, whose near-uniform prior makes any target cost log A.
    params = plain.init(jax.random.key(1))
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.key(2), len(leaves))
    params = tree.unflatten(
        [x + jax.random.normal(k, x.shape) for x, k in zip(leaves, keys, strict=True)]
    )
    by_hand = traj._replace(
        extras={**traj.extras, "policy": (1 - s) * traj.extras["policy"] + s / A}
    )
    key = jax.random.key(0)
    (got, got_metrics), (want, want_metrics) = (
        jax.jit(smooth.loss)(params, traj, key),
        jax.jit(plain.loss)(params, by_hand, key),
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for name in ("losses/policy", "losses/value", "losses/reward"):
        np.testing.assert_allclose(got_metrics[name], want_metrics[name], rtol=1e-6)
    _, unsmoothed = jax.jit(plain.loss)(params, traj, key)
    assert got_metrics["losses/policy"] != unsmoothed["losses/policy"]  # it did change
    np.testing.assert_allclose(
        got_metrics["agent/search_policy_entropy"], unsmoothed["agent/search_policy_entropy"]
    )
