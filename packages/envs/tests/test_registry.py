import pytest

from podracer.envs import Catch
from podracer.envs import EnvSpec
from podracer.envs import list_envs
from podracer.envs import make
from podracer.envs import make_host


def test_make_catch_and_gymnax():
    assert make("catch") == Catch()
    assert make("catch", rows=6).spec.observation_shape == (6, 5)
    pytest.importorskip("gymnax")
    env = make("gymnax:CartPole-v1", max_steps_in_episode=50)
    assert env.spec == EnvSpec("gymnax:CartPole-v1", (4,), "float32", 2, 50)


def test_unknown_names_suggest_close_matches():
    with pytest.raises(ValueError, match=r"unknown environment 'cath'; did you mean \['catch'"):
        make("cath")
    pytest.importorskip("gymnax")
    with pytest.raises(ValueError, match=r"did you mean \['gymnax:CartPole-v1'"):
        make("gymnax:Cartpole-v1")
    with pytest.raises(ValueError, match=r"did you mean \['gymnax:CartPole-v1'"):
        make("CartPole-v1")
    assert "catch" in list_envs("jax") and "gymnax:Breakout-MinAtar" in list_envs("jax")


def test_make_host():
    env = make_host("catch", num_envs=2, batch_size=1)
    assert env.spec == Catch().spec and env.num_envs == 2 and env.batch_size == 1
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1, got 0"):
        make_host("catch", num_envs=0)
    pytest.importorskip("envpool")
    env = make_host("envpool:CartPole-v1", num_envs=2, max_episode_steps=10)
    assert env.spec == EnvSpec("envpool:CartPole-v1", (4,), "float32", 2, 10)
    env.close()
    with pytest.raises(ValueError, match=r"did you mean \['envpool:Pong-v5'"):
        make_host("envpool:Pongg-v5", num_envs=2)
    with pytest.raises(ValueError, match="batch_size must be an integer in 1..num_envs=2, got 3"):
        make_host("envpool:CartPole-v1", num_envs=2, batch_size=3)
    assert "envpool:Pong-v5" in list_envs("host")
