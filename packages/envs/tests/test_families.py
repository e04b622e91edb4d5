import pytest

from podracer.envs import FAMILIES
from podracer.envs import env_family


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("catch", "catch"),
        ("gymnax:Breakout-MinAtar", "minatar"),
        ("gymnax:SpaceInvaders-MinAtar", "minatar"),
        ("gymnax:CartPole-v1", "classic"),
        ("gymnax:Acrobot-v1", "classic"),
        ("gymnax:MountainCar-v0", "classic"),
        ("gymnax:MountainCarContinuous-v0", "control"),
        ("gymnax:Pendulum-v1", "control"),
        ("gymnax:Reacher-misc", "control"),  # gymnax's continuous misc tasks
        ("gymnax:PointRobot-misc", "control"),
        ("gymnax:Catch-bsuite", "classic"),  # gymnax's other small vector tasks
        ("gymnax:DeepSea-bsuite", "classic"),
        ("gymnax:FourRooms-misc", "classic"),
        ("envpool:CartPole-v1", "classic"),
        ("envpool:phys2d/CartPole-v1", "classic"),
        ("envpool:Acrobot-v1", "classic"),
        ("envpool:MountainCarContinuous-v0", "control"),
        ("envpool:Pendulum-v1", "control"),
        ("envpool:Pong-v5", "atari"),
        ("envpool:Breakout-v5", "atari"),
        ("envpool:SpaceInvaders-v5", "atari"),
        ("ale:Pong", "atari"),  # ale-py's native vector env, the same preprocessing
        ("ale:MsPacman", "atari"),
        ("envpool:HalfCheetah-v4", "mujoco"),
        ("envpool:Hopper-v4", "mujoco"),
        ("envpool:Ant-v5", "mujoco"),  # a -v5 that is not an Atari game
        ("envpool:Walker2d-v3", "mujoco"),
        ("gymnasium:CartPole-v1", "classic"),
        ("gymnasium:Acrobot-v1", "classic"),
        ("gymnasium:Pendulum-v1", "control"),
        ("gymnasium:MountainCarContinuous-v0", "control"),
        ("gymnasium:HalfCheetah-v5", "mujoco"),
        ("gymnasium:my_pkg.envs:Hopper-v5", "mujoco"),  # module:id
        ("gymnasium:phys2d/CartPole-v1", "classic"),  # as envpool's phys2d tasks
        ("gymnasium:ale_py:ALE/Pong-v5", "other"),  # raw frames: no atari preset
        ("gymnasium:LunarLander-v3", "other"),
        ("craftax:Craftax-Symbolic-v1", "other"),
        ("jumanji:Snake-v1", "other"),
        ("brax:ant", "brax"),
        ("brax:inverted_pendulum", "brax"),
        ("envpool:LunarLander-v3", "other"),
        ("envpool:MiniGrid-Empty-5x5-v0", "other"),
        ("envpool:MetaWorld/Reach-v3", "other"),
        ("CartPole-v1", "other"),
        ("nope:Pong-v5", "other"),
    ],
)
def test_env_family(name, family):
    assert env_family(name) == family and family in FAMILIES


def test_env_family_needs_a_name():
    with pytest.raises(TypeError, match="env_family needs an environment name"):
        env_family(None)
