import warnings

import numpy as np
import pytest

envpool = pytest.importorskip("envpool")

from podracer.envs import AtariOptions  # noqa: E402
from podracer.envs import EnvSpec  # noqa: E402
from podracer.envs import HostEnv  # noqa: E402
from podracer.envs import TimeStep  # noqa: E402
from podracer.envs import envpool_timestep  # noqa: E402
from podracer.envs import envpool_timestep_by_id  # noqa: E402
from podracer.envs import init_episode_tracker  # noqa: E402
from podracer.envs import make_envpool  # noqa: E402


def _reference_stats(steps: list[TimeStep], rewards: list[np.ndarray]):
    """Per-env return/length/first computed with a plain Python loop over envs."""
    n = steps[0].reward.shape[0]
    ret, length, prev_done = np.zeros(n), np.zeros(n, int), np.ones(n, bool)
    out = []
    for ts, r in zip(steps, rewards, strict=True):
        first = prev_done.copy()
        for i in range(n):
            ret[i] += r[i]
            length[i] += 0 if first[i] else 1
        out.append((first, ret.copy(), length.copy()))
        done = ts.terminated | ts.truncated
        ret[done], length[done] = 0, 0
        prev_done = done
    return out


def test_cartpole_sync_shapes_dtypes_and_dummy_transition():
    env = make_envpool("CartPole-v1", num_envs=3, seed=1, max_episode_steps=5)
    assert isinstance(env, HostEnv)
    assert env.spec == EnvSpec("envpool:CartPole-v1", (4,), "float32", 2, 5)
    ts = env.reset()
    assert ts.first.all() and not ts.done.any() and ts.observation.shape == (3, 4)
    steps = [env.step(np.array([0, 1, 0], np.int32)) for _ in range(12)]
    for ts in steps:
        assert ts.observation.dtype == np.float32 and ts.observation.shape == (3, 4)
        assert ts.reward.dtype == np.float32 and ts.reward.shape == (3,)
        for x in (ts.terminated, ts.truncated, ts.first, ts.episode_end):
            assert x.dtype == np.bool_ and x.shape == (3,)
        assert ts.episode_return.dtype == np.float32 and ts.episode_length.dtype == np.int32
        assert ts.final_observation is ts.observation
    first = np.stack([ts.first for ts in steps])
    done = np.stack([ts.done for ts in steps])
    # Truncated at steps 5 and 11 (index 4 and 10), dummy transitions right after.
    expected_done = np.zeros((12, 3), bool)
    expected_done[[4, 10]] = True
    np.testing.assert_array_equal(done, expected_done)
    assert np.stack([ts.truncated for ts in steps])[[4, 10]].all()
    np.testing.assert_array_equal(first, np.roll(expected_done, 1, axis=0))
    mask = np.stack([ts.transition_mask for ts in steps])
    np.testing.assert_array_equal(mask, ~first)
    np.testing.assert_array_equal(steps[4].episode_return, 5.0)
    np.testing.assert_array_equal(steps[4].episode_length, 5)
    np.testing.assert_array_equal(steps[5].reward, 0.0)  # the dummy step's reward
    np.testing.assert_array_equal(steps[6].episode_length, 1)
    env.close()


def test_cartpole_async_env_ids_and_statistics():
    env = make_envpool("CartPole-v1", num_envs=4, batch_size=2, seed=3)
    env.async_reset()
    rng = np.random.default_rng(0)
    per_env: dict[int, list] = {i: [] for i in range(4)}
    for _ in range(200):
        ts, ids = env.recv()
        assert ids.shape == (2,) and len(set(ids.tolist())) == 2
        for j, i in enumerate(ids):
            per_env[int(i)].append(
                TimeStep(*(x[j : j + 1] for x in ts[:8]), ts.episode_end[j : j + 1])
            )
        env.send(rng.integers(0, 2, size=2, dtype=np.int32), ids)
    ends = 0
    for steps in per_env.values():
        assert steps[0].first[0]  # the reset observation
        reference = _reference_stats(steps, [s.reward for s in steps])
        for ts, (first, ret, length) in zip(steps, reference, strict=True):
            np.testing.assert_array_equal(ts.first, first)
            np.testing.assert_array_equal(ts.episode_return, ret)
            np.testing.assert_array_equal(ts.episode_length, length)
            np.testing.assert_array_equal(ts.transition_mask, ~first | ts.done)
            ends += int(ts.episode_end[0])
    assert ends >= 4  # random CartPole episodes last ~20 steps
    env.close()


def test_host_path_matches_the_pure_xla_conversion():
    import jax.numpy as jnp

    env = make_envpool("CartPole-v1", num_envs=2, batch_size=1, seed=5)
    tracker = init_episode_tracker(2)
    env.async_reset()
    # Drive the raw pool and the adapter's conversion side by side on identical outputs.
    raw = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=2, batch_size=1, seed=5)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        raw.observation_space  # noqa: B018
    raw.async_reset()
    for t in range(60):
        ts, ids = env.recv()
        obs, rew, term, trunc, info = raw.recv()
        jinfo = {k: jnp.asarray(v) for k, v in info.items() if k != "players"}
        tracker, xts = envpool_timestep(
            tracker,
            jnp.asarray(obs),
            jnp.asarray(rew),
            jnp.asarray(term),
            jnp.asarray(trunc),
            jinfo,
        )
        np.testing.assert_array_equal(ids, info["env_id"])
        for name in ("first", "episode_return", "episode_length", "episode_end", "terminated"):
            np.testing.assert_array_equal(getattr(ts, name), np.asarray(getattr(xts, name)), name)
        action = np.array([t % 2], np.int32)
        env.send(action, ids)
        raw.send(action, info["env_id"])
    env.close()
    raw.close()


def test_xla_interface_runs_a_rollout_inside_jit():
    import jax
    import jax.numpy as jnp

    env = make_envpool("CartPole-v1", num_envs=2, seed=0, max_episode_steps=4)
    env.async_reset()
    handle, recv, send, _ = env.xla()

    def rollout(handle):
        def body(carry, _):
            handle, tracker = carry
            handle, (obs, rew, term, trunc, info) = recv(handle)
            tracker, ts = envpool_timestep(tracker, obs, rew, term, trunc, info)
            handle = send(handle, jnp.ones(2, jnp.int32), info["env_id"])
            return (handle, tracker), (ts.first, ts.done, ts.episode_length)

        carry = (handle, init_episode_tracker(2))
        return jax.lax.scan(body, carry, length=10)[1]

    first, done, length = jax.device_get(jax.jit(rollout)(handle))
    # Reset obs, 4 steps (truncated at the 4th), dummy, 4 steps, dummy.
    np.testing.assert_array_equal(first[:, 0], [1, 0, 0, 0, 0, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(done[:, 0], [0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(length[:, 0], [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    env.close()


def test_by_id_conversion_matches_convert_then_sort_on_a_full_batch():
    import jax
    import jax.numpy as jnp

    env = make_envpool("CartPole-v1", num_envs=4, seed=3, max_episode_steps=5)
    env.async_reset()
    handle, recv, send, _ = env.xla()

    def rollout(handle):
        def body(carry, t):
            handle, tracker, tracker_by_id = carry
            handle, (obs, rew, term, trunc, info) = recv(handle)
            tracker, ts = envpool_timestep(tracker, obs, rew, term, trunc, info)
            ts = jax.tree.map(lambda x: x[jnp.argsort(info["env_id"])], ts)
            tracker_by_id, by_id = envpool_timestep_by_id(
                tracker_by_id, obs, rew, term, trunc, info
            )
            action = (jnp.arange(4) + t) % 2  # per env id
            handle = send(handle, action.astype(jnp.int32), jnp.arange(4, dtype=jnp.int32))
            return (handle, tracker, tracker_by_id), (ts, by_id)

        trackers = (init_episode_tracker(4), init_episode_tracker(4))
        return jax.lax.scan(body, (handle, *trackers), jnp.arange(24))[1]

    ts, by_id = jax.device_get(jax.jit(rollout)(handle))
    assert by_id.episode_end.sum() >= 8  # episodes of at most 5 steps end in 24 steps
    for name in ("observation", "reward", "terminated", "truncated", "first",
                 "episode_return", "episode_length", "episode_end"):  # fmt: skip
        np.testing.assert_array_equal(getattr(by_id, name), getattr(ts, name), name)
    env.close()


def test_pong_shapes_and_options():
    options = AtariOptions(reward_clip=True, repeat_action_probability=0.25)
    env = make_envpool("Pong-v5", num_envs=2, seed=0, atari=options)
    assert env.spec == EnvSpec("envpool:Pong-v5", (4, 84, 84), "uint8", 6, 27000)
    assert env.pool.config["repeat_action_probability"] == 0.25
    ts = env.reset()
    assert ts.observation.dtype == np.uint8 and ts.observation.shape == (2, 4, 84, 84)
    for _ in range(3):
        ts = env.step(np.array([0, 5], np.int32))
    assert ts.observation.shape == (2, 4, 84, 84) and not ts.first.any()
    np.testing.assert_array_equal(ts.episode_length, 3)
    env.close()


def test_episode_return_is_unclipped_when_rewards_are_clipped():
    env = make_envpool("SpaceInvaders-v5", num_envs=1, seed=0, reward_clip=True)
    env.reset()
    rng = np.random.default_rng(0)
    previous, increments = 0.0, []
    for _ in range(150):
        ts = env.step(rng.integers(0, env.spec.num_actions, size=1, dtype=np.int32))
        assert ts.reward[0] in (-1.0, 0.0, 1.0)
        if not ts.done[0]:
            increments.append((float(ts.reward[0]), float(ts.episode_return[0]) - previous))
            previous = float(ts.episode_return[0])
    scored = [(clipped, raw) for clipped, raw in increments if clipped != 0]
    assert scored and all(raw >= 5 and clipped == 1 for clipped, raw in scored)
    env.close()


def test_episodic_life_ends_episodes_at_game_over_only():
    env = make_envpool("Breakout-v5", num_envs=1, seed=1, episodic_life=True, reward_clip=True)
    env.reset()
    rng = np.random.default_rng(0)
    lives_lost = games = real_steps = 0
    game_return = 0.0
    for _ in range(400):
        ts = env.step(rng.integers(0, 4, size=1, dtype=np.int32))
        if ts.transition_mask[0]:
            real_steps += 1
            game_return += float(ts.reward[0])  # Breakout's first rows score 1: clip == raw
        else:
            assert ts.reward[0] == 0 and ts.first[0]
        if ts.terminated[0] and not ts.episode_end[0]:
            lives_lost += 1
            assert ts.episode_length[0] == real_steps  # running, the game goes on
        if ts.episode_end[0]:
            games += 1
            assert ts.episode_length[0] == real_steps and ts.episode_return[0] == game_return
            real_steps, game_return = 0, 0.0
    assert games >= 1 and lives_lost >= 4
    env.close()


def test_errors_name_the_argument_and_allowed_values():
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1, got 0"):
        make_envpool("CartPole-v1", num_envs=0)
    with pytest.raises(ValueError, match=r"batch_size must be an integer in 1..num_envs=2, got 3"):
        make_envpool("CartPole-v1", num_envs=2, batch_size=3)
    with pytest.raises(ValueError, match=r"task 'CartPol-v1'; did you mean \['CartPole-v1'"):
        make_envpool("CartPol-v1", num_envs=2)
    with pytest.raises(ValueError, match="no options.*frame_skip"):
        make_envpool("CartPole-v1", num_envs=2, atari=AtariOptions())
    env = make_envpool("CartPole-v1", num_envs=2)
    env.reset()
    with pytest.raises(
        ValueError, match=r"actions must be in 0..1 \(num_actions=2\), got values in 0..2"
    ):
        env.step(np.array([0, 2], np.int32))
    with pytest.raises(ValueError, match=r"actions must be in 0..1"):
        env.step(np.array([-1, 0], np.int64))
    with pytest.raises(ValueError, match=r"actions must have shape \(2,\), got \(3,\)"):
        env.step(np.zeros(3, np.int32))
    with pytest.raises(ValueError, match="actions must be integers in 0..1, got dtype float32"):
        env.step(np.zeros(2, np.float32))
    np.testing.assert_array_equal(env.step([1, 1]).first, False)  # lists of ints are fine
    env.close()
    env = make_envpool("CartPole-v1", num_envs=2, batch_size=1)
    with pytest.raises(RuntimeError, match="batch_size == num_envs"):
        env.reset()
    env.async_reset()
    _, ids = env.recv()
    with pytest.raises(ValueError, match=r"env_ids must be in 0..1"):
        env.send(np.zeros(1, np.int32), np.array([2]))
    env.close()


def _raw_pool(task, **kwargs):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        pool = envpool.make(task, env_type="gymnasium", **kwargs)
        pool.observation_space  # noqa: B018 - built (and warned about) lazily
    return pool


def test_mujoco_sync_steps_match_raw_envpool_with_clipped_actions():
    env = make_envpool("HalfCheetah-v4", num_envs=8, seed=2, max_episode_steps=5)
    ones = (1.0,) * 6
    assert env.spec == EnvSpec(
        "envpool:HalfCheetah-v4", (17,), "float32", None, 5, (6,), tuple(-x for x in ones), ones
    )
    raw = _raw_pool("HalfCheetah-v4", num_envs=8, seed=2, max_episode_steps=5)
    ts, (raw_obs, _) = env.reset(), raw.reset()
    assert ts.observation.dtype == np.float32 and ts.first.all()
    np.testing.assert_array_equal(ts.observation, raw_obs.astype(np.float32))
    rng = np.random.default_rng(0)
    for t in range(7):
        actions = rng.uniform(-3, 3, size=(8, 6)).astype(np.float32)  # mostly out of bounds
        ts = env.step(actions)
        obs, reward, terminated, truncated, _ = raw.step(np.clip(actions, -1, 1).astype(np.float64))
        assert ts.observation.dtype == np.float32 and ts.observation.shape == (8, 17)
        np.testing.assert_array_equal(ts.observation, obs.astype(np.float32))
        np.testing.assert_array_equal(ts.reward, reward)
        np.testing.assert_array_equal(ts.truncated, truncated)
        assert ts.truncated.all() == (t == 4) and ts.first.all() == (t == 5)
    with pytest.raises(ValueError, match=r"actions must have shape \(8, 6\), got \(8,\)"):
        env.step(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="actions must be finite"):
        env.step(np.full((8, 6), np.nan, np.float32))
    env.close()
    raw.close()


def test_mujoco_async_float_actions_and_statistics():
    env = make_envpool("Hopper-v4", num_envs=4, batch_size=2, seed=1)
    assert env.spec.action_shape == (3,) and env.spec.num_actions is None
    env.async_reset()
    rng = np.random.default_rng(1)
    per_env: dict[int, list] = {i: [] for i in range(4)}
    for _ in range(300):
        ts, ids = env.recv()
        assert ts.observation.dtype == np.float32 and ts.observation.shape == (2, 11)
        for j, i in enumerate(ids):
            per_env[int(i)].append(
                TimeStep(*(x[j : j + 1] for x in ts[:8]), ts.episode_end[j : j + 1])
            )
        env.send(rng.uniform(-1, 1, size=(2, 3)).astype(np.float32), ids)
    ends = 0
    for steps in per_env.values():
        reference = _reference_stats(steps, [s.reward for s in steps])
        for ts, (first, ret, length) in zip(steps, reference, strict=True):
            np.testing.assert_array_equal(ts.first, first)
            np.testing.assert_allclose(ts.episode_return, ret, rtol=1e-5)
            np.testing.assert_array_equal(ts.episode_length, length)
            ends += int(ts.episode_end[0])
    assert ends >= 4  # random Hopper falls within tens of steps
    env.close()


def test_xla_interface_with_float_actions_matches_the_host_path():
    import jax
    import jax.numpy as jnp

    actions = np.linspace(-3.0, 3.0, 10 * 2, dtype=np.float32).reshape(10, 2, 1)
    host = make_envpool("Pendulum-v1", num_envs=2, seed=4)
    host_obs = [host.reset().observation] + [host.step(a).observation for a in actions[:-1]]
    host.close()

    env = make_envpool("Pendulum-v1", num_envs=2, seed=4)
    env.async_reset()
    handle, recv, send, _ = env.xla()

    def rollout(handle):
        def body(handle, action):
            handle, (obs, *_, info) = recv(handle)
            order = jnp.argsort(info["env_id"])
            handle = send(handle, action[order], info["env_id"])  # row k is env k's action
            return handle, obs[order]

        return jax.lax.scan(body, handle, jnp.asarray(actions))[1]

    xla_obs = jax.device_get(jax.jit(rollout)(handle))
    assert xla_obs.dtype == np.float32
    np.testing.assert_allclose(xla_obs, np.stack(host_obs), rtol=1e-6, atol=1e-6)
    env.close()


def test_xla_interface_refuses_64_bit_tasks_without_x64():
    env = make_envpool("HalfCheetah-v4", num_envs=2)
    assert not env.xla_supported
    pendulum = make_envpool("Pendulum-v1", num_envs=2)
    assert pendulum.xla_supported
    pendulum.close()
    with pytest.raises(RuntimeError, match=r"64-bit arrays \(action, .*obs.*\), which JAX cannot "
                                           r"hold with jax_enable_x64 off"):  # fmt: skip
        env.xla()
    env.close()


_X64_ROLLOUT = """
import warnings
import jax, jax.numpy as jnp, numpy as np
from podracer.envs import make_envpool
assert jax.config.jax_enable_x64
actions = np.linspace(-2.0, 2.0, 6 * 2 * 6, dtype=np.float32).reshape(6, 2, 6)
host = make_envpool("HalfCheetah-v4", num_envs=2, seed=3)
host_obs = [host.reset().observation] + [host.step(a).observation for a in actions[:-1]]
env = make_envpool("HalfCheetah-v4", num_envs=2, seed=3)
assert env.xla_supported
env.async_reset()
handle, recv, send, _ = env.xla()
def body(handle, action):
    handle, (obs, *_, info) = recv(handle)
    order = jnp.argsort(info["env_id"])
    return send(handle, action[order], info["env_id"]), obs[order]
xla_obs = jax.device_get(jax.jit(lambda h: jax.lax.scan(body, h, jnp.asarray(actions))[1])(handle))
assert xla_obs.dtype == np.float32, xla_obs.dtype
np.testing.assert_array_equal(xla_obs, np.stack(host_obs))
print("ok")
"""


def test_xla_interface_of_mujoco_tasks_under_x64_matches_the_host_path():
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", _X64_ROLLOUT], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
