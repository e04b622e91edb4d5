"""SIGINT and SIGTERM: the first stops the run after its current loop step, the second at once.

SIGTERM is what Slurm and Kubernetes send before preempting a job, SIGINT is Ctrl-C.
The first one only records the request; the runtime's loop sees it after the chunk or
update in flight, writes a final checkpoint and returns normally (exit status 0). A
second one exits the process immediately without a traceback (status 128 + signal), the
newest checkpoint being whatever was last saved.

Handlers run in the main thread between bytecodes, so a main thread blocked inside a
long XLA computation would not see a signal until it ends; `block` waits for arrays from
a helper thread instead, which keeps the main thread responsive.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Installs the handlers for its `with` block (main thread only; elsewhere a no-op).

    `requested` is the name of the first signal received ("SIGINT", "SIGTERM") or None.
    `on_second()` returns the line printed before a second signal exits.
    """

    def __init__(self, on_second: Callable[[], str] = lambda: "exiting now"):
        self.requested: str | None = None
        self._on_second = on_second
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.requested is None:
            self.requested = name
            print(
                f"\n{name}: stopping after the current step with a final checkpoint "
                f"(again to exit at once)",
                file=sys.stderr,
                flush=True,
            )
            return
        print(f"\nsecond {name}: {self._on_second()}", file=sys.stderr, flush=True)
        os._exit(128 + signum)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in _SIGNALS}
        return self

    def __exit__(self, *exc: Any) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def block(tree: Any) -> Any:
    """`jax.block_until_ready(tree)`, waited for in a helper thread: signal handlers run
    while the computation does (a `join` can be interrupted, an XLA wait cannot)."""
    import jax

    error: list[BaseException] = []

    def wait() -> None:
        try:
            jax.block_until_ready(tree)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            error.append(e)

    thread = threading.Thread(target=wait, name="block-until-ready", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return tree
