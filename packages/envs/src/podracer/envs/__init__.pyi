"""Public names of podracer.envs, one per line: what type checkers and IDEs read,
and what `lazy_loader.attach_stub` in `__init__.py` imports on first use."""

from .actions import action_space_fields as action_space_fields
from .actions import clip_action as clip_action
from .ale_env import AleEnv as AleEnv
from .ale_env import make_ale as make_ale
from .brax_env import BRAX_ENVS as BRAX_ENVS
from .brax_env import BraxEnv as BraxEnv
from .brax_env import BraxState as BraxState
from .brax_env import make_brax as make_brax
from .catch import Catch as Catch
from .catch import CatchState as CatchState
from .craftax_env import CRAFTAX_ENVS as CRAFTAX_ENVS
from .craftax_env import CraftaxEnv as CraftaxEnv
from .craftax_env import CraftaxState as CraftaxState
from .craftax_env import make_craftax as make_craftax
from .envpool_env import AtariOptions as AtariOptions
from .envpool_env import EnvpoolEnv as EnvpoolEnv
from .envpool_env import EnvpoolXla as EnvpoolXla
from .envpool_env import EpisodeTracker as EpisodeTracker
from .envpool_env import envpool_timestep as envpool_timestep
from .envpool_env import envpool_timestep_by_id as envpool_timestep_by_id
from .envpool_env import init_episode_tracker as init_episode_tracker
from .envpool_env import make_envpool as make_envpool
from .families import FAMILIES as FAMILIES
from .families import env_family as env_family
from .gymnasium_env import GymnasiumEnv as GymnasiumEnv
from .gymnasium_env import make_gymnasium as make_gymnasium
from .gymnax_env import GymnaxEnv as GymnaxEnv
from .gymnax_env import GymnaxState as GymnaxState
from .gymnax_env import make_gymnax as make_gymnax
from .gymnax_env import wrap_gymnax as wrap_gymnax
from .host import JaxHostEnv as JaxHostEnv
from .host import as_host_env as as_host_env
from .jumanji_env import JumanjiEnv as JumanjiEnv
from .jumanji_env import JumanjiState as JumanjiState
from .jumanji_env import flatten_observation as flatten_observation
from .jumanji_env import make_jumanji as make_jumanji
from .registry import EnvEntry as EnvEntry
from .registry import env_import_path as env_import_path
from .registry import is_import_path as is_import_path
from .registry import is_jax_env as is_jax_env
from .registry import list_envs as list_envs
from .registry import make as make
from .registry import make_host as make_host
from .registry import register as register
from .registry import registered_envs as registered_envs
from .rendering import render as render
from .stats import EpisodeStats as EpisodeStats
from .stats import init_episode_stats as init_episode_stats
from .stats import update_episode_stats as update_episode_stats
from .types import EnvSpec as EnvSpec
from .types import HostEnv as HostEnv
from .types import JaxEnv as JaxEnv
from .types import TimeStep as TimeStep

__version__: str
