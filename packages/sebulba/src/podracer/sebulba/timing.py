"""Per-phase wall-clock timers for the actor and learner loops (cleanba's breakdown)."""

from __future__ import annotations

import time


class PhaseTimer:
    """A lap timer: `lap(phase)` charges the time since the previous lap to `phase`.

    Cheaper than a context manager per phase in the per-step loop, and every second of
    the loop lands in exactly one phase, so phases add up to the wall time.
    """

    def __init__(self) -> None:
        self._last = time.perf_counter()
        self._totals: dict[str, float] = {}

    def restart(self) -> None:
        """Discards the time since the last lap (e.g. a compile before the loop)."""
        self._last = time.perf_counter()

    def lap(self, phase: str) -> None:
        now = time.perf_counter()
        self._totals[phase] = self._totals.get(phase, 0.0) + now - self._last
        self._last = now

    def take(self) -> dict[str, float]:
        """The seconds per phase since the last `take`, and resets them."""
        totals, self._totals = self._totals, {}
        return totals
