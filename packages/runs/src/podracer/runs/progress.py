"""The status line of a run: what it is doing, then steps, SPS, return, elapsed and ETA.

On a terminal the line rewrites itself; piped (a log file, a cluster job) it prints a
plain line at most every 5 seconds, and always the last one. (Not tqdm: its rate and ETA
count the compile, piped it writes carriage-return frames, not lines, and its bar and
total go blank once a run's last chunk passes the total.)
"""

from __future__ import annotations

import math
import sys
import time


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    seconds = int(seconds)
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class Progress:
    """Steps out of `total_steps`, from `start_steps` (a resumed run's count)."""

    def __init__(self, total_steps: int, start_steps: int = 0, enabled: bool = True,
                 stream=None, prefix: str = ""):  # fmt: skip
        self.total = total_steps
        self.enabled = enabled
        # sys.stderr when the run starts, not at import: a redirect in force is honoured
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self.prefix = prefix
        self.start = time.perf_counter()
        self._start_steps = start_steps
        self._first: tuple[float, int] | None = None  # (time, steps) after the first update
        self._last_print = 0.0
        self._open_line = False

    def status(self, message: str, always: bool = False) -> None:
        """A line saying what the run does before steps count (e.g. compiling); `always`:
        also with the progress line off (what the user must not miss)."""
        if self.enabled or always:
            self._end_line()
            print(f"{self.prefix}{message}", file=self.stream, flush=True)

    def update(self, steps: int, sps: float, episodic_return: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self._first is None:
            # ETA from the steady rate: the first update includes the compile.
            self._first = (now, steps)
            eta = math.nan
        else:
            t0, s0 = self._first
            rate = (steps - s0) / max(now - t0, 1e-9)
            # Runs end on a whole chunk or update, so steps may pass the total.
            eta = max(self.total - steps, 0) / rate if rate > 0 else math.nan
        if not self.tty and now - self._last_print < 5.0 and steps < self.total:
            return
        self._last_print = now
        frac = min(steps / max(self.total, 1), 1.0)
        bar = "#" * int(20 * frac) + "-" * (20 - int(20 * frac))
        ret = (
            "    n/a" if episodic_return is None or not math.isfinite(episodic_return)
            else f"{episodic_return:7.2f}"
        )  # fmt: skip
        line = (
            f"{self.prefix}[{bar}] {steps:>11,}/{self.total:,} steps | "
            f"{'compiling' if not math.isfinite(sps) else f'{sps:,.0f}':>10} SPS | "
            f"return {ret} | {_duration(now - self.start)} elapsed, ETA {_duration(eta)}"
        )
        if self.tty and steps < self.total:
            print(line, end="\r", file=self.stream, flush=True)
            self._open_line = True
        else:
            self._end_line()
            print(line, file=self.stream, flush=True)

    def _end_line(self) -> None:
        if self._open_line:
            print(file=self.stream, flush=True)
            self._open_line = False

    def close(self) -> None:
        if self.enabled:
            self._end_line()
