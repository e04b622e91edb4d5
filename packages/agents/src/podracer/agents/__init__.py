"""podracer.agents: networks, losses, train state and checkpoints shared by both runtimes."""

from podracer.agents.checkpoint import Checkpointer
from podracer.agents.checkpoint import abstract_like
from podracer.agents.checkpoint import package_versions
from podracer.agents.distributed import DistributedConfig
from podracer.agents.distributed import initialize as initialize_distributed
from podracer.agents.distributed import is_main_process
from podracer.agents.distributed import shutdown as shutdown_distributed
from podracer.agents.impala import ImpalaConfig
from podracer.agents.impala import make_impala
from podracer.agents.muzero import MuZeroConfig
from podracer.agents.muzero import make_muzero
from podracer.agents.muzero_networks import MuZeroNetwork
from podracer.agents.networks import MLP
from podracer.agents.networks import ActorCritic
from podracer.agents.networks import ImpalaResNet
from podracer.agents.networks import NatureCNN
from podracer.agents.networks import QNetwork
from podracer.agents.networks import Torso
from podracer.agents.networks import preprocess
from podracer.agents.ppo import PPOConfig
from podracer.agents.ppo import make_ppo
from podracer.agents.qlambda import QLambdaConfig
from podracer.agents.qlambda import make_qlambda
from podracer.agents.registry import AGENTS
from podracer.agents.registry import agent_config
from podracer.agents.registry import make_agent
from podracer.agents.registry import register_agent
from podracer.agents.replay import Replay
from podracer.agents.replay import ReplayConfig
from podracer.agents.replay import ReplaySample
from podracer.agents.replay import ReplayState
from podracer.agents.replay import init_local_replays
from podracer.agents.replay import local_replay
from podracer.agents.replay import make_learn
from podracer.agents.replay import make_replay
from podracer.agents.returns import Boundaries
from podracer.agents.returns import bootstrap_values
from podracer.agents.returns import boundaries
from podracer.agents.returns import lambda_advantages
from podracer.agents.returns import vtrace
from podracer.agents.run import MetricWriter
from podracer.agents.run import Progress
from podracer.agents.run import RunDir
from podracer.agents.run import to_jsonable
from podracer.agents.train_state import TrainState
from podracer.agents.train_state import init_train_state
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import make_optimizer
from podracer.agents.types import masked_mean
from podracer.agents.types import pmean_flat
from podracer.agents.types import sgd_update

__version__ = "0.1.0"
