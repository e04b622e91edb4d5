"""Public names of podracer.sebulba, one per line: what type checkers and IDEs read,
and what `lazy_loader.attach_stub` in `__init__.py` imports on first use."""

from .actor import Actor as Actor
from .actor import Rollout as Rollout
from .actor import deterministic_schedule as deterministic_schedule
from .config import SebulbaConfig as SebulbaConfig
from .learner import Learner as Learner
from .learner import learner_mesh as learner_mesh
from .learner import make_update as make_update
from .learner import trajectory_sharding as trajectory_sharding
from .lifetime import StageTimeout as StageTimeout
from .lifetime import Stopped as Stopped
from .lifetime import Supervisor as Supervisor
from .params import ParameterServer as ParameterServer
from .plan import Plan as Plan
from .rollout import PythonLoop as PythonLoop
from .rollout import RolloutOutput as RolloutOutput
from .rollout import XlaLoop as XlaLoop
from .run import EnvFn as EnvFn
from .run import choose_loop as choose_loop
from .run import learn as learn
from .run import train as train
from .timing import PhaseTimer as PhaseTimer

__version__: str
