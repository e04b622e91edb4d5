"""podracer.sebulba: the Sebulba runtime (host environments, actor and learner devices).

`train(SebulbaConfig(...))` runs a whole training run; the command is `sebulba`.
The pieces are public for tests, benchmarks and custom runtimes.
"""

from podracer.sebulba.actor import Actor
from podracer.sebulba.actor import Rollout
from podracer.sebulba.actor import deterministic_schedule
from podracer.sebulba.config import SebulbaConfig
from podracer.sebulba.evaluate import Evaluator
from podracer.sebulba.learner import Learner
from podracer.sebulba.learner import learner_mesh
from podracer.sebulba.learner import make_update
from podracer.sebulba.learner import trajectory_sharding
from podracer.sebulba.lifetime import StageTimeout
from podracer.sebulba.lifetime import Stopped
from podracer.sebulba.lifetime import Supervisor
from podracer.sebulba.lifetime import stop_on_signals
from podracer.sebulba.params import ParameterServer
from podracer.sebulba.rollout import PythonLoop
from podracer.sebulba.rollout import RolloutOutput
from podracer.sebulba.rollout import XlaLoop
from podracer.sebulba.run import EnvFn
from podracer.sebulba.run import TrainResult
from podracer.sebulba.run import final_return
from podracer.sebulba.run import train
from podracer.sebulba.timing import PhaseTimer

__version__ = "0.1.0"
