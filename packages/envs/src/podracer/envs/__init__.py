"""podracer.envs: typed environment interfaces and adapters for Anakin and Sebulba."""

from podracer.envs.types import EnvSpec
from podracer.envs.types import HostEnv
from podracer.envs.types import JaxEnv
from podracer.envs.types import TimeStep

__version__ = "0.1.0"
