"""RGB frames of one environment for videos: `render(spec_or_name, source, index)`.

    frame = render(env.spec, timesteps, index=(t, i))  # [H, W, 3] uint8, env i at step t

`source` is what a rollout already holds, batched or not: a `TimeStep` (its observation
is drawn), an observation array, or an env state (`CatchState`, a `GymnaxState` or the
gymnax state inside one). `index` picks one env out of the leading (batch, time) dims.

What is drawn, from what:
* Catch (`catch`, gymnax `Catch-bsuite`): the board, ball and paddle, from the state or
  the observation.
* Classic control, gymnax or envpool (CartPole, Acrobot, MountainCar(Continuous),
  Pendulum): the cart and pole, the two links, the car on the hill, the pendulum, drawn
  like gymnasium's renderers from the state or the observation (each observation holds
  the positions: cart x and pole angle, the links' cos/sin, the car's position, the
  pendulum's cos/sin).
* MinAtar (gymnax `*-MinAtar`): one colour per observation channel (the last active
  channel wins), each cell a square.
* Atari (envpool `*-v5`, `ale:<Game>`): the newest frame of the stacked observation (a grey frame to
  RGB; a stack of 3k channels is read as k RGB frames, envpool's `gray_scale=False`).
* Anything else with an image-like observation (`[H, W]`, `[H, W, C]`, `[C, H, W]`): a
  generic picture of it. Vector observations (MuJoCo, brax) have no picture: ValueError.

Why drawn here, in NumPy: gymnax's renderers (`gymnax.visualize`) are matplotlib
animations (slow per frame; MinAtar's also needs seaborn), and gymnasium's classic-control
renderers need pygame; MuJoCo's renderer (envpool `render_mode`, brax) needs an OpenGL
context, which headless machines lack. Simple rasterisation (filled rectangles,
circles and thick lines) takes well under a millisecond per frame and no dependency.
Frames are scaled up (nearest neighbour) to at least 128 px on the shortest side and have
even height and width, as H.264 needs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from podracer.envs.families import env_family
from podracer.envs.families import task_base
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep

MIN_SIDE = 128  # frames are at least this many pixels on their shortest side

Color = tuple[int, int, int]
_WHITE: Color = (255, 255, 255)
_BLACK: Color = (0, 0, 0)
# Distinct colours for MinAtar channels (Tableau 10), in channel order.
_PALETTE = np.array(
    [
        (78, 121, 167), (242, 142, 43), (225, 87, 89), (118, 183, 178), (89, 161, 79),
        (237, 201, 72), (176, 122, 161), (255, 157, 167), (156, 117, 95), (186, 176, 172),
    ],
    np.uint8,
)  # fmt: skip


def render(
    env: EnvSpec | str | Any, source: Any, index: int | tuple[int, ...] | None = None
) -> np.ndarray:
    """One env's RGB frame, uint8 `[H, W, 3]` with H, W even and >= 128.

    Args:
      env: the env's `EnvSpec`, its name ("catch", "gymnax:CartPole-v1",
        "envpool:Pong-v5", ...), or the env itself (anything with a `spec`).
      source: a `TimeStep`, an observation, or an env state (see the module doc),
        unbatched or with leading batch/time dims.
      index: the env to draw out of a batched `source`: an int for the first axis, a
        tuple for several (e.g. `(t, i)` for a `[T, B]` trajectory); None if unbatched.

    Raises:
      ValueError: no renderer for this env and source (e.g. a MuJoCo vector observation).
    """
    spec = getattr(env, "spec", env)
    name = spec.name if isinstance(spec, EnvSpec) else str(spec)
    observation, state = _unpack(source)
    task = name.rpartition(":")[2].removeprefix("phys2d/")
    base = task_base(task)

    def field(x: Any) -> np.ndarray:
        x = np.asarray(x)
        return x[index] if index is not None else x

    family = env_family(name)
    if family in ("brax", "mujoco"):
        raise ValueError(
            f"render: no renderer for {name}: its observations are vectors and MuJoCo's "
            "renderer needs an OpenGL context"
        )
    obs = None if observation is None else field(observation)
    if name == "catch" or task == "Catch-bsuite":
        return _upscale(_catch(obs, state, field, spec))
    if base in _CLASSIC:
        return _CLASSIC[base](obs, state, field, task)
    if state is not None and obs is None:
        raise ValueError(
            f"render: {name} is drawn from observations; pass a TimeStep or an observation, "
            f"not its state ({type(state).__name__})"
        )
    if task.endswith("-MinAtar"):
        return _upscale(_channels(obs))
    if family == "atari":
        return _upscale(_newest_frame(obs))
    return _upscale(_picture(name, obs))


def _unpack(source: Any) -> tuple[Any, Any]:
    """`(observation, state)`, one of them None."""
    if isinstance(source, TimeStep):
        return source.observation, None
    if hasattr(source, "shape") and hasattr(source, "dtype"):
        return source, None
    inner = getattr(source, "env_state", None)  # GymnaxState / BraxState wrap the env's
    return None, source if inner is None else inner


# -- rasterisation: x to the right, y down, in pixels; colours RGB ------------------------


def _canvas(height: int, width: int, color: Color = _WHITE) -> np.ndarray:
    img = np.empty((height, width, 3), np.uint8)
    img[...] = color
    return img


def _grid(img: np.ndarray, x0: float, y0: float, x1: float, y1: float):
    """Pixel-centre coordinates of the clipped box [x0, x1] x [y0, y1], and its slices."""
    h, w = img.shape[:2]
    c0, c1 = max(int(math.floor(x0)), 0), min(int(math.ceil(x1)) + 1, w)
    r0, r1 = max(int(math.floor(y0)), 0), min(int(math.ceil(y1)) + 1, h)
    ys, xs = np.mgrid[r0:r1, c0:c1]
    return xs + 0.5, ys + 0.5, (slice(r0, r1), slice(c0, c1))


def _fill_rect(img, x0: float, y0: float, x1: float, y1: float, color: Color) -> None:
    xs, ys, box = _grid(img, x0, y0, x1, y1)
    mask = (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)
    img[box][mask] = color


def _fill_circle(img, cx: float, cy: float, r: float, color: Color) -> None:
    xs, ys, box = _grid(img, cx - r, cy - r, cx + r, cy + r)
    img[box][(xs - cx) ** 2 + (ys - cy) ** 2 <= r * r] = color


def _line(img, p0: tuple[float, float], p1: tuple[float, float], width: float, color: Color):
    """A thick segment with round ends (every pixel within width/2 of the segment)."""
    (x0, y0), (x1, y1), r = p0, p1, width / 2
    xs, ys, box = _grid(img, min(x0, x1) - r, min(y0, y1) - r, max(x0, x1) + r, max(y0, y1) + r)
    dx, dy = x1 - x0, y1 - y0
    t = np.clip(((xs - x0) * dx + (ys - y0) * dy) / max(dx * dx + dy * dy, 1e-12), 0.0, 1.0)
    img[box][(xs - x0 - t * dx) ** 2 + (ys - y0 - t * dy) ** 2 <= r * r] = color


def _upscale(img: np.ndarray) -> np.ndarray:
    """Nearest-neighbour scaled to >= MIN_SIDE on the short side, padded to even sides."""
    k = max(1, math.ceil(MIN_SIDE / min(img.shape[:2])))
    img = img.repeat(k, axis=0).repeat(k, axis=1) if k > 1 else img
    pad = ((0, img.shape[0] % 2), (0, img.shape[1] % 2), (0, 0))
    return np.pad(img, pad, mode="edge") if any(p[1] for p in pad) else img


# -- Catch ---------------------------------------------------------------------------------

_CATCH_BG: Color = (24, 24, 32)
_CATCH_BALL: Color = (236, 112, 99)
_CATCH_PADDLE: Color = (240, 240, 240)
_CATCH_CELL = 16  # pixels per board cell before upscaling


def _catch(obs, state, field, spec) -> np.ndarray:
    if obs is not None:
        # The ball is the lit cell above the bottom row; the paddle is lit in the bottom
        # row. Once the ball is in the bottom row too (an episode's last observation) the
        # two lit cells there cannot be told apart: both are drawn as paddle and ball.
        board = np.asarray(obs) > 0.5
        rows, columns = board.shape
        bottom = np.flatnonzero(board[-1]).tolist()
        above = np.argwhere(board[:-1])
        balls = [tuple(above[0])] if above.size else [(rows - 1, x) for x in bottom]
        paddles = bottom
    else:
        rows, columns = spec.observation_shape if isinstance(spec, EnvSpec) else (10, 5)
        balls = [(int(field(state.ball_y)), int(field(state.ball_x)))]
        paddles = [int(field(state.paddle_x))]
    c = _CATCH_CELL
    img = _canvas(rows * c, columns * c, _CATCH_BG)
    for x in paddles:
        _fill_rect(img, x * c + 1, (rows - 1) * c + c / 3, (x + 1) * c - 2, rows * c - 2,
                   _CATCH_PADDLE)  # fmt: skip
    for y, x in balls:
        _fill_circle(img, x * c + c / 2, y * c + c / 2, c * 0.4, _CATCH_BALL)
    return img


# -- classic control (geometry as gymnasium draws it) -------------------------------------


def _scalar(state, names: tuple[str, ...], field) -> float:
    for n in names:
        if hasattr(state, n):
            return float(field(getattr(state, n)))
    raise ValueError(f"render: the state {type(state).__name__} has none of the fields {names}")


def _cartpole(obs, state, field, task) -> np.ndarray:
    if obs is not None:
        x, theta = float(obs[0]), float(obs[2])
    else:
        x, theta = _scalar(state, ("x",), field), _scalar(state, ("theta",), field)
    h, w = 200, 300
    scale = w / 4.8  # the track spans x in [-2.4, 2.4]
    img = _canvas(h, w)
    track_y = 0.7 * h
    _fill_rect(img, 0, track_y, w - 1, track_y + 0.5, _BLACK)
    cart_x, cart_w, cart_h = x * scale + w / 2, 25.0, 15.0
    _fill_rect(img, cart_x - cart_w / 2, track_y - cart_h / 2, cart_x + cart_w / 2,
               track_y + cart_h / 2, _BLACK)  # fmt: skip
    axle = (cart_x, track_y - cart_h / 4)
    length = scale * 1.0  # gymnasium draws the pole 2 * 0.5 long
    tip = (axle[0] + length * math.sin(theta), axle[1] - length * math.cos(theta))
    _line(img, axle, tip, 5.0, (202, 152, 101))
    _fill_circle(img, axle[0], axle[1], 2.5, (129, 132, 203))
    return img


def _acrobot(obs, state, field, task) -> np.ndarray:
    if obs is not None:
        t1, t2 = math.atan2(float(obs[1]), float(obs[0])), math.atan2(float(obs[3]), float(obs[2]))
    else:
        t1 = _scalar(state, ("joint_angle1",), field)
        t2 = _scalar(state, ("joint_angle2",), field)
    size = 200
    scale = size / 4.4  # links of length 1 each, 2.2 of room around the pivot
    img = _canvas(size, size)
    c = size / 2
    _fill_rect(img, 0, c - scale, size - 1, c - scale + 0.5, _BLACK)  # the goal height
    p0 = (c, c)
    p1 = (c + scale * math.sin(t1), c + scale * math.cos(t1))  # t1 == 0 hangs down
    p2 = (p1[0] + scale * math.sin(t1 + t2), p1[1] + scale * math.cos(t1 + t2))
    for a, b in ((p0, p1), (p1, p2)):
        _line(img, a, b, 0.2 * scale, (0, 204, 204))
        _fill_circle(img, a[0], a[1], 0.1 * scale, (204, 204, 0))
    return img


def _mountain_car(obs, state, field, task) -> np.ndarray:
    position = float(obs[0]) if obs is not None else _scalar(state, ("position",), field)
    goal = 0.45 if task.startswith("MountainCarContinuous") else 0.5
    h, w = 200, 300
    lo, hi = -1.2, 0.6
    scale = w / (hi - lo)

    def screen(p: float) -> tuple[float, float]:
        return (p - lo) * scale, h - 10 - (math.sin(3 * p) * 0.45 + 0.55) * scale * 0.9

    img = _canvas(h, w)
    p = lo + (np.arange(w) + 0.5) / scale  # the position under each pixel column
    hill = h - 10 - (np.sin(3 * p) * 0.45 + 0.55) * scale * 0.9  # [w]
    rows = np.arange(h)[:, None] + 0.5  # [h, 1]
    img[np.abs(rows - hill[None, :]) <= 1.5] = _BLACK  # the hill's outline
    fx, fy = screen(goal)
    _fill_rect(img, fx - 0.5, fy - 25, fx + 0.5, fy, _BLACK)
    _fill_rect(img, fx, fy - 25, fx + 12, fy - 18, (204, 204, 0))
    x, y = screen(position)
    slope = math.atan(math.cos(3 * position) * 1.35 * 0.9)  # d(screen y)/d(screen x)
    ux, uy = math.cos(slope), -math.sin(slope)  # along the hill, in screen coordinates
    nx, ny = uy, -ux  # the hill's outward normal (up)
    if ny > 0:
        nx, ny = -nx, -ny
    cx, cy = x + nx * 8, y + ny * 8  # the body rides above the wheels
    _line(img, (cx - ux * 10, cy - uy * 10), (cx + ux * 10, cy + uy * 10), 10.0, _BLACK)
    for s in (-6, 6):
        _fill_circle(img, x + ux * s + nx * 3, y + uy * s + ny * 3, 3.0, (128, 128, 128))
    return img


def _pendulum(obs, state, field, task) -> np.ndarray:
    if obs is not None:
        theta = math.atan2(float(obs[1]), float(obs[0]))
    else:
        theta = _scalar(state, ("theta",), field)
    size = 200
    scale = size / 4.4
    img = _canvas(size, size)
    c = size / 2
    tip = (c - scale * math.sin(theta), c - scale * math.cos(theta))  # theta == 0 is upright
    _line(img, (c, c), tip, 0.2 * scale, (204, 77, 77))
    _fill_circle(img, c, c, 0.05 * scale, _BLACK)
    return img


_CLASSIC = {
    "CartPole": _cartpole,
    "Acrobot": _acrobot,
    "MountainCar": _mountain_car,
    "MountainCarContinuous": _mountain_car,
    "Pendulum": _pendulum,
}


# -- observations as pictures ---------------------------------------------------------------


def _channels(obs) -> np.ndarray:
    """`[H, W, C]` channels (MinAtar), the last active channel's colour per cell."""
    obs = np.asarray(obs)
    if obs.ndim != 3:
        raise ValueError(f"render: channel observations must be [H, W, C], got {obs.shape}")
    active = obs > 0.5
    top = np.where(active.any(-1), obs.shape[-1] - 1 - np.argmax(active[..., ::-1], -1), -1)
    img = np.zeros((*obs.shape[:2], 3), np.uint8)
    lit = top >= 0
    img[lit] = _PALETTE[top[lit] % len(_PALETTE)]
    cell = 16
    return img.repeat(cell, 0).repeat(cell, 1)


def _to_uint8(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.uint8:
        return x
    if x.dtype == np.bool_:
        return x.astype(np.uint8) * 255
    x = x.astype(np.float32)
    lo, hi = float(x.min(initial=0.0)), float(x.max(initial=0.0))
    if lo >= 0.0 and hi <= 1.0:  # a [0, 1] image
        return np.round(x * 255).astype(np.uint8)
    return np.round((x - lo) / max(hi - lo, 1e-12) * 255).astype(np.uint8)


def _gray(frame: np.ndarray) -> np.ndarray:
    return np.repeat(_to_uint8(frame)[..., None], 3, axis=-1)


def _newest_frame(obs) -> np.ndarray:
    """The newest frame of a `[stack, H, W]` grey (or `[3 * stack, H, W]` RGB) stack."""
    obs = np.asarray(obs)
    if obs.ndim != 3:
        raise ValueError(f"render: stacked frames must be [C, H, W], got {obs.shape}")
    if obs.shape[0] % 3 == 0:
        return np.ascontiguousarray(_to_uint8(obs[-3:]).transpose(1, 2, 0))
    return _gray(obs[-1])


def _picture(name: str, obs) -> np.ndarray:
    """A generic picture of an image-like observation."""
    if obs is None:
        raise ValueError(f"render: no observation to draw for {name}")
    obs = np.asarray(obs)
    if obs.ndim == 2:
        return _gray(obs)
    if obs.ndim == 3 and obs.shape[-1] in (1, 3, 4):  # [H, W, C] image
        img = _to_uint8(obs[..., :3])
        return np.repeat(img, 3, axis=-1) if img.shape[-1] == 1 else img
    if obs.ndim == 3 and obs.shape[0] <= 4:  # [C, H, W]: a frame stack, newest last
        return _newest_frame(obs)
    if obs.ndim == 3:  # [H, W, C] feature planes
        return _channels(obs)
    raise ValueError(
        f"render: no renderer for {name} observations of shape {obs.shape} "
        "(vector observations have no picture)"
    )
