"""Anakin's configuration: the shared `RunConfig` plus Anakin's global sizes."""

from __future__ import annotations

import dataclasses
from typing import Annotated
from typing import Any
from typing import ClassVar

import tyro

from podracer.agents import ConfigError
from podracer.agents.validation import check_int
from podracer.agents.validation import fail
from podracer.anakin.presets import LAYOUTS
from podracer.runs import RunConfig
from podracer.runs.sweep import Sweep
from podracer.runs.sweep import parse_sweep


@dataclasses.dataclass(frozen=True)
class AnakinConfig(RunConfig):
    """An Anakin training run. Defaults: the Podracer demo (Catch with Q(lambda)).

    Sizes are global: `num_envs` environments are split evenly over the devices, so the
    same config gives the same learning curve on 1, 2 or 4 devices.
    """

    env: str = "catch"  # a JaxEnv name: catch, gymnax:CartPole-v1, ... (podracer.envs.list_envs)
    total_env_steps: int = 409_600  # rounded up to whole updates
    num_envs: int = 128  # global batch of environments, split over devices
    rollout_length: int = 16  # T: environment steps per update
    updates_per_chunk: int = 50  # K: updates per compiled chunk
    # Env steps between metric rows; 0: about 100 over the run. Rows within a chunk cost
    # no extra call: the chunk bins its metrics by row.
    log_interval: int = 0
    num_devices: int | None = None  # None: every device of every process
    # Independent runs of seeds seed, seed+1, ..., as one vmapped program (metrics, a
    # TensorBoard run and checkpoints per seed); seed k trains as a run with seed+k would.
    num_seeds: int = 1
    # A hyperparameter sweep as one program, repeatable: --sweep ppo.learning_rate=1e-4,3e-4
    # --sweep ppo.entropy_cost=0,0.01 trains the grid's 4 points x num_seeds seeds as its
    # members (the numbers its config declares SWEEPABLE; podracer.runs.sweep).
    sweep: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    # Population-based training of the sweep's members (Jaderberg et al., 2017): at the end
    # of the first chunk at or past each multiple of pbt_interval env steps, the worst
    # pbt_fraction of members (by mean episodic return since the last such step) copy the
    # params, optimizer state and swept values of one of the best pbt_fraction, then scale
    # each swept value by 0.8 or 1.2 within the grid's range. 0: off.
    pbt_interval: int = 0
    pbt_fraction: float = 0.25
    # Members (seeds x sweep points) that train side by side; 0: all of them. Fewer take
    # turns, this many at a time, so that members too many for the device's memory fit
    # (slower); each learns as it would side by side with all the others.
    members_at_once: int = 0

    RUNTIME: ClassVar[str] = "anakin"
    # Each preset's sizes on this runtime (podracer/anakin/presets.py).
    LAYOUTS: ClassVar[dict[tuple[str, str], dict[str, Any]]] = LAYOUTS
    MAY_CHANGE_ON_RESUME: ClassVar[frozenset[str]] = RunConfig.MAY_CHANGE_ON_RESUME | {
        "num_devices",
        "members_at_once",
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int(self, "num_envs", "rollout_length", "updates_per_chunk", "num_seeds")
        if self.num_devices is not None:
            check_int(self, "num_devices")
        if not isinstance(self.sweep, tuple):
            object.__setattr__(self, "sweep", tuple(self.sweep))
        object.__setattr__(self, "_sweep", parse_sweep(self.sweep, self.agent, self.agent_config))
        check_int(self, "pbt_interval", minimum=0)
        self.check_members_at_once("num_seeds x sweep points")
        if self.pbt_interval:
            if not self.grid.fields:
                fail(self, "pbt_interval", "0 without a sweep (--sweep names the values PBT "
                     "explores, and its grid the starting population)")  # fmt: skip
            fraction = self.pbt_fraction
            if not (isinstance(fraction, int | float) and 0 < fraction <= 0.5):
                fail(self, "pbt_fraction", "in (0, 0.5] (the worst and the best fractions)")
            if self.pbt_exploited < 1:
                fail(self, "pbt_fraction", f"at least 1 / {self.num_members} (the members): "
                     "at least one member copies another")  # fmt: skip
            if self.pbt_interval > self.planned_env_steps():
                fail(self, "pbt_interval", f"at most the run's {self.planned_env_steps():,} env "
                     "steps (total_env_steps): no PBT step would happen")  # fmt: skip

    @property
    def grid(self) -> Sweep:
        """The parsed sweep (no fields: no sweep)."""
        return self._sweep  # type: ignore[attr-defined]

    @property
    def pbt_exploited(self) -> int:
        """Members that copy another at each PBT step (and members they copy from)."""
        return int(self.pbt_fraction * self.num_members)

    @property
    def num_members(self) -> int:
        """Independent trainings on the program's leading axis: grid points x seeds."""
        return len(self.grid.points) * self.num_seeds

    def member_tags(self) -> list[dict[str, Any]]:
        """What each member's rows carry to tell them apart: `seed` (its index) in a
        multi-seed run; `member`, `seed` and the point's values in a sweep."""
        if self.grid.fields:
            return self.grid.members(self.num_seeds)
        return [{"seed": k} for k in range(self.num_seeds)] if self.num_seeds > 1 else [{}]

    @property
    def steps_per_update(self) -> int:
        return self.num_envs * self.rollout_length

    @property
    def steps_per_chunk(self) -> int:
        return self.steps_per_update * self.updates_per_chunk

    def update_size(self, num_processes: int = 1) -> tuple[int, str]:
        fields = f"num_envs {self.num_envs:,} x rollout_length {self.rollout_length}"
        return self.steps_per_update, fields  # num_envs counts every process's envs

    @property
    def num_updates(self) -> int:
        """The run's updates (a learning-rate schedule spans them); its last chunk makes
        those left, in the same compiled program."""
        return self.planned_env_steps() // self.steps_per_update

    @property
    def num_chunks(self) -> int:
        return -(-self.num_updates // self.updates_per_chunk)

    def check_devices(self, num_available: int) -> int:
        """The device count to use, after every check that needs it (or the agent's config
        together with the sizes); fails naming the field."""
        n = num_available if self.num_devices is None else self.num_devices
        if n > num_available:
            fail(self, "num_devices", f"at most the {num_available} devices that exist", n)
        if self.num_envs % n:
            fail(self, "num_envs", f"divisible by the {n} devices")
        if self.eval_interval and self.eval_episodes % n:
            fail(self, "eval_episodes", f"divisible by the {n} devices (one episode per env)")
        self.check_rollout(self.rollout_length, self.num_envs // n)
        replay = getattr(self.agent_config, "replay", None)
        if replay is not None and replay.enabled:
            owner = f"{type(self.agent_config).__name__}.replay"
            if replay.capacity < self.num_envs:
                raise ConfigError(
                    f"{owner}.capacity={replay.capacity} must be >= AnakinConfig.num_envs="
                    f"{self.num_envs} (a rollout adds one sequence per env)"
                )
            for name in ("capacity", "sequences_per_update"):
                value = getattr(replay, name)
                if value % n:
                    raise ConfigError(
                        f"{owner}.{name}={value} must be divisible by the {n} devices"
                    )
        return n
