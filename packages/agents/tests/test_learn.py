"""The learning-rate schedule (`annealed`, now optax's) against the formula it replaced,
and the learning rate the learner reports (`charts/learning_rate`)."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from podracer.agents import AGENTS
from podracer.agents import PPOConfig
from podracer.agents import make_agent
from podracer.agents import make_ppo
from podracer.agents.learn import LEARNING_RATE
from podracer.agents.learn import annealed
from podracer.agents.learn import learning_rate_at
from podracer.agents.learn import make_learn
from podracer.agents.learn import make_optimizer
from podracer.agents.normalization import STATS_KEY
from podracer.agents.normalization import frozen_statistics
from podracer.agents.train_state import init_train_state
from podracer.envs import EnvSpec


def _hand_annealed(learning_rate, total_updates, steps_per_update, count):
    """The schedule `annealed` wrote out before it was optax's (PureJaxRL's)."""
    frac = 1.0 - (count // steps_per_update) / total_updates
    return learning_rate * jnp.maximum(frac, 0.0)


@pytest.mark.parametrize(
    "total_updates, steps_per_update", [(1, 1), (10, 1), (7, 4), (97, 16), (9766, 64)]
)
def test_annealed_is_the_hand_written_schedule(total_updates, steps_per_update):
    """The same values, bit for bit, at every optimizer step of the run (as the optimizer
    computes them, jitted); from the end on exactly 0, where the hand-written one could be
    a rounding above it."""
    end = total_updates * steps_per_update  # the first step past the run's last update
    counts = jnp.arange(0, end + 3 * steps_per_update, dtype=jnp.int32)  # optax's int32 count
    got = jax.jit(annealed(2.5e-4, total_updates, steps_per_update))(counts)
    want = jax.jit(lambda c: _hand_annealed(2.5e-4, total_updates, steps_per_update, c))(counts)
    np.testing.assert_array_equal(got[:end], want[:end])
    np.testing.assert_array_equal(got[end:], 0.0)
    np.testing.assert_allclose(want[end:], 0.0, rtol=0, atol=2.5e-4 * 1e-6)
    assert got[0] == np.float32(2.5e-4) and got[steps_per_update - 1] == got[0]
    assert 0 < got[end - 1] <= got[0]  # the last update still learns


def test_annealed_takes_a_traced_rate_and_is_constant_without_a_length():
    """A sweep traces the rate (one per member); the length stays a Python int."""
    rates = jnp.array([1e-4, 3e-4, 1e-3])
    counts = jnp.arange(0, 40, 3, dtype=jnp.int32)
    got = jax.jit(jax.vmap(lambda lr: annealed(lr, 8, 4)(counts)))(rates)
    want = jax.jit(jax.vmap(lambda lr: _hand_annealed(lr, 8, 4, counts)))(rates)
    np.testing.assert_array_equal(got[:, counts < 32], want[:, counts < 32])
    np.testing.assert_array_equal(got[:, counts >= 32], 0.0)
    assert annealed(3e-4, None) == 3e-4 and annealed(3e-4, 0) == 3e-4


@pytest.mark.parametrize("optimizer", ["adam", "radam", "frozen"])
def test_learning_rate_at_is_the_rate_of_the_optimizers_next_step(optimizer):
    schedule = annealed(1e-3, 5, 2)
    if optimizer == "frozen":  # PPO's with observation statistics: a multi_transform
        opt = frozen_statistics(make_optimizer(schedule, 0.5))
    else:
        opt = make_optimizer(schedule, 0.5, name=optimizer)
    params = {"params": {"w": jnp.ones(3)}, STATS_KEY: {"mean": jnp.zeros(3)}}
    state = opt.init(params)
    step = jax.jit(lambda s: opt.update(jax.tree.map(jnp.ones_like, params), s, params)[1])
    for count in range(12):
        assert learning_rate_at(schedule, state) == schedule(jnp.int32(count))
        state = step(state)
    assert learning_rate_at(schedule, state) == 0.0
    rate = learning_rate_at(3e-4, opt.init(params))  # a constant: itself
    assert rate.dtype == jnp.float32 and rate == np.float32(3e-4)
    assert learning_rate_at(None, state) is None
    assert learning_rate_at(schedule, optax.adam(3e-4).init(params)) is None  # no count


SPEC = EnvSpec("probe", (3,), "float32", 2)


def test_every_built_in_agent_reports_its_learning_rate():
    for name in AGENTS:
        agent = make_agent(name, SPEC, total_updates=10)
        assert agent.learning_rate is not None, name
        want = agent.config.learning_rate
        rate = learning_rate_at(agent.learning_rate, agent.optimizer.init(agent.init(
            jax.random.key(0))))  # fmt: skip
        assert rate == np.float32(want), name  # the first step's, annealed or not


@pytest.mark.parametrize("anneal", [True, False])
def test_learn_reports_the_learning_rate_of_each_update(anneal, random_trajectory):
    """What the runtimes log (`charts/learning_rate`): annealed over the run's 3 updates,
    or the constant rate, after the losses of the update it took."""
    config = PPOConfig(num_epochs=2, num_minibatches=2, anneal_lr=anneal, learning_rate=1e-3,
                       torso="mlp", hidden_sizes=(8,))  # fmt: skip
    agent = make_ppo(SPEC, config, total_updates=3)
    rng = np.random.default_rng(0)
    extras = {"log_prob": jnp.asarray(np.log(rng.uniform(0.2, 0.8, (5, 2))), jnp.float32),
              "value": jnp.zeros((5, 2))}  # fmt: skip
    trajectory = random_trajectory(SPEC, 4, 2, extras=extras)
    learn = jax.jit(make_learn(agent, 1, "devices", lambda x: x))
    train, rates = init_train_state(agent, jax.random.key(0)), []
    for _ in range(4):
        train, losses, _ = learn(train, trajectory, None)
        assert np.isfinite(float(losses["losses/total"]))
        rates.append(float(losses[LEARNING_RATE]))
    want = [1e-3, 1e-3 * 2 / 3, 1e-3 / 3, 0.0] if anneal else [1e-3] * 4
    np.testing.assert_allclose(rates, want, rtol=1e-6)


def _squared_error(params, minibatch, reduce):
    loss = jnp.mean((minibatch["x"] @ params - minibatch["y"]) ** 2)
    return loss, {"loss": loss}


@pytest.mark.parametrize("split", ["time", "envs"])
def test_one_minibatch_is_one_step_on_the_whole_batch_with_no_gather(split):
    """With one minibatch a pass takes the batch as it is: the same step as a plain
    gradient step on it, and no gather in the program (a shuffle of a whole rollout is a
    loop of row copies on an accelerator)."""
    from podracer.agents.learn import minibatch_update

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    batch = {"x": jax.random.normal(keys[0], (8, 6, 3)), "y": jax.random.normal(keys[1], (8, 6))}
    optimizer = optax.sgd(0.1)
    params = jnp.ones(3)
    update = minibatch_update(_squared_error, optimizer, 1, 1, split=split)
    args = (params, optimizer.init(params), batch, jax.random.PRNGKey(1))
    new_params, _, metrics = update(*args)
    grads = jax.grad(lambda p: _squared_error(p, batch, None)[0])(params)
    np.testing.assert_allclose(new_params, params - 0.1 * grads, rtol=1e-6)
    np.testing.assert_allclose(metrics["loss"], _squared_error(params, batch, None)[0], rtol=1e-6)
    assert "gather" not in str(jax.make_jaxpr(update)(*args))
    # Several minibatches still shuffle (the gather is there).
    shuffled = minibatch_update(_squared_error, optimizer, 1, 2, split=split)
    assert "gather" in str(jax.make_jaxpr(shuffled)(*args))


@pytest.mark.parametrize("split", ["time", "envs"])
@pytest.mark.parametrize("minibatches", [1, 2])
def test_microbatches_take_the_same_step_in_slices(split, minibatches):
    """`num_microbatches`: each minibatch's gradient as the mean of its slices' (a mean
    loss over equal slices: the same step), the backward pass run once per slice."""
    from podracer.agents.learn import minibatch_update

    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    batch = {"x": jax.random.normal(keys[0], (8, 12, 3)), "y": jax.random.normal(keys[1], (8, 12))}
    optimizer = optax.adam(0.1)
    params = jnp.asarray([1.0, -2.0, 0.5])
    args = (params, optimizer.init(params), batch, jax.random.PRNGKey(1))
    whole = minibatch_update(_squared_error, optimizer, 2, minibatches, split=split)
    sliced = minibatch_update(_squared_error, optimizer, 2, minibatches, split=split,
                              num_microbatches=2)  # fmt: skip
    (p1, _, m1), (p2, _, m2) = whole(*args), sliced(*args)
    assert not np.allclose(p1, params)
    np.testing.assert_allclose(p2, p1, rtol=1e-5)
    np.testing.assert_allclose(m2["loss"], m1["loss"], rtol=1e-5)
    # The backward pass runs on slices: its dot products see half a minibatch's rows.
    jaxpr = str(jax.make_jaxpr(sliced)(*args))
    rows = (8 if split == "time" else 12) // minibatches // 2
    assert f"f32[{rows}," in jaxpr if split == "time" else f",{rows},3]" in jaxpr
    with pytest.raises(ValueError, match=r"num_microbatches \(5\) must divide"):
        minibatch_update(_squared_error, optimizer, 1, 1, split=split, num_microbatches=5)(*args)


def test_qlambda_microbatches_keep_its_update(random_trajectory):
    """Q(lambda) with 2 microbatches per minibatch: the update of the whole minibatch."""
    from podracer.agents import QLambdaConfig
    from podracer.agents import make_qlambda

    trajectory = random_trajectory(SPEC, 8, 4)
    results = []
    for k in (1, 2):
        config = QLambdaConfig(num_microbatches=k, hidden_sizes=(16,), torso="mlp")
        agent = make_qlambda(SPEC, config)
        learn = jax.jit(make_learn(agent, 1, "devices", lambda x: x))
        train, losses, _ = learn(init_train_state(agent, jax.random.key(0)), trajectory, None)
        results.append((jax.tree.leaves(train.params), float(losses["losses/value"])))
    (p1, v1), (p2, v2) = results
    assert v2 == pytest.approx(v1, rel=1e-5)
    for a, b in zip(p1, p2, strict=True):
        np.testing.assert_allclose(b, a, rtol=2e-5, atol=1e-7)
    with pytest.raises(ValueError, match="num_microbatches"):
        QLambdaConfig(num_microbatches=0)


def test_vmap_in_turns_is_vmap_with_one_copy_of_the_state():
    from podracer.agents import vmap_in_turns

    # 8 members, each a state of 256k floats (a replay buffer's weight) whose rows a loop
    # rewrites in place, a shared input, and a second argument with its member axis second.
    def fn(state, shared, other):
        def row(i, s):
            new = jnp.tanh(jax.lax.dynamic_index_in_dim(s, i, keepdims=False) * shared + other[0])
            return jax.lax.dynamic_update_index_in_dim(s, new, i, 0)

        state = jax.lax.fori_loop(0, 3, row, state)
        return state, jnp.sum(state[0]) + other[1], other * 2.0

    members, rows = 8, 1024
    state = jnp.arange(members * rows * 256, dtype=jnp.float32).reshape(members, rows, 256)
    other = jnp.arange(2 * members, dtype=jnp.float32).reshape(2, members)
    axes = dict(in_axes=(0, None, 1), out_axes=(0, 0, 1))
    want = jax.vmap(fn, **axes)(state, 3.0, other)
    temporaries = []
    for group in (8, 2):
        turns = vmap_in_turns(fn, members, group, **axes, in_place={0: 0})
        compiled = jax.jit(turns, donate_argnums=0).lower(state, 3.0, other).compile()
        temporaries.append(compiled.memory_analysis().temp_size_in_bytes)
        got = compiled(jnp.array(state), 3.0, other)
        jax.tree.map(np.testing.assert_array_equal, got, want)
    # Side by side the state is rewritten in place; in turns of 2 the loop holds a group's
    # slice besides (a quarter), not another copy of every member's state (lax.map,
    # regrouping the state and stacking its outputs, held 1.25 of it).
    assert temporaries[0] < 0.01 * state.nbytes, temporaries
    assert temporaries[1] < 0.5 * state.nbytes, temporaries
