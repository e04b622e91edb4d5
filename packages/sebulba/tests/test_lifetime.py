"""Supervisor: failures reach the owner with their traceback; waits time out by stage."""

import queue
import threading
import traceback

import pytest

from podracer.sebulba import StageTimeout
from podracer.sebulba import Stopped
from podracer.sebulba import Supervisor


def _explode():
    raise ValueError("boom in worker")


def test_worker_error_is_reraised_in_owner_with_traceback():
    supervisor = Supervisor(timeout_s=5.0)
    supervisor.spawn("worker-1", _explode)
    with pytest.raises(ValueError, match="boom in worker") as info:
        supervisor.get(queue.Queue(), "learner waiting")
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "_explode" in frames  # the worker's own frames are kept
    assert any("worker-1" in note for note in info.value.__notes__)
    assert supervisor.stop_event.is_set()
    assert supervisor.join(1.0) == []


def test_other_workers_unwind_when_one_fails():
    supervisor = Supervisor(timeout_s=30.0)
    unwound = threading.Event()

    def waiter():
        try:
            supervisor.get(queue.Queue(), "never fed")
        except Stopped:
            unwound.set()
            raise

    supervisor.spawn("waiter", waiter)
    supervisor.spawn("failer", _explode)
    assert unwound.wait(5.0)
    assert supervisor.join(1.0) == []
    assert supervisor.error[0] == "failer"


def test_get_and_put_time_out_naming_the_stage():
    supervisor = Supervisor(timeout_s=0.2)
    with pytest.raises(StageTimeout, match="learner waiting for actor-0"):
        supervisor.get(queue.Queue(), "learner waiting for actor-0")
    full = queue.Queue(maxsize=1)
    full.put(1)
    with pytest.raises(StageTimeout, match="actor-2 queue put"):
        supervisor.put(full, 2, lambda: "actor-2 queue put")


def test_stop_unblocks_waits():
    supervisor = Supervisor(timeout_s=30.0)
    threading.Timer(0.1, supervisor.stop).start()
    with pytest.raises(Stopped):
        supervisor.get(queue.Queue(), "waiting")
