"""`gymnasium:<id>` host envs: spec, same-step auto-reset, statistics, async stepping, native
vector envs (next-step auto-reset), the cap on async workers, refusals."""

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium")

from podracer.envs import gymnasium_env  # noqa: E402
from podracer.envs import list_envs  # noqa: E402
from podracer.envs import make  # noqa: E402
from podracer.envs import make_host  # noqa: E402
from podracer.envs.gymnasium_env import GymnasiumEnv  # noqa: E402
from podracer.envs.gymnasium_env import make_gymnasium  # noqa: E402


class DictObservations(gymnasium.Env):
    """A tiny env whose observations are a Dict: refused."""

    observation_space = gymnasium.spaces.Dict(
        {"x": gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)}
    )
    action_space = gymnasium.spaces.Discrete(2)


class CutAfterThree(gymnasium.Env):
    """Truncates itself after 3 steps, with no time limit in its registration."""

    observation_space = gymnasium.spaces.Box(0.0, 10.0, (1,), np.float64)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1), {}

    def step(self, action):
        self.t += 1
        return np.full(1, float(self.t)), 1.0, False, self.t == 3, {}


gymnasium.register("PodracerTestDict-v0", entry_point=DictObservations)
gymnasium.register("PodracerTestCut-v0", entry_point=CutAfterThree)


def test_cartpole_and_pendulum_specs():
    env = make_host("gymnasium:CartPole-v1", num_envs=2, seed=0, vectorization_mode="sync")
    try:
        assert isinstance(env, GymnasiumEnv)
        spec = env.spec
        assert spec.name == "gymnasium:CartPole-v1" and spec.observation_shape == (4,)
        assert spec.observation_dtype == "float32" and spec.num_actions == 2
        assert spec.max_episode_steps == 500 and spec.can_truncate
        assert (env.num_envs, env.batch_size) == (2, 2)
    finally:
        env.close()
    env = make_host("gymnasium:Pendulum-v1", num_envs=2, vectorization_mode="sync")
    try:
        spec = env.spec
        assert spec.is_continuous and spec.action_shape == (1,)
        assert (spec.action_low, spec.action_high) == ((-2.0,), (2.0,))
        assert spec.max_episode_steps == 200 and spec.observation_shape == (3,)
        ts = env.reset()
        ts = env.step(np.full((2, 1), 7.0, np.float32))  # clipped to 2.0, not refused
        assert ts.observation.dtype == np.float32 and ts.reward.dtype == np.float32
    finally:
        env.close()


def _check_episodes(timesteps, rewards_after):
    """Episode ends against a hand count of each env's rewards and steps."""
    n = timesteps[0].observation.shape[0]
    running, steps, ends = np.zeros(n), np.zeros(n, int), 0
    for ts in timesteps[1:]:
        assert ts.transition_mask.all()  # same-step reset: no dummy transition
        running += ts.reward
        steps += 1
        for i in np.flatnonzero(ts.done):
            ends += 1
            assert ts.terminated[i] != ts.truncated[i] and ts.first[i] and ts.episode_end[i]
            assert ts.episode_return[i] == pytest.approx(running[i])
            assert ts.episode_length[i] == steps[i]
            # The ended episode's last observation, not the next one's first.
            assert not np.array_equal(ts.final_observation[i], ts.observation[i])
            running[i], steps[i] = 0.0, 0
        ongoing = ~ts.done
        np.testing.assert_array_equal(ts.final_observation[ongoing], ts.observation[ongoing])
        np.testing.assert_allclose(ts.episode_return[ongoing], running[ongoing], rtol=1e-6)
        assert not ts.first[ongoing].any()
    assert ends >= rewards_after


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_cartpole_steps_sync_and_async_with_episode_statistics(mode):
    env = make_host("gymnasium:CartPole-v1", num_envs=3, seed=1, vectorization_mode=mode)
    rng = np.random.default_rng(0)
    try:
        timesteps = [env.reset()]
        assert timesteps[0].first.all() and timesteps[0].observation.dtype == np.float32
        for _ in range(60):
            timesteps.append(env.step(rng.integers(0, 2, 3).astype(np.int32)))
        _check_episodes(timesteps, rewards_after=3)
        # The HostEnv's asynchronous protocol, as Sebulba's actors drive it.
        env.async_reset()
        timesteps = []
        for _ in range(61):
            ts, ids = env.recv()
            np.testing.assert_array_equal(ids, np.arange(3))
            timesteps.append(ts)
            env.send(rng.integers(0, 2, 3).astype(np.int32), ids)
        assert timesteps[0].first.all() and not timesteps[0].done.any()
        _check_episodes(timesteps, rewards_after=3)
    finally:
        env.close()


def test_send_returns_at_once_and_recv_waits_for_the_step():
    env = make_host("gymnasium:CartPole-v1", num_envs=2, vectorization_mode="async")
    try:
        env.async_reset()
        ts, ids = env.recv()
        env.send(np.zeros(2, np.int32), ids)
        with pytest.raises(RuntimeError, match="send\\(\\) twice"):
            env.send(np.zeros(2, np.int32), ids)
        ts, _ = env.recv()
        assert not ts.first.any() and (ts.reward == 1.0).all()
        with pytest.raises(RuntimeError, match="recv\\(\\) needs"):
            env.recv()
        env.send(np.ones(2, np.int32), np.array([1, 0]))  # any order of all the ids
        env.recv()
    finally:
        env.close()


def test_max_episode_steps_truncates_at_step_5():
    env = make_host("gymnasium:Pendulum-v1", num_envs=2, seed=3, vectorization_mode="sync",
                    max_episode_steps=5)  # fmt: skip
    try:
        assert env.spec.max_episode_steps == 5
        env.reset()
        for t in range(1, 11):
            ts = env.step(np.zeros((2, 1), np.float32))
            assert ts.truncated.all() == (t % 5 == 0) and not ts.terminated.any()
        assert (ts.episode_length == 5).all() and ts.first.all()
        assert not np.array_equal(ts.final_observation, ts.observation)
    finally:
        env.close()


def test_seeds_are_per_env_and_repeatable():
    def first(seed):
        env = make_gymnasium("CartPole-v1", 2, seed=seed, vectorization_mode="sync")
        try:
            return env.reset().observation
        finally:
            env.close()

    a, b = first(5), first(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[0], a[1])  # env i gets seed + i
    np.testing.assert_array_equal(first(6)[0], a[1])


def test_an_env_without_a_time_limit_reports_its_cuts_as_terminated():
    env = make_host("gymnasium:PodracerTestCut-v0", num_envs=2, vectorization_mode="sync")
    try:
        assert env.spec.max_episode_steps is None and not env.spec.can_truncate
        assert env.spec.observation_dtype == "float32"  # float64 observations are cast
        env.reset()
        for _ in range(3):
            ts = env.step(np.zeros(2, np.int32))
        assert ts.terminated.all() and not ts.truncated.any()
        assert (ts.episode_return == 3.0).all() and (ts.final_observation == 3.0).all()
        assert ts.observation.dtype == np.float32 and (ts.observation == 0.0).all()
    finally:
        env.close()


def test_list_envs_names_gymnasiums_registry_for_make_host_only():
    host = list_envs("host")
    assert "gymnasium:CartPole-v1" in host and "gymnasium:PodracerTestCut-v0" in host
    assert not any(n.startswith("gymnasium:") for n in list_envs("jax"))


def _one_line(excinfo, *parts):
    message = str(excinfo.value)
    assert "\n" not in message, message
    for part in parts:
        assert part in message, message


def test_refusals_are_one_line():
    with pytest.raises(ValueError) as e:
        make("gymnasium:CartPole-v1")
    _one_line(e, "host environment", "make_host", "gymnax:CartPole-v1")
    with pytest.raises(ValueError) as e:
        make("gymnasium:HalfCheetah-v5")
    _one_line(e, "brax:halfcheetah")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:CartPole-v1", num_envs=4, batch_size=2)
    _one_line(e, "batch_size=2", "num_envs=4")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:CartPol-v1", num_envs=2)
    _one_line(e, "unknown gymnasium environment", "did you mean", "'gymnasium:CartPole-v1'")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:PodracerTestDict-v0", num_envs=2)
    _one_line(e, "Dict observation space", "Box")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:Blackjack-v1", num_envs=2)
    _one_line(e, "Tuple observation space")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:CartPole-v1", num_envs=2, no_such_option=1)
    _one_line(e, "gymnasium:CartPole-v1", "no_such_option")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:CartPole-v1", num_envs=2, vectorization_mode="threads")
    _one_line(e, "vectorization_mode", "'auto', 'vector_entry_point', 'async', 'sync'")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:Acrobot-v1", num_envs=2, vectorization_mode="vector_entry_point")
    _one_line(e, "gymnasium:Acrobot-v1 has no vector entry point", "'sync' or 'async'")
    with pytest.raises(ValueError) as e:
        make_host(
            "gymnasium:phys2d/CartPole-v1", num_envs=2, vectorization_mode="vector_entry_point"
        )
    _one_line(e, "JAX vector entry point")
    with pytest.raises(ValueError) as e:
        make_host("gymnasium:CartPole-v1", num_envs=2, max_episode_steps=0)
    _one_line(e, "max_episode_steps")
    with pytest.raises(ImportError) as e:
        make_host("gymnasium:no_such_module_xyz:Thing-v0", num_envs=2)
    _one_line(e, "no_such_module_xyz")


def test_auto_picks_the_native_vector_env_where_the_id_has_one():
    env = make_host("gymnasium:CartPole-v1", num_envs=3, max_episode_steps=7)
    try:
        assert env.vectorization_mode == "vector_entry_point"
        assert type(env.envs).__name__ == "CartPoleVectorEnv"
        assert env.spec == make_host("gymnasium:CartPole-v1", 3, vectorization_mode="sync",
                                     max_episode_steps=7).spec  # fmt: skip
    finally:
        env.close()
    # No native vector env (Acrobot), or a JAX one (phys2d): async workers.
    for name in ("gymnasium:Acrobot-v1", "gymnasium:phys2d/CartPole-v1"):
        env = make_host(name, num_envs=2)
        env.close()
        assert env.vectorization_mode == "async"


def _first_episode(timesteps):
    """Per env: the real transitions of its first episode, as comparable arrays."""
    out = []
    for i in range(timesteps[0].observation.shape[0]):
        real = [ts for ts in timesteps[1:] if ts.transition_mask[i]]
        end = next(t for t, ts in enumerate(real) if ts.done[i])
        out.append({
            field: np.stack([getattr(ts, field)[i] for ts in real[: end + 1]])
            for field in ("reward", "terminated", "truncated", "episode_return",
                          "episode_length", "episode_end", "final_observation")
        })  # fmt: skip
    return out


def test_native_next_step_reset_agrees_with_the_sync_path():
    actions = np.tile(np.array([[0, 1, 1], [0, 0, 1]], np.int32), (15, 1))  # [30, 3]
    sync = make_host("gymnasium:CartPole-v1", 3, seed=2, vectorization_mode="sync",
                     max_episode_steps=12)  # fmt: skip
    native = make_host("gymnasium:CartPole-v1", 3, seed=2, max_episode_steps=12)
    try:
        runs = [[sync.reset()], [native.reset()]]
        # The sync envs' starts (a native env draws its own from one generator).
        native.envs.state = np.stack(sync.envs.get_attr("state"), axis=1)
        for a in actions:
            runs[0].append(sync.step(a))
            runs[1].append(native.step(a))
    finally:
        sync.close()
        native.close()
    first_sync, first_native = _first_episode(runs[0]), _first_episode(runs[1])
    ends = set()
    for a, b in zip(first_sync, first_native, strict=True):
        for field in a:
            np.testing.assert_allclose(a[field], b[field], rtol=1e-5, err_msg=field)
        ends.add((bool(a["terminated"][-1]), bool(a["truncated"][-1])))
    assert ends == {(True, False), (False, True)}  # both kinds of end were compared
    # The native path's reset step: first, neither terminated nor truncated, reward 0,
    # not counted; the step that ends an episode shows its last observation.
    steps = runs[1][1:]
    done = np.stack([ts.done for ts in steps])
    first = np.stack([ts.first for ts in steps])
    np.testing.assert_array_equal(first[1:], done[:-1])
    assert not first[0].any() and not (first & done).any() and done.sum() >= 4
    np.testing.assert_array_equal(np.stack([ts.transition_mask for ts in steps]), ~first)
    length = np.zeros(3, int)
    for ts in steps:
        assert (ts.reward[ts.first] == 0).all() and ts.final_observation is ts.observation
        length = np.where(ts.first, 0, length + 1)
        np.testing.assert_array_equal(ts.episode_length, length)
        np.testing.assert_array_equal(ts.episode_return, length.astype(np.float32))
        np.testing.assert_array_equal(ts.episode_end, ts.done)


def test_native_async_protocol():
    env = make_host("gymnasium:CartPole-v1", num_envs=2, max_episode_steps=3)
    try:
        env.async_reset()
        ts, ids = env.recv()
        assert ts.first.all() and not ts.done.any()
        for t in range(1, 6):
            env.send(np.zeros(2, np.int32), ids)
            ts, ids = env.recv()
            assert ts.truncated.all() == (t == 3) and ts.first.all() == (t == 4)
        np.testing.assert_array_equal(ts.episode_length, 1)
    finally:
        env.close()


def test_async_workers_are_capped_across_open_envs(monkeypatch):
    monkeypatch.setattr(gymnasium_env, "max_async_workers", lambda: 3)
    held = make_host("gymnasium:Acrobot-v1", num_envs=2, vectorization_mode="async")
    try:
        with pytest.raises(ValueError) as e:
            make_host("gymnasium:Acrobot-v1", num_envs=2, vectorization_mode="async")
        _one_line(e, "vectorization_mode='async'", "2 already running", "cap of 3",
                  "vectorization_mode='sync'")  # fmt: skip
        env = make_host("gymnasium:Acrobot-v1", num_envs=2)  # "auto": sync over the cap
        env.close()
        assert env.vectorization_mode == "sync"
    finally:
        held.close()
    held.close()  # twice: counted once
    env = make_host("gymnasium:Acrobot-v1", num_envs=3, vectorization_mode="async")
    env.close()
    assert gymnasium_env._async_workers == 0
