import math
import types

import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.envs import TimeStep
from podracer.envs import render
from podracer.envs.rendering import _CATCH_BALL
from podracer.envs.rendering import _CATCH_PADDLE
from podracer.envs.rendering import _PALETTE

POLE = (202, 152, 101)
LINK = (0, 204, 204)
ROD = (204, 77, 77)


def _state(**fields):
    return types.SimpleNamespace(**{k: np.asarray(v) for k, v in fields.items()})


def _pixels(frame, color):
    """(rows, cols) of the pixels of `color`."""
    return np.nonzero((frame == np.asarray(color, np.uint8)).all(-1))


def _check_frame(frame):
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[-1] == 3
    h, w = frame.shape[:2]
    assert h % 2 == 0 and w % 2 == 0 and min(h, w) >= 128


def _catch_state(ball_x, ball_y, paddle_x):
    return _state(ball_x=ball_x, ball_y=ball_y, paddle_x=paddle_x)


def _catch_obs(ball_x, ball_y, paddle_x, rows=10, columns=5):
    obs = np.zeros((rows, columns), np.float32)
    obs[ball_y, ball_x] = obs[rows - 1, paddle_x] = 1.0
    return obs


def test_catch_ball_and_paddle_are_where_the_state_says():
    frame = render("catch", _catch_state(3, 4, 1))
    _check_frame(frame)
    assert frame.shape == (320, 160, 3)  # 10 x 5 cells of 32 px
    cell = 32
    np.testing.assert_array_equal(frame[4 * cell + cell // 2, 3 * cell + cell // 2], _CATCH_BALL)
    rows, cols = _pixels(frame, _CATCH_BALL)
    assert rows.min() >= 4 * cell and rows.max() < 5 * cell  # only in the ball's cell
    assert cols.min() >= 3 * cell and cols.max() < 4 * cell
    rows, cols = _pixels(frame, _CATCH_PADDLE)
    assert rows.min() >= 9 * cell and cols.min() >= cell and cols.max() < 2 * cell
    # The observation of the same board draws the same frame.
    np.testing.assert_array_equal(render("catch", _catch_obs(3, 4, 1)), frame)
    assert not np.array_equal(render("catch", _catch_state(0, 4, 1)), frame)


def test_batched_sources_render_env_i_at_step_t():
    ball_x = np.array([[0, 1, 2], [3, 4, 0]])  # [T=2, B=3]
    states = _catch_state(ball_x, np.full((2, 3), 2), np.ones((2, 3), np.int32))
    spec = EnvSpec("catch", (10, 5), "float32", 3)
    for t in range(2):
        for i in range(3):
            expected = render(spec, _catch_state(ball_x[t, i], 2, 1))
            np.testing.assert_array_equal(render(spec, states, index=(t, i)), expected)
    obs = np.stack([_catch_obs(x, 2, 1) for x in ball_x[0]])  # [B, 10, 5]
    ts = TimeStep(obs, *(np.zeros(3),) * 4, obs, np.zeros(3), np.zeros(3, np.int32))
    np.testing.assert_array_equal(render(spec, ts, index=1), render(spec, states, index=(0, 1)))


def test_cartpole_pole_follows_the_angle_and_cart_the_position():
    spec_name = "gymnax:CartPole-v1"
    right = render(spec_name, _state(x=0.0, theta=0.3))
    left = render(spec_name, _state(x=0.0, theta=-0.3))
    _check_frame(right)
    axle_x = right.shape[1] / 2
    assert _pixels(right, POLE)[1].mean() > axle_x + 5 > axle_x - 5 > _pixels(left, POLE)[1].mean()
    moved = render(spec_name, _state(x=1.2, theta=0.0))
    upright = render(spec_name, _state(x=0.0, theta=0.0))
    shift = _pixels(moved, POLE)[1].mean() - _pixels(upright, POLE)[1].mean()
    assert shift == pytest.approx(1.2 * 300 / 4.8, abs=1)  # 62.5 px per unit of x
    # Observation [x, x_dot, theta, theta_dot], e.g. from envpool, draws the same.
    obs = np.array([0.0, 0.5, 0.3, -1.0], np.float32)
    np.testing.assert_array_equal(render("envpool:CartPole-v1", obs), right)


def test_acrobot_links_hang_down_at_zero_and_point_up_at_pi():
    down = render("gymnax:Acrobot-v1", _state(joint_angle1=0.0, joint_angle2=0.0))
    up = render("gymnax:Acrobot-v1", _state(joint_angle1=math.pi, joint_angle2=0.0))
    _check_frame(down)
    pivot = down.shape[0] / 2
    assert _pixels(down, LINK)[0].min() > pivot - 10 and _pixels(down, LINK)[0].max() > pivot + 60
    assert _pixels(up, LINK)[0].max() < pivot + 10 and _pixels(up, LINK)[0].min() < pivot - 60
    obs = np.array([1.0, 0.0, 1.0, 0.0, 0.3, 0.1], np.float32)  # cos/sin of both joints
    np.testing.assert_array_equal(render("gymnax:Acrobot-v1", obs), down)


@pytest.mark.parametrize("name", ["gymnax:MountainCar-v0", "envpool:MountainCarContinuous-v0"])
def test_mountain_car_is_drawn_at_its_position(name):
    frames = {p: render(name, np.array([p, 0.0], np.float32)) for p in (-1.0, -0.5, 0.3)}
    _check_frame(frames[-0.5])
    black = {p: (f == 0).all(-1) for p, f in frames.items()}
    hill = black[-1.0] & black[-0.5] & black[0.3]  # what all three share: the hill
    for p, mask in black.items():
        car_cols = np.nonzero(mask & ~hill)[1]  # (and a few hill pixels other wheels cover)
        # The body rides 8 px above the hill along its normal: a few px off its position.
        assert np.median(car_cols) == pytest.approx((p + 1.2) * 300 / 1.8, abs=8)


def test_pendulum_rod_points_along_theta():
    up = render("gymnax:Pendulum-v1", _state(theta=0.0))
    left = render("gymnax:Pendulum-v1", _state(theta=math.pi / 2))
    _check_frame(up)
    c = up.shape[0] / 2
    rows, cols = _pixels(up, ROD)
    assert rows.min() < c - 40 and rows.max() < c + 10 and abs(cols.mean() - c) < 2
    rows, cols = _pixels(left, ROD)
    assert cols.min() < c - 40 and cols.max() < c + 10 and abs(rows.mean() - c) < 2
    obs = np.array([0.0, 1.0, 0.0], np.float32)  # cos, sin of theta = pi / 2
    np.testing.assert_array_equal(render("gymnax:Pendulum-v1", obs), left)


def test_minatar_channels_have_one_colour_each_and_the_last_active_wins():
    obs = np.zeros((10, 10, 4), np.float32)
    obs[3, 7, 2] = 1.0
    obs[5, 5, [0, 3]] = 1.0
    frame = render("gymnax:Breakout-MinAtar", obs)
    _check_frame(frame)
    assert frame.shape == (160, 160, 3)
    np.testing.assert_array_equal(frame[3 * 16 + 8, 7 * 16 + 8], _PALETTE[2])
    np.testing.assert_array_equal(frame[5 * 16 + 8, 5 * 16 + 8], _PALETTE[3])
    assert (frame == 0).all(-1).sum() == 160 * 160 - 2 * 16 * 16  # the rest is black
    with pytest.raises(ValueError, match="drawn from observations"):
        render("gymnax:Breakout-MinAtar", _state(ball_x=1))


def test_atari_draws_the_newest_frame_of_the_stack():
    obs = np.full((4, 84, 84), 50, np.uint8)
    obs[-1] = 10
    obs[-1, 20:30, 40:50] = 200
    frame = render("envpool:Pong-v5", obs)
    _check_frame(frame)
    assert frame.shape == (168, 168, 3)
    np.testing.assert_array_equal(frame[2 * 25, 2 * 45], [200, 200, 200])
    np.testing.assert_array_equal(frame[0, 0], [10, 10, 10])
    color = np.zeros((12, 84, 84), np.uint8)  # gray_scale=False: 4 RGB frames
    color[-3:] = np.array([255, 128, 7], np.uint8)[:, None, None]
    np.testing.assert_array_equal(render("envpool:Pong-v5", color)[5, 5], [255, 128, 7])


def test_generic_pictures_of_image_like_observations():
    gray = np.linspace(0, 1, 30 * 45, dtype=np.float32).reshape(30, 45)
    frame = render("some:GridWorld", gray)
    _check_frame(frame)
    assert frame.shape == (150, 226, 3)  # 5x, then padded to even width
    assert frame[0, 0, 0] == 0 and frame[-1, -2, 0] == 255
    rgb = np.zeros((64, 64, 3), np.uint8)
    rgb[:, :32] = (1, 2, 3)
    frame = render("some:Image", rgb)
    assert frame.shape == (128, 128, 3) and tuple(frame[0, 0]) == (1, 2, 3)
    planes = np.zeros((10, 10, 6), bool)  # feature planes: coloured like MinAtar
    planes[0, 0, 1] = True
    np.testing.assert_array_equal(render("some:Planes", planes)[8, 8], _PALETTE[1])
    with pytest.raises(
        ValueError, match=r"no renderer for some:Vector observations of shape \(27,\)"
    ):
        render("some:Vector", np.zeros(27, np.float32))
    for name in ("brax:ant", "envpool:HalfCheetah-v4"):
        with pytest.raises(
            ValueError, match=f"no renderer for {name}: its observations are vectors"
        ):
            render(name, np.zeros(17, np.float32))


def test_real_env_states_and_observations_draw_the_same_frame():
    jax = pytest.importorskip("jax")
    pytest.importorskip("gymnax")
    from podracer.envs import make

    for name in ("gymnax:CartPole-v1", "gymnax:Acrobot-v1", "gymnax:MountainCar-v0",
                 "gymnax:Pendulum-v1", "catch"):  # fmt: skip
        env = make(name)
        state, ts = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 3))
        for i in range(3):
            by_state = render(env.spec, state, index=i)
            _check_frame(by_state)
            np.testing.assert_array_equal(by_state, render(env, ts, index=i), name)
