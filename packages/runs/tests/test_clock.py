"""RunClock's figures on a fake clock: the rows' SPS leaves the compile out, as the
summary and the progress line do."""

import math

import pytest

from podracer.runs import clock as clock_module
from podracer.runs.clock import RunClock


@pytest.fixture
def now(monkeypatch):
    t = [0.0]
    monkeypatch.setattr(clock_module.time, "perf_counter", lambda: t[0])
    return t


def test_the_first_row_counts_from_the_end_of_a_compile_the_runtime_measured(now):
    clock = RunClock()
    clock.step_started()
    now[0] = 10.0
    clock.compiled(9.5)  # Anakin's probe: compiled, then the step's own calls
    now[0] = 11.0
    clock.step_ended(100)
    sps, elapsed = clock.row(100, 0, 100)
    assert sps == pytest.approx(100.0) and elapsed == pytest.approx(11.0)  # not 100 / 11
    assert clock.sps(100) == pytest.approx(100.0)  # the progress line's figure agrees
    clock.step_started()
    now[0] = 13.0
    clock.step_ended(300)
    assert clock.row(300, 100, 300)[0] == pytest.approx(100.0)


def test_rows_of_the_step_that_compiled_have_no_rate_when_the_compile_is_unmeasured(now):
    # Sebulba: its first update waits for the first compiles, which no one times apart.
    clock = RunClock()
    clock.step_started()
    now[0] = 10.0
    clock.step_ended(100)
    assert math.isnan(clock.row(100, 0, 100)[0])
    assert math.isnan(clock.sps(100))
    clock.step_started()
    now[0] = 12.0
    clock.step_ended(300)
    assert clock.row(300, 100, 300)[0] == pytest.approx(100.0)
    assert clock.sps(300) == pytest.approx(100.0)


@pytest.mark.parametrize("measured", [True, False])
def test_work_staged_before_the_loop_is_part_of_the_compile_figure_not_of_sps(now, measured):
    # Anakin's sweep check traces the chunk before the loop; the first call then only
    # compiles. The compile figure counts both, as it would with no sweep.
    now[0] = 1.0
    clock = RunClock()
    clock.staged(4.0)
    clock.step_started()
    now[0] = 10.0
    if measured:
        clock.compiled(9.0)  # the probe's own figure; unmeasured: the first step's 10 s less 1
    now[0] = 11.0
    clock.step_ended(100)
    clock.step_started()
    now[0] = 12.0
    clock.step_ended(200)
    sps, compile_seconds = clock.summary(200)
    assert compile_seconds == pytest.approx(4.0 + 9.0)
    assert sps == pytest.approx(100.0)
