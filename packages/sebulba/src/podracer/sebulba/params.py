"""The parameter server: the learner publishes, actors read without blocking.

Versions count learner updates: the initial (or restored) params are version `v0`, and
each update publishes `v + 1`. Actors normally act with the newest version (`latest`,
a lock-free read). In deterministic mode an actor asks for one exact version (`get`) and
waits for it, so the policy that produced each trajectory, and hence the whole run, does
not depend on thread timing; a short history serves an actor that is one update behind.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from podracer.sebulba.lifetime import Supervisor


class ParameterServer:
    """Latest params and their version, plus the last `keep` versions for exact reads."""

    def __init__(self, params: Any, version: int, keep: int = 3):
        self._cond = threading.Condition()
        self._history: OrderedDict[int, Any] = OrderedDict({int(version): params})
        self._keep = keep
        self._latest = (int(version), params)  # replaced whole: reads need no lock

    def publish(self, params: Any, version: int) -> None:
        with self._cond:
            self._history[int(version)] = params
            while len(self._history) > self._keep:
                self._history.popitem(last=False)
            self._latest = (int(version), params)
            self._cond.notify_all()

    def latest(self) -> tuple[int, Any]:
        """`(version, params)` of the newest publication; never blocks."""
        return self._latest

    @property
    def version(self) -> int:
        return self._latest[0]

    def get(self, version: int, supervisor: Supervisor, stage: str) -> Any:
        """The params of exactly `version`, waiting for the learner to publish it."""

        def ready():
            if version in self._history:
                return self._history[version]
            oldest = next(iter(self._history))
            if version < oldest:
                raise RuntimeError(
                    f"params version {version} was requested after it was dropped "
                    f"(oldest kept: {oldest}); the actor fell too far behind the learner"
                )
            return None

        with self._cond:
            return supervisor.wait(ready, stage, condition=self._cond)
