"""What an Anakin run computes and where, decided once from its config and the devices:
the `Plan`. The program factories (`make_init`, `make_chunk`, `make_evaluate`) take
`(agent, env, plan)` and read nothing else, and the training loop reads the plan (its
calls, rows and PBT steps), not the config, so a setting is followed from the command
line to the plan and from the plan to the line that uses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np

from podracer.agents import Agent

if TYPE_CHECKING:
    from jax.sharding import Mesh

    from podracer.anakin.config import AnakinConfig


class Swept(NamedTuple):
    """A sweep's members: `build(values)` is a member's agent from its swept values
    (`agent_config` paths -> scalars, traced inside the program), `values` each path's
    value for every member, `[M]` float32."""

    build: Callable[[Mapping[str, Any]], Agent]
    values: dict[str, np.ndarray]


MAX_CALL_SECONDS = 30.0  # a stop request (signal, wall-clock budget) waits about this long


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """The shape of an Anakin run's programs and loop (one member's figures where not
    said)."""

    mesh: Mesh  # the devices the envs and the learner's batch are split over
    num_envs: int  # envs over the whole mesh
    rollout_length: int  # env steps per env per update
    updates_per_chunk: int = 1  # updates one compiled chunk makes
    num_members: int = 1  # seeds x sweep points: the state's leading member axis when > 1
    members_at_once: int = 0  # members a chunk trains side by side, the others in turns; 0: all
    swept: Swept | None = None  # a sweep's (or PBT's) members: their agents and values
    population: bool = False  # PBT: each member's swept values live in its state
    pbt_exploited: int = 0  # PBT: members that copy another at each of its steps
    eval_envs: int = 0  # greedy episodes per evaluation (0: no evaluation program)
    eval_max_steps: int = 0  # an evaluation episode's step limit
    # The loop: the run's updates, a metric row's env steps, PBT's interval in env steps
    # (0: none), and the most seconds one call may take (a stop waits about this long).
    total_updates: int = 1
    row_interval: int = 1
    pbt_interval: int = 0
    call_seconds: float = MAX_CALL_SECONDS

    @property
    def steps_per_update(self) -> int:
        """Env steps of one update, every member's envs counted once (as a member's)."""
        return self.num_envs * self.rollout_length

    @property
    def steps_per_chunk(self) -> int:
        return self.steps_per_update * self.updates_per_chunk

    @classmethod
    def of(cls, config: AnakinConfig, mesh: Mesh, swept: Swept | None = None) -> Plan:
        """The plan of a checked `config` on `mesh`."""
        budget = config.max_wall_seconds
        return cls(
            mesh=mesh,
            num_envs=config.num_envs,
            rollout_length=config.rollout_length,
            updates_per_chunk=config.updates_per_chunk,
            num_members=config.num_members,
            members_at_once=config.members_at_once,
            swept=swept,
            population=config.pbt_interval > 0,
            pbt_exploited=config.pbt_exploited if config.pbt_interval > 0 else 0,
            eval_envs=config.eval_episodes if config.eval_interval else 0,
            eval_max_steps=config.eval_max_steps,
            total_updates=config.num_updates,
            row_interval=config.row_interval,
            pbt_interval=config.pbt_interval,
            # a quarter of a session's wall-clock budget, where that is less
            call_seconds=min(MAX_CALL_SECONDS, budget / 4) if budget > 0 else MAX_CALL_SECONDS,
        )

    def members(self, agent: Agent) -> tuple[Callable[[Mapping[str, Any]], Agent], dict]:
        """`(agent_of, values)`: a member's agent from its values, and the values the
        member axis maps over (one member's scalars when there is no member axis)."""
        if self.swept is None:
            return (lambda _: agent), {}
        values = {k: np.asarray(v, np.float32) for k, v in self.swept.values.items()}
        if self.num_members == 1:
            values = {k: v[0] for k, v in values.items()}
        return self.swept.build, values
