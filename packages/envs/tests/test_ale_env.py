import importlib.util

import numpy as np
import pytest

pytest.importorskip("ale_py")

from podracer.envs import AleEnv  # noqa: E402
from podracer.envs import AtariOptions  # noqa: E402
from podracer.envs import EnvSpec  # noqa: E402
from podracer.envs import HostEnv  # noqa: E402
from podracer.envs import env_family  # noqa: E402
from podracer.envs import is_jax_env  # noqa: E402
from podracer.envs import list_envs  # noqa: E402
from podracer.envs import make  # noqa: E402
from podracer.envs import make_host  # noqa: E402
from podracer.envs import registry  # noqa: E402
from podracer.envs import render  # noqa: E402


def _rollout(env, actions):
    """The reset timestep, then one step per row of `actions` [T, num_envs]; closes env."""
    try:
        return [env.reset(), *(env.step(a) for a in actions)]
    finally:
        env.close()


def _actions(num_actions: int, steps: int, num_envs: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_actions, (steps, num_envs)).astype(np.int32)


def _stack(steps, field):
    return np.stack([getattr(ts, field) for ts in steps])


def test_spec_shapes_and_dtypes():
    env = make_host("ale:Pong", num_envs=2, seed=0, num_threads=2)
    assert isinstance(env, HostEnv) and isinstance(env, AleEnv)
    assert env.num_envs == env.batch_size == 2
    assert env.spec == EnvSpec("ale:Pong", (4, 84, 84), "uint8", 6, 27000)
    steps = _rollout(env, np.array([[0, 1]] * 3, np.int32))
    assert steps[0].first.all() and not steps[0].done.any()
    for ts in steps:
        assert ts.observation.shape == (2, 4, 84, 84) and ts.observation.dtype == np.uint8
        assert ts.reward.dtype == np.float32 and ts.reward.shape == (2,)
        for x in (ts.terminated, ts.truncated, ts.first, ts.episode_end):
            assert x.dtype == np.bool_ and x.shape == (2,)
        assert ts.episode_return.dtype == np.float32 and ts.episode_length.dtype == np.int32
        assert ts.final_observation is ts.observation
    assert not _stack(steps[1:], "first").any()
    np.testing.assert_array_equal(steps[-1].episode_length, 3)
    # Any case, underscores optional: the game as gymnasium's ALE ids spell it.
    for name, kwargs, spec_name, num_actions in [
        ("ale:pong", {}, "ale:Pong", 6),
        ("ale:PONG", {}, "ale:Pong", 6),
        ("ale:ms_pacman", {"full_action_space": True}, "ale:MsPacman", 18),
    ]:
        env = make_host(name, num_envs=1, **kwargs)
        env.close()
        assert (env.spec.name, env.spec.num_actions) == (spec_name, num_actions)


def test_next_step_reset_is_masked_and_statistics_count_real_steps():
    # An 8-step frame limit (no-ops and FIRE frames count towards it) ends games fast.
    env = make_host("ale:Breakout", num_envs=3, seed=0, max_episode_steps=8, noop_max=5)
    assert env.spec.max_episode_steps == 8
    steps = _rollout(env, _actions(env.spec.num_actions, 30, 3))[1:]
    done, first = _stack(steps, "done"), _stack(steps, "first")
    assert done.sum(0).min() >= 2  # every env ended at least two games
    assert _stack(steps, "truncated")[done].all()  # at the frame limit
    # The step after an end is the next game's first observation: a dummy transition.
    np.testing.assert_array_equal(first[1:], done[:-1])
    assert not first[0].any() and not (first & done).any()
    np.testing.assert_array_equal(_stack(steps, "transition_mask"), ~first)
    np.testing.assert_array_equal(_stack(steps, "reward")[first], 0.0)
    np.testing.assert_array_equal(_stack(steps, "episode_end"), done)
    # The length counts real transitions: steps since the last dummy (or the reset).
    length = np.zeros(3, int)
    for ts in steps:
        length = np.where(ts.first, 0, length + 1)
        np.testing.assert_array_equal(ts.episode_length, length)
        assert (length[ts.done] <= 8).all()
        length[ts.done] = 0


def test_episodic_life_terminates_at_a_lost_life_with_statistics_per_game():
    actions = _actions(4, 400, 2, seed=1)

    def run(**kwargs):
        return _rollout(make_host("ale:Breakout", num_envs=2, seed=3, **kwargs), actions)[1:]

    plain, lives = run(), run(episodic_life=True)
    # The same games: life losses do not reset anything (ale-py's own episodic_life would).
    np.testing.assert_array_equal(_stack(plain, "observation"), _stack(lives, "observation"))
    end = _stack(plain, "done")
    assert end.sum(0).min() >= 1  # every env finished a game (5 lives)
    for field in ("episode_end", "episode_return", "episode_length", "reward", "truncated"):
        np.testing.assert_array_equal(_stack(plain, field), _stack(lives, field), err_msg=field)
    np.testing.assert_array_equal(_stack(lives, "episode_end"), end)
    terminated, first = _stack(lives, "terminated"), _stack(lives, "first")
    lost = terminated & ~end
    # Four lost lives before each game's last: terminated, and the next life's first
    # observation in the same step (no dummy transition: the game goes on).
    game = np.cumsum(np.concatenate([np.zeros((1, 2), int), end[:-1]]), axis=0)
    for i in range(2):
        for g in range(int(end[:, i].sum())):
            assert lost[(game[:, i] == g), i].sum() == 4
    assert (first[lost]).all() and _stack(lives, "transition_mask")[lost].all()
    np.testing.assert_array_equal(first & ~lost, _stack(plain, "first"))
    np.testing.assert_array_equal(terminated | _stack(lives, "truncated"), end | lost)


def test_reward_clip_leaves_statistics_unclipped():
    actions = _actions(6, 150, 2, seed=2)

    def run(**kwargs):
        return _rollout(make_host("ale:SpaceInvaders", num_envs=2, seed=0, **kwargs), actions)[1:]

    raw, clipped = run(), run(atari=AtariOptions(reward_clip=True))
    raw_reward = _stack(raw, "reward")
    assert (raw_reward > 1).any()  # Space Invaders scores 5 to 30 a hit
    np.testing.assert_array_equal(_stack(clipped, "reward"), np.sign(raw_reward))
    for field in ("episode_return", "episode_length", "observation"):
        np.testing.assert_array_equal(_stack(raw, field), _stack(clipped, field), err_msg=field)
    # Running returns: the unclipped score so far.
    np.testing.assert_array_equal(_stack(raw, "episode_return"), np.cumsum(raw_reward, 0))


def test_seeds_env_i_is_seed_plus_i_and_reproducible():
    kwargs = {"repeat_action_probability": 0.25}  # sticky actions draw from the env's seed
    actions = _actions(4, 40, 2)

    def obs(seed, actions):
        env = make_host("ale:Breakout", num_envs=actions.shape[1], seed=seed, **kwargs)
        return _stack(_rollout(env, actions), "observation")

    a, b = obs(0, actions), obs(0, actions)
    np.testing.assert_array_equal(a, b)
    # Env 1 of seed 0 is env 0 of seed 1.
    np.testing.assert_array_equal(a[:, 1], obs(1, actions[:, 1:])[:, 0])
    assert not np.array_equal(a[:, 0], a[:, 1])


def test_async_send_recv_matches_sync_steps():
    actions = _actions(6, 5, 3)
    sync = _rollout(make_host("ale:Pong", num_envs=3, seed=4), actions)
    env = make_host("ale:Pong", num_envs=3, seed=4)
    try:
        env.async_reset()
        ts, ids = env.recv()
        np.testing.assert_array_equal(ids, [0, 1, 2])
        assert ts.first.all()
        np.testing.assert_array_equal(ts.observation, sync[0].observation)
        for t, a in enumerate(actions):
            if t % 2:  # ids in any order: actions follow their ids
                env.send(a[::-1].copy(), np.array([2, 1, 0], np.int32))
            else:
                env.send(a, ids)
            with pytest.raises(RuntimeError, match="send\\(\\) twice"):
                env.send(a, ids)
            ts, ids = env.recv()
            np.testing.assert_array_equal(ts.observation, sync[t + 1].observation)
            np.testing.assert_array_equal(ts.episode_length, sync[t + 1].episode_length)
        env.send(actions[0], ids)  # close() waits for an outstanding step
    finally:
        env.close()


def test_rgb_frames_stack_as_envpool_and_render():
    env = make_host("ale:Pong", num_envs=2, gray_scale=False, stack_num=2)
    assert env.spec.observation_shape == (6, 84, 84)
    raw = np.arange(2 * 2 * 84 * 84 * 3, dtype=np.uint32).astype(np.uint8).reshape(2, 2, 84, 84, 3)
    # Frame-major channels: [frame 0 RGB, frame 1 RGB], as envpool's gray_scale=False.
    np.testing.assert_array_equal(env._obs(raw)[1, 3:6], raw[1, 1].transpose(2, 0, 1))
    (ts,) = _rollout(env, [])
    assert ts.observation.shape == (2, 6, 84, 84)
    frame = render(env.spec, ts, index=1)
    assert frame.dtype == np.uint8 and frame.shape[-1] == 3 and min(frame.shape[:2]) >= 128
    (ts,) = _rollout(make_host("ale:Pong", num_envs=1), [])
    assert render("ale:Pong", ts, index=0).shape[-1] == 3


def test_registry_family_and_host_only(monkeypatch):
    monkeypatch.setattr(registry, "_envpool_names", tuple)  # not built: seconds, not needed
    assert env_family("ale:Pong") == "atari"
    host = list_envs("host")
    assert {"ale:Pong", "ale:Breakout", "ale:MsPacman"} <= set(host)
    assert not any(n.startswith("ale:") for n in list_envs("jax"))
    assert not is_jax_env("ale:Pong")
    with pytest.raises(ValueError) as info:
        make("ale:Pong")
    message = str(info.value)
    assert "\n" not in message and message.startswith("'ale:Pong' is a host environment (ale")
    assert "make_host('ale:Pong', num_envs=...)" in message


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        ("ale:Pongg", {}, "unknown ALE game 'ale:Pongg'; did you mean \\['ale:Pong'"),
        ("ale:Pong", {"frame_skip": 0}, "ale:Pong: frame_skip must be an int >= 1, got 0"),
        ("ale:Pong", {"noop_max": -1}, "noop_max must be an int >= 0"),
        ("ale:Pong", {"episodic_life": 1}, "episodic_life must be True or False, got 1"),
        ("ale:Pong", {"repeat_action_probability": 2.0}, "must be in \\[0, 1\\], got 2.0"),
        ("ale:Pong", {"max_episode_steps": 0}, "max_episode_steps must be an int >= 1"),
        ("ale:Pong", {"num_threads": 0}, "num_threads must be an int >= 1, got 0"),
        ("ale:Pong", {"seed": -1}, "seed must be an int >= 0, got -1"),
        ("ale:Pong", {"batch_size": 1}, "batch_size=1 < num_envs=2.*use batch_size=num_envs"),
        ("ale:Pong", {"frameskip": 4}, "ale:Pong has no options \\['frameskip'\\]; allowed: "),
        ("ale:Pong", {"atari": {"frame_skip": 4}}, "atari must be an AtariOptions or None"),
    ],
)
def test_bad_names_and_options_are_one_line_errors(name, kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        make_host(name, num_envs=2, **kwargs)
    assert "\n" not in str(info.value)


def test_missing_extra_names_it(monkeypatch):
    monkeypatch.setattr(registry, "_envpool_names", tuple)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ale_py" else find_spec(name, *a),
    )
    # In this checkout the command is uv's (test_extras.py: pip's when installed).
    with pytest.raises(ImportError, match="needs the atari extra, which is not installed: uv "
                       "sync --inexact --all-packages --extra atari"):  # fmt: skip
        make_host("ale:Pong", num_envs=2)
    assert not any(n.startswith("ale:") for n in list_envs("host"))
