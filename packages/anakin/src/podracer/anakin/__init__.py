"""podracer.anakin: environments and agent together on device (Hessel, Kroiss et al., 2021)."""

from podracer.anakin.config import AnakinConfig
from podracer.anakin.runtime import ChunkMetrics
from podracer.anakin.runtime import RunnerState
from podracer.anakin.runtime import make_chunk
from podracer.anakin.runtime import make_evaluate
from podracer.anakin.runtime import make_init
from podracer.anakin.runtime import make_mesh
from podracer.anakin.runtime import make_rollout
from podracer.anakin.train import TrainResult
from podracer.anakin.train import final_return
from podracer.anakin.train import train

__version__ = "0.1.0"
