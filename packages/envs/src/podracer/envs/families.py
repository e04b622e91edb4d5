"""The task family of an environment name, for per-family presets (pure strings, no JAX).

    env_family("gymnax:Breakout-MinAtar") == "minatar"
    env_family("envpool:Pong-v5") == "atari"
    env_family("ale:Pong") == "atari"

Families: "catch" (this package's Catch); "minatar" (gymnax `*-MinAtar`); "classic"
(discrete classic control: CartPole, Acrobot, MountainCar, from gymnax, envpool or
gymnasium, and gymnax's other small bsuite/misc tasks); "control" (continuous classic
control: Pendulum, MountainCarContinuous, from gymnax, envpool or gymnasium, and gymnax's
continuous misc tasks PointRobot, Reacher, Swimmer); "atari" (envpool's ALE games,
`*-v5`, and ale-py's native vector env, `ale:<Game>`: the same preprocessed stacks);
"mujoco" (the gym MuJoCo tasks: Ant, HalfCheetah, Hopper, ..., from envpool or
gymnasium); "brax"; "other" for any name outside these (no family preset applies), among
them gymnasium's ALE ids (raw frames, not envpool's preprocessed stacks the atari presets
expect), Craftax and Jumanji.
"""

from __future__ import annotations

FAMILIES = ("catch", "minatar", "classic", "control", "atari", "mujoco", "brax", "other")

_CLASSIC = frozenset(("CartPole", "Acrobot", "MountainCar"))
# Continuous-action classic control, apart so that its presets can differ.
_CONTROL = frozenset(("MountainCarContinuous", "Pendulum"))
_GYMNAX_CONTROL = frozenset(("PointRobot-misc", "Reacher-misc", "Swimmer-misc"))
# envpool's gym MuJoCo tasks (any version: v2..v5). Their v5 names would otherwise read
# as Atari games, which are the only other `-v5` tasks in envpool.
_MUJOCO = frozenset((
    "Ant", "HalfCheetah", "Hopper", "Humanoid", "HumanoidStandup", "InvertedDoublePendulum",
    "InvertedPendulum", "Pusher", "Reacher", "Swimmer", "Walker2d",
))  # fmt: skip


def task_base(task: str) -> str:
    """The task without its version: "HalfCheetah-v4" -> "HalfCheetah"."""
    base, sep, version = task.rpartition("-v")
    return base if sep and version.isdigit() else task


def env_family(name: str) -> str:
    """The family of the environment `name` (`make`/`make_host` spelling), one of `FAMILIES`."""
    if not isinstance(name, str):
        raise TypeError(f"env_family needs an environment name (str), got {name!r}")
    source, _, task = name.rpartition(":")
    if name == "catch":
        return "catch"
    if name.startswith("gymnasium:"):  # "gymnasium:<id>" or "gymnasium:<module>:<id>"
        base = task_base(task.removeprefix("phys2d/"))
        if base in _CLASSIC:
            return "classic"
        if base in _CONTROL:
            return "control"
        return "mujoco" if base in _MUJOCO and "/" not in task else "other"
    if source == "ale":
        return "atari"
    if source == "brax":
        return "brax"
    if source == "gymnax":
        if task.endswith("-MinAtar"):
            return "minatar"
        return "control" if task_base(task) in _CONTROL or task in _GYMNAX_CONTROL else "classic"
    if source == "envpool":
        base = task_base(task.removeprefix("phys2d/"))
        if base in _CLASSIC:
            return "classic"
        if base in _CONTROL:
            return "control"
        if base in _MUJOCO:
            return "mujoco"
        if task.endswith("-v5") and "/" not in task:
            return "atari"
    return "other"
