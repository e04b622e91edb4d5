import pytest

from podracer.envs import Catch
from podracer.envs import EnvSpec
from podracer.envs import list_envs
from podracer.envs import make
from podracer.envs import make_host
from podracer.envs import registry


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


def test_make_refuses_host_envs_in_one_line_with_the_jax_twin():
    for name, twin in [
        ("envpool:CartPole-v1", "gymnax:CartPole-v1"),
        ("envpool:HalfCheetah-v4", "brax:halfcheetah"),
        ("envpool:Pong-v5", None),
    ]:
        with pytest.raises(ValueError) as info:
            make(name)
        message = str(info.value)
        assert "\n" not in message and "did you mean" not in message
        assert message.startswith(f"'{name}' is a host environment")
        assert "Sebulba" in message and f"make_host('{name}', num_envs=...)" in message
        if twin:
            assert message.endswith(f"the same task as a JaxEnv: make('{twin}')")
        else:
            assert "same task" not in message


def test_missing_extras_name_the_extra_in_one_line(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    missing = {"gymnax", "envpool", "brax", "gymnasium", "craftax", "jumanji"}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in missing else find_spec(name, *a),
    )
    for call, extra in [
        (lambda: make_host("gymnax:CartPole-v1", num_envs=2), "gymnax"),
        (lambda: make("gymnax:CartPole-v1"), "gymnax"),
        (lambda: make_host("envpool:Pong-v5", num_envs=2), "envpool"),
        (lambda: make("brax:ant"), "brax"),
        (lambda: make_host("gymnasium:CartPole-v1", num_envs=2), "gymnasium"),
        (lambda: make("craftax:Craftax-Symbolic-v1"), "craftax"),
        (lambda: make_host("craftax:Craftax-Symbolic-v1", num_envs=2), "craftax"),
        (lambda: make("jumanji:Snake-v1"), "jumanji"),
    ]:
        with pytest.raises(ImportError) as info:
            call()
        # In this checkout the command is uv's (test_extras.py: pip's when installed).
        assert str(info.value).endswith(
            f"needs the {extra} extra, which is not installed: "
            f"uv sync --inexact --all-packages --extra {extra}"
        )
    # Built-in names: catch alone; installed packages' own envs (entry points) follow.
    assert [n for n in list_envs("jax") if n not in registry.registered_envs()] == ["catch"]


def test_list_envs_lists_what_make_and_make_host_accept():
    jax_names = list_envs("jax")
    assert not any(n.startswith("envpool:") for n in jax_names)
    pytest.importorskip("gymnax")
    assert {"gymnax:Pendulum-v1", "gymnax:MountainCarContinuous-v0"} <= set(jax_names)
    for name in ("gymnax:Pendulum-v1", "gymnax:Reacher-misc"):
        assert make(name).spec.is_continuous
    pytest.importorskip("envpool")
    host = set(list_envs("host"))
    assert set(jax_names) <= host
    assert {"envpool:HalfCheetah-v4", "envpool:Hopper-v4", "envpool:Pong-v5"} <= host
    # Dict observations (dm_control, MiniGrid) are refused, so not listed.
    for name in ("envpool:CheetahRun-v1", "envpool:MiniGrid-Empty-5x5-v0"):
        assert name not in host
        with pytest.raises(ValueError, match=f"^{name} has Dict observations; podracer.envs "):
            make_host(name, num_envs=1)
    assert list_envs() == list_envs("host")


def test_brax_names_are_listed_and_made():
    pytest.importorskip("brax")
    assert "brax:ant" in list_envs("jax") and "brax:swimmer" not in list_envs("jax")
    assert make("brax:fast", max_episode_steps=7).spec.max_episode_steps == 7
    assert make_host("brax:fast", num_envs=2).spec.is_continuous
