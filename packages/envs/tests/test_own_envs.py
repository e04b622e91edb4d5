"""Your own environments: by call, by import path, adapted from gymnax; the refusals."""

import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.envs import HostEnv
from podracer.envs import TimeStep
from podracer.envs import env_import_path
from podracer.envs import is_import_path
from podracer.envs import is_jax_env
from podracer.envs import list_envs
from podracer.envs import make
from podracer.envs import make_host
from podracer.envs import register
from podracer.envs import registry
from podracer.envs.catch import Catch


@pytest.fixture(autouse=True)
def _forget_registrations():
    yield
    registry._REGISTERED.clear()


def small_catch(rows=5, columns=4) -> Catch:
    """A module-level factory: importable by path from any process."""
    return Catch(rows=rows, columns=columns)


class Counter:
    """A host env factory: it takes num_envs. Observes its step count."""

    def __init__(self, num_envs, seed=0, limit=3):
        self.spec = EnvSpec("counter", (1,), "float32", 2, max_episode_steps=limit)
        self.num_envs = self.batch_size = num_envs
        self.limit, self.t = limit, 0

    def _timestep(self, done):
        obs = np.full((self.num_envs, 1), self.t, np.float32)
        flags = np.full(self.num_envs, done)
        zeros = np.zeros(self.num_envs, np.float32)
        return TimeStep(obs, zeros, flags & False, flags, flags, obs, zeros,
                        np.full(self.num_envs, self.t, np.int32), flags)  # fmt: skip

    def reset(self):
        self.t = 0
        return self._timestep(False)

    def step(self, actions):
        self.t += 1
        return self._timestep(self.t >= self.limit)

    def async_reset(self): ...
    def send(self, actions, env_ids): ...
    def recv(self): ...
    def close(self): ...


def test_a_registered_factory_is_made_with_keyword_arguments():
    register("small", small_catch)
    env = make("small", rows=6)
    assert isinstance(env, Catch) and env.spec.observation_shape == (6, 4)
    assert is_jax_env("small") and "small" in list_envs("jax") and "small" in list_envs("host")
    host = make_host("small", num_envs=3, columns=5)  # a JaxEnv on the host, as built-ins
    assert host.reset().observation.shape == (3, 5, 5)
    assert env_import_path("small") == f"{__name__}:small_catch"


def test_a_host_factory_is_told_from_its_num_envs_argument():
    register("counter", Counter)
    assert not is_jax_env("counter")
    env = make_host("counter", num_envs=2, seed=1, limit=2)
    assert isinstance(env, HostEnv) and env.num_envs == 2 and env.limit == 2
    with pytest.raises(ValueError, match="is a host environment"):
        make("counter")
    with pytest.raises(ValueError, match="takes no batch_size"):
        make_host("counter", num_envs=4, batch_size=2)


def test_an_import_path_is_a_name_every_process_can_rebuild():
    name = f"{__name__}:small_catch"
    assert is_import_path(name) and not is_import_path("gymnax:CartPole-v1")
    assert make(name, columns=3).spec.observation_shape == (5, 3)
    assert env_import_path(name) is None  # the name itself rebuilds it
    with pytest.raises(ImportError, match="cannot import 'no_such_module'"):
        make("no_such_module:Env")
    with pytest.raises(ValueError, match="has no 'missing'"):
        make(f"{__name__}:missing")


def test_a_factory_that_does_not_make_an_env_is_refused_by_name():
    register("broken", lambda: 42)
    with pytest.raises(ValueError, match="'broken': its factory returned a int, not a JaxEnv"):
        make("broken")
    register("kwargs", small_catch)
    with pytest.raises(ValueError, match="'kwargs'.*unexpected keyword argument 'size'"):
        make("kwargs", size=3)
    assert env_import_path("broken") is None  # a lambda: no other process can import it


@pytest.mark.parametrize("name", ["", "a:b", "catch", None])
def test_bad_names_are_refused(name):
    with pytest.raises(ValueError, match="env names"):
        register(name, small_catch)


def test_a_gymnax_environment_class_or_instance_is_adapted():
    pytest.importorskip("gymnax")
    from gymnax.environments.classic_control.cartpole import CartPole

    register("cart", CartPole)
    env = make("cart", max_steps_in_episode=50)
    assert env.spec.name == "cart" and env.spec.max_episode_steps == 50
    register("cart-instance", CartPole())
    assert make("cart-instance").spec.num_actions == 2
    assert make("gymnax.environments.classic_control.cartpole:CartPole").spec.num_actions == 2


def test_a_gymnax_class_takes_the_keywords_a_built_in_gymnax_id_takes():
    pytest.importorskip("gymnax")
    from gymnax.environments.minatar.breakout import MinBreakout

    register("breakout", MinBreakout)
    # EnvParams fields as keywords, constructor arguments under env_kwargs: as gymnax:<id>
    full = {"env_kwargs": {"use_minimal_action_set": False}, "max_steps_in_episode": 7}
    own, built_in = make("breakout", **full), make("gymnax:Breakout-MinAtar", **full)
    assert own.spec.num_actions == built_in.spec.num_actions == 6  # minimal: 3
    assert own.spec.max_episode_steps == built_in.spec.max_episode_steps == 7
    with pytest.raises(ValueError, match=r"constructor arguments go in env_kwargs"):
        make("breakout", use_minimal_action_set=False)
    with pytest.raises(ValueError, match=r"breakout: env_kwargs=\{'nope': 1\}"):
        make("breakout", env_kwargs={"nope": 1})
    register("breakout-instance", MinBreakout())
    with pytest.raises(ValueError, match=r"is an instance, built already"):
        make("breakout-instance", env_kwargs={"use_minimal_action_set": False})
