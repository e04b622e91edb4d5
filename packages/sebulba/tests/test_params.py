"""ParameterServer versions and the deterministic schedule."""

import threading
import time

import pytest

from podracer.sebulba import ParameterServer
from podracer.sebulba import StageTimeout
from podracer.sebulba import Supervisor
from podracer.sebulba import deterministic_schedule


def test_latest_never_blocks_and_tracks_publications():
    server = ParameterServer("p0", version=0)
    assert server.latest() == (0, "p0")
    server.publish("p1", 1)
    server.publish("p2", 2)
    assert server.latest() == (2, "p2")
    assert server.version == 2


def test_get_waits_for_the_exact_version():
    supervisor = Supervisor(timeout_s=5.0)
    server = ParameterServer("p0", version=0)
    threading.Timer(0.1, server.publish, ("p1", 1)).start()
    start = time.monotonic()
    assert server.get(1, supervisor, "waiting") == "p1"
    assert time.monotonic() - start >= 0.05
    server.publish("p2", 2)
    assert server.get(1, supervisor, "waiting") == "p1"  # still in the history


def test_get_times_out_naming_the_stage():
    server = ParameterServer("p0", version=0)
    with pytest.raises(StageTimeout, match="actor-3 waiting for params version 5"):
        server.get(5, Supervisor(timeout_s=0.2), "actor-3 waiting for params version 5")


def test_get_of_a_dropped_version_fails():
    server = ParameterServer("p0", version=0, keep=2)
    for v in range(1, 5):
        server.publish(f"p{v}", v)
    with pytest.raises(RuntimeError, match="version 1 .* dropped"):
        server.get(1, Supervisor(timeout_s=1.0), "x")


def test_deterministic_schedule_lags_one_update():
    # 2 actors, 3 trajectories per update: global trajectory g = 2 n + i.
    versions = {}
    for actor in range(2):
        schedule = deterministic_schedule(actor, num_actors=2, per_update=3, first_version=10)
        for n in range(6):
            versions[2 * n + actor] = schedule(n)
    # Updates 0 and 1 consume g 0..5 on the initial params; update u >= 1 consumes
    # g in [3u, 3u+3) while holding version 10 + u: trajectories act with 10 + u - 1.
    assert [versions[g] for g in range(12)] == [10] * 6 + [11] * 3 + [12] * 3
    for g in range(3, 12):
        update = g // 3
        assert (10 + update) - versions[g] == 1
