"""podracer.envs: typed environment interfaces and adapters for Anakin and Sebulba.

Pure-JAX environments (`JaxEnv`, for Anakin): `make("catch")`, `make("gymnax:CartPole-v1")`.
Host environments (`HostEnv`, for Sebulba): `make_host("envpool:Pong-v5", num_envs=64)`,
or any JaxEnv through `as_host_env` / `make_host("catch", num_envs=8)`.
gymnax and envpool are optional extras, imported only when one of their envs is made.
"""

from podracer.envs.catch import Catch
from podracer.envs.catch import CatchState
from podracer.envs.envpool_env import AtariOptions
from podracer.envs.envpool_env import EnvpoolEnv
from podracer.envs.envpool_env import EnvpoolXla
from podracer.envs.envpool_env import EpisodeTracker
from podracer.envs.envpool_env import envpool_timestep
from podracer.envs.envpool_env import envpool_timestep_by_id
from podracer.envs.envpool_env import init_episode_tracker
from podracer.envs.envpool_env import make_envpool
from podracer.envs.gymnax_env import GymnaxEnv
from podracer.envs.gymnax_env import GymnaxState
from podracer.envs.gymnax_env import make_gymnax
from podracer.envs.host import JaxHostEnv
from podracer.envs.host import as_host_env
from podracer.envs.registry import list_envs
from podracer.envs.registry import make
from podracer.envs.registry import make_host
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import HostEnv
from podracer.envs.types import JaxEnv
from podracer.envs.types import TimeStep

__version__ = "0.1.0"
