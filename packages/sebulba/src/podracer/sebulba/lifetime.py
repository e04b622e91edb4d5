"""Thread lifetimes: one stop event, failures carried to the owner, no silent hang.

A `Supervisor` starts the worker threads of a run. Every blocking call of every thread
goes through it (`get`, `put`, `wait`): they poll a short interval, give up when the run
stops, and raise `StageTimeout` naming the stage when nothing happens in time. A worker
that raises stops every thread; the owner (the thread that made the supervisor, which
runs the learner) re-raises the worker's exception object, with its traceback.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

_POLL_S = 0.05  # how often blocked calls look at the stop event


class Stopped(Exception):
    """Raised in a blocked call when the run stops; unwinds a thread without an error."""


class StageTimeout(TimeoutError):
    """A blocking wait exceeded its timeout; the message names the stage that was stuck."""


def _timed_out(stage: str | Callable[[], str], timeout_s: float) -> StageTimeout:
    return StageTimeout(
        f"timed out after {timeout_s:g}s in stage: {stage() if callable(stage) else stage}"
    )


class Supervisor:
    """Starts workers; owns the stop event, their errors and the stage timeout."""

    def __init__(self, timeout_s: float):
        self.timeout_s = float(timeout_s)
        self.stop_event = threading.Event()
        self._owner = threading.current_thread()
        self._errors: list[tuple[str, BaseException]] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    # -- workers ---------------------------------------------------------------------

    def spawn(self, name: str, target: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                target()
            except Stopped:
                pass
            except BaseException as e:  # noqa: BLE001 - carried to the owner
                self.fail(name, e)

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def fail(self, name: str, error: BaseException) -> None:
        """Records `error` raised in thread `name` and stops every thread."""
        error.add_note(f"(raised in Sebulba thread {name!r})")
        with self._lock:
            self._errors.append((name, error))
        self.stop_event.set()

    def stop(self) -> None:
        self.stop_event.set()

    def join(self, timeout_s: float = 10.0) -> list[str]:
        """Stops and joins every worker; returns the names of those still alive."""
        self.stop_event.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in self._threads if t.is_alive()]

    @property
    def error(self) -> tuple[str, BaseException] | None:
        with self._lock:
            return self._errors[0] if self._errors else None

    # -- blocking calls --------------------------------------------------------------

    def check(self) -> None:
        """Raises if the run is stopping: the worker's error in the owner, else `Stopped`."""
        if not self.stop_event.is_set():
            return
        error = self.error
        if error is not None and threading.current_thread() is self._owner:
            raise error[1]
        raise Stopped("stopped")

    def wait(
        self,
        ready: Callable[[], Any],
        stage: str | Callable[[], str],
        timeout_s: float | None = None,
        condition: threading.Condition | None = None,
    ) -> Any:
        """Polls `ready()` until it returns something other than None.

        With `condition` (held by the caller), waits on it between polls instead of sleeping.
        """
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            result = ready()
            if result is not None:
                return result
            self.check()
            if time.monotonic() > deadline:
                raise _timed_out(stage, timeout_s)
            if condition is not None:
                condition.wait(_POLL_S)
            else:
                time.sleep(_POLL_S)

    def get(
        self, q: queue.Queue, stage: str | Callable[[], str], timeout_s: float | None = None
    ) -> Any:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            try:
                return q.get(timeout=_POLL_S)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise _timed_out(stage, timeout_s) from None

    def put(
        self,
        q: queue.Queue,
        item: Any,
        stage: str | Callable[[], str],
        timeout_s: float | None = None,
    ) -> None:
        timeout_s = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        while True:
            self.check()
            try:
                return q.put(item, timeout=_POLL_S)
            except queue.Full:
                if time.monotonic() > deadline:
                    raise _timed_out(stage, timeout_s) from None
