"""The status line: what the run does, then steps, SPS, return, elapsed time and ETA."""

import io

from podracer.runs import Progress


def test_progress_prints_status_steps_sps_return_and_eta_when_piped():
    stream = io.StringIO()
    progress = Progress(1000, stream=stream)
    progress.status("compiling ...")
    progress.update(500, 1234.0, 7.5)  # first line always printed
    progress.update(600, 1234.0, 8.0)  # throttled when not a terminal
    progress.update(1000, 2000.0, float("nan"))  # the last one always printed
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "compiling ..." and len(lines) == 3
    assert "500/1,000 steps" in lines[1] and "1,234 SPS" in lines[1] and "7.50" in lines[1]
    assert "[##########----------]" in lines[1] and "elapsed, ETA ?" in lines[1]
    assert "n/a" in lines[2] and "ETA 0:00" in lines[2]
    Progress(10, enabled=False, stream=stream).update(5, 1.0)
    assert len(stream.getvalue().splitlines()) == 3


def test_the_eta_comes_from_the_rate_after_the_first_update(monkeypatch):
    clock = iter([0.0, 10.0, 20.0])  # start; first update (compile); second update
    monkeypatch.setattr("podracer.runs.progress.time.perf_counter", lambda: next(clock))
    stream = io.StringIO()
    progress = Progress(400, start_steps=100, stream=stream)
    progress.update(200, 10.0)
    progress.update(300, 10.0)  # 100 steps in 10 s: 100 to go take 10 s
    assert stream.getvalue().splitlines()[-1].endswith("0:20 elapsed, ETA 0:10")


def test_the_eta_is_zero_once_the_last_chunk_passes_the_total(monkeypatch):
    clock = iter([0.0, 10.0, 20.0])
    monkeypatch.setattr("podracer.runs.progress.time.perf_counter", lambda: next(clock))
    stream = io.StringIO()
    progress = Progress(1000, stream=stream)
    progress.update(512, 10.0)
    progress.update(1024, 10.0)  # a run ends on a whole chunk: 1,024 of 1,000 steps
    assert stream.getvalue().splitlines()[-1].endswith("ETA 0:00")
