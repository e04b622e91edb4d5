"""SIGINT and SIGTERM: the first stops the run after its current loop step, the second at once.

SIGTERM is what Slurm and Kubernetes send before preempting a job, SIGINT is Ctrl-C.
The first one only records the request; the runtime's loop sees it after the chunk or
update in flight, writes a final checkpoint and returns normally (exit status 0). A
second one exits the process immediately without a traceback (status 128 + signal), the
newest checkpoint being whatever was last saved.

The command lines install the handlers at their first line (`install`), so a signal
during start-up (imports, building the env and agent, restoring) is never a traceback
nor lost. The handler only records it: raised from a handler, an exception can land in
a gc or weakref callback (JAX's tracing runs many), which prints it and goes on. The
run checks between the steps of its start-up (`Run.stop_if_requested`; Anakin's last is
before its chunk's compile starts), writes nothing and raises `Interrupted`, which the
command line reports in one line (exit status 128 + signal); a second signal exits at
once.

Handlers run in the main thread between bytecodes, so a main thread blocked inside a
long XLA computation or compile would not see a signal until it ends; `aside` runs such
work on a helper thread (`block` waits for arrays so), which keeps the main thread
responsive.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any
from typing import TypeVar

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
T = TypeVar("T")


class Interrupted(Exception):
    """A stop signal arrived before the loop began: nothing was trained or written."""

    def __init__(self, name: str):
        super().__init__(before_training(name))  # printed already, as the signal came
        self.signum = int(signal.Signals[name])


_INSTALLED: StopSignals | None = None  # the process's, installed by a command line


def after_the_step(name: str) -> str:
    """What the first signal prints once a run's loop has begun."""
    return (
        f"{name}: stopping after the current step with a final checkpoint (again to exit at once)"
    )


def before_training(name: str, waiting: str | None = None) -> str:
    """What the first signal prints during a command line's start-up; `waiting` names what
    the process lets end first (an XLA compile on another thread cannot stop part way)."""
    done = f"exiting once {waiting}" if waiting else "stopping"
    return f"{name} before training began: nothing was written; {done} (again to exit at once)"


def install() -> StopSignals:
    """Installs the process-wide handlers (a command line's first act; main thread); the
    run adopts them, with any signal that came before it began."""
    global _INSTALLED
    if _INSTALLED is None:
        _INSTALLED = StopSignals(lambda: "exiting now").__enter__()
        _INSTALLED.on_first = _INSTALLED.before_training  # until a run begins its loop
    return _INSTALLED


def installed() -> StopSignals | None:
    return _INSTALLED


def uninstall() -> None:
    """Restores the handlers `install` replaced (a command line's last act)."""
    global _INSTALLED
    if _INSTALLED is not None:
        process, _INSTALLED = _INSTALLED, None
        process.__exit__()


class StopSignals:
    """Installs the handlers for its `with` block (main thread only; elsewhere a no-op).

    `requested` is the name of the first signal received ("SIGINT", "SIGTERM") or None.
    `on_second()` returns the line printed before a second signal exits. `waiting()` names
    the start-up's work that must end before the process may exit, or None (`Run.waiting`).
    """

    def __init__(self, on_second: Callable[[], str] = lambda: "exiting now"):
        self.requested: str | None = None
        self.on_second = on_second
        self.on_first = after_the_step  # the line the first signal prints, given its name
        self.waiting: Callable[[], str | None] = lambda: None
        self._previous: dict[int, Any] = {}

    def before_training(self, name: str) -> str:
        return before_training(name, self.waiting())

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.requested is None:
            self.requested = name
            print(f"\n{self.on_first(name)}", file=sys.stderr, flush=True)
            return
        print(f"\nsecond {name}: {self.on_second()}", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    def __enter__(self) -> StopSignals:
        if not self._previous and threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in _SIGNALS}
        return self

    def __exit__(self, *exc: Any) -> None:
        if self is _INSTALLED:  # the process's: in place until the process ends
            return
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def aside(work: Callable[[], T]) -> T:
    """`work()` run on a helper thread while this one waits to join it: signal handlers
    run meanwhile (a `join` can be interrupted; an XLA compile or wait cannot, and the
    main thread would print a signal's line only once it returned)."""
    result: list[Any] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            error.append(e)

    thread = threading.Thread(target=run, name="podracer-aside", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]


def block(tree: Any) -> Any:
    """`jax.block_until_ready(tree)`, waited for in a helper thread (`aside`)."""
    import jax

    return aside(lambda: jax.block_until_ready(tree))
