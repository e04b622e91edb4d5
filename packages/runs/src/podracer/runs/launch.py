"""Launch N local processes of a multi-host run: how to try a pod on one machine.

    podracer launch --num-processes 2 --devices-per-process 2 -- \\
        anakin --distributed --num-envs 64

Each child gets `JAX_COORDINATOR_ADDRESS`, `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID` (read
by `jax.distributed.initialize`), fake CPU devices through `XLA_FLAGS`, and its output is
forwarded line by line with a `[p<id>]` prefix. If one process dies, the others are
stopped, and the launcher exits with the first failure's status.

A SIGTERM or SIGINT to the launcher (Slurm, Kubernetes, Ctrl-C) is forwarded to every
process, and the launcher waits for them to stop after their step with their final
checkpoints; a second one is forwarded too (they exit at once). Each process also gets
SIGTERM if the launcher itself dies (Linux's parent-death signal): none is left running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_write_lock = threading.RLock()  # re-entrant: the signal handler writes too


def _forward(proc: subprocess.Popen, prefix: str, out) -> None:
    for line in iter(proc.stdout.readline, ""):
        with _write_lock:  # whole lines: processes' output never interleaves mid-line
            out.write(f"{prefix} {line}")
            out.flush()


def _parent_death_signal():
    """A `preexec_fn` that has the child sent SIGTERM when the launcher dies (Linux; None
    elsewhere). prctl is looked up here, in the parent: the child only calls it."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)

    return preexec


def launch(
    command: list[str],
    num_processes: int,
    devices_per_process: int = 1,
    port: int | None = None,
    timeout: float | None = None,
    out=sys.stdout,
) -> int:
    """Runs `command` in `num_processes` local processes; returns the exit status."""
    if num_processes < 1 or devices_per_process < 1:
        raise ValueError("num_processes and devices_per_process must be >= 1")
    if not command:
        raise ValueError("no command to launch")
    if shutil.which(command[0]) is None and not os.path.exists(command[0]):
        raise ValueError(f"command not found: {command[0]!r}")
    address = f"127.0.0.1:{port or free_port()}"
    procs: list[subprocess.Popen] = []
    received: list[int] = []  # the signals forwarded so far

    def forward(signum: int, frame) -> None:
        received.append(signum)
        with _write_lock:
            name = signal.Signals(signum).name
            out.write(f"[launch] {name}: forwarded to every process; waiting for them to stop\n")
            out.flush()
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signum)

    main_thread = threading.current_thread() is threading.main_thread()
    previous = {}
    if main_thread:
        previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    preexec = _parent_death_signal()
    for i in range(num_processes):
        proc = subprocess.Popen(
            command,
            env=_process_env(address, num_processes, i, devices_per_process),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            preexec_fn=preexec,
        )
        threading.Thread(target=_forward, args=(proc, f"[p{i}]", out), daemon=True).start()
        procs.append(proc)

    try:
        status = _supervise(procs, timeout, out)
    finally:
        _stop(procs, received)
        for s, handler in previous.items():
            signal.signal(s, handler)
    return status


def _process_env(address: str, num_processes: int, index: int, devices: int) -> dict[str, str]:
    """Process `index`'s environment: JAX's multi-process variables, `devices` CPU devices."""
    return {
        **os.environ,
        "JAX_COORDINATOR_ADDRESS": address,
        "JAX_NUM_PROCESSES": str(num_processes),
        "JAX_PROCESS_ID": str(index),
        "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
        "XLA_FLAGS": (
            os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={devices}"
        ).strip(),
        "PYTHONUNBUFFERED": "1",
    }


def _supervise(procs: list[subprocess.Popen], timeout: float | None, out) -> int:
    """Waits until every process exits (0), one fails (its status) or `timeout` (124)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in procs]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            with _write_lock:
                out.write(
                    f"[launch] a process exited with status {failed[0]}; stopping the others\n"
                )
            return failed[0]
        if all(c is not None for c in codes):
            return 0
        if deadline is not None and time.monotonic() > deadline:
            with _write_lock:
                out.write(f"[launch] timed out after {timeout}s; stopping all processes\n")
            return 124
        time.sleep(0.1)


def _stop(procs: list[subprocess.Popen], received: list[int]) -> None:
    """Stops what still runs: after a forwarded signal they are stopping already (a second
    signal, or 20 s after our own SIGTERM: killed)."""
    for p in procs:
        if p.poll() is None and not received:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        while p.poll() is None:
            try:  # a forwarded signal: as long as their final checkpoints take
                p.wait(timeout=None if received and len(received) < 2 else 20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="podracer launch", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--num-processes", "-n", type=int, default=2)
    parser.add_argument("--devices-per-process", "-d", type=int, default=1)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds before all are stopped"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to run")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        return launch(
            command, args.num_processes, args.devices_per_process, args.port, args.timeout
        )
    except ValueError as e:
        parser.error(str(e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
