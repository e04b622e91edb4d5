"""Anakin over JAX's distributed runtime: 2 processes x 2 devices == 1 process x 4 devices,
and a checkpoint written by 2 processes resumes in 1.

Processes are local, joined over 127.0.0.1 with gloo CPU collectives by the launcher
(`python -m podracer.agents.launch`), exactly as a user tries multi-host on a laptop.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent(
    """
    import json, sys, jax, numpy as np
    from podracer.anakin import AnakinConfig, train
    from podracer.runs import DistributedConfig
    where, chunks, name, root, resume, seeds = sys.argv[1:7]
    config = AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5, num_seeds=int(seeds),
                          total_env_steps=int(chunks) * 160, progress=False, tensorboard=False,
                          run_name=name, runs_root=root,
                          checkpoint_interval=160, log_interval=160, resume=resume == "resume",
                          cluster=DistributedConfig(distributed=where == "dist"))
    result = train(config)
    # A fingerprint per parameter array keeps the line short: sum, sum of squares, first value.
    params = [[float(np.sum(x)), float(np.sum(np.square(x))), float(np.ravel(x)[0])]
              for x in jax.tree.leaves(jax.device_get(result.state.train.params))]
    print("RESULT " + json.dumps({"process": jax.process_index(), "devices": len(jax.devices()),
          "params": params, "losses": [h["losses/total"] for h in result.history]}))
    """
)


def _results(output: str) -> list[dict]:
    lines = [line.split("RESULT ", 1)[1] for line in output.splitlines() if "RESULT " in line]
    return [json.loads(x) for x in lines]


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [1, 2])
def test_two_processes_match_one_process_and_their_checkpoint_resumes_in_one(tmp_path, seeds):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    runs = str(tmp_path / "runs")
    single = lambda *args: subprocess.run(
        [sys.executable, str(script), "local", *args, str(seeds)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
    )
    reference = single("4", "reference", runs, "fresh")  # 4 chunks, uninterrupted
    assert reference.returncode == 0, reference.stderr[-3000:]
    (reference,) = _results(reference.stdout)
    multi = subprocess.run(
        [
            sys.executable,
            "-m",
            "podracer.runs.launch",
            "-n",
            "2",
            "-d",
            "2",
            "--timeout",
            "500",
            "--",
            sys.executable,
            str(script),
            "dist",
            "2",
            "mh",
            runs,
            "fresh",
            str(seeds),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert multi.returncode == 0, multi.stdout[-3000:]
    results = _results(multi.stdout)
    assert sorted(r["process"] for r in results) == [0, 1]
    for r in results:
        assert r["devices"] == 4
        assert r["losses"] == pytest.approx(reference["losses"][: 2 * seeds], rel=1e-5)
    # Orbax wrote one checkpoint per chunk from both processes; metrics came from process 0.
    run = tmp_path / "runs" / "mh"
    assert sorted(os.listdir(run / "checkpoints")) == ["1", "2"]
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 2 * seeds  # a row per seed

    # One process (4 devices) resumes the two-process checkpoint: env states, keys and
    # train state continue, and the run ends where the uninterrupted one did.
    resumed = single("4", "mh", runs, "resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (resumed,) = _results(resumed.stdout)
    assert resumed["losses"] == pytest.approx(reference["losses"][2 * seeds :], rel=1e-4)
    for a, b in zip(resumed["params"], reference["params"], strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 4 * seeds


FAULT_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time, json, jax, numpy as np
    from podracer.anakin import AnakinConfig, train
    from podracer.runs import DistributedConfig, initialize_distributed
    root, resume, kill = sys.argv[1], sys.argv[2] == "resume", sys.argv[3] == "kill"
    config = AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=5,
                          total_env_steps=4 * 160, progress=False, tensorboard=False,
                          run_name="fault", runs_root=root,
                          checkpoint_interval=160, log_interval=160, resume=resume,
                          cluster=DistributedConfig(distributed=True, heartbeat_timeout=10))
    initialize_distributed(config.cluster)  # before jax.process_index() starts a backend
    if kill and jax.process_index() == 1:
        def die():  # process 1 dies without warning once the second checkpoint exists
            while not os.path.exists(os.path.join(root, "fault", "checkpoints", "2")):
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        threading.Thread(target=die, daemon=True).start()
    result = train(config)
    # A fingerprint per parameter array keeps the line short: sum, sum of squares, first value.
    params = [[float(np.sum(x)), float(np.sum(np.square(x))), float(np.ravel(x)[0])]
              for x in jax.tree.leaves(jax.device_get(result.state.train.params))]
    print("RESULT " + json.dumps({"process": jax.process_index(), "devices": len(jax.devices()),
          "params": params, "losses": [h["losses/total"] for h in result.history]}))
    """
)


@pytest.mark.slow
def test_killed_process_stops_the_run_and_resume_continues(tmp_path):
    script = tmp_path / "fault.py"
    script.write_text(FAULT_SCRIPT)
    launch = lambda *args: subprocess.run(
        [
            sys.executable,
            "-m",
            "podracer.runs.launch",
            "-n",
            "2",
            "-d",
            "1",
            "--timeout",
            "300",
            "--",
            sys.executable,
            str(script),
            str(tmp_path / "runs"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    killed = launch("fresh", "kill")
    assert killed.returncode != 0
    assert "stopping the others" in killed.stdout
    checkpoints = os.listdir(tmp_path / "runs" / "fault" / "checkpoints")
    assert "2" in checkpoints and "4" not in checkpoints
    resumed = launch("resume", "live")
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    results = _results(resumed.stdout)
    assert sorted(r["process"] for r in results) == [0, 1]
    lines = (tmp_path / "runs" / "fault" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["env_steps"] for x in lines] == [160, 320, 480, 640]
