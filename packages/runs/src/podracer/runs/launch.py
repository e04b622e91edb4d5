"""Launch N local processes of a multi-host run: how to try a pod on one machine.

    podracer launch --num-processes 2 --devices-per-process 2 -- \\
        anakin --distributed --num-envs 64

Each child gets `JAX_COORDINATOR_ADDRESS`, `JAX_NUM_PROCESSES`, `JAX_PROCESS_ID` (read
by `jax.distributed.initialize`), fake CPU devices through `XLA_FLAGS`, and its output is
forwarded line by line with a `[p<id>]` prefix. If one process dies, the others are
stopped, and the launcher exits with the first failure's status.
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


_write_lock = threading.Lock()


def _forward(proc: subprocess.Popen, prefix: str, out) -> None:
    for line in iter(proc.stdout.readline, ""):
        with _write_lock:  # whole lines: processes' output never interleaves mid-line
            out.write(f"{prefix} {line}")
            out.flush()


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
    procs = []
    for i in range(num_processes):
        env = {
            **os.environ,
            "JAX_COORDINATOR_ADDRESS": address,
            "JAX_NUM_PROCESSES": str(num_processes),
            "JAX_PROCESS_ID": str(i),
            "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu"),
            "XLA_FLAGS": (
                os.environ.get("XLA_FLAGS", "")
                + f" --xla_force_host_platform_device_count={devices_per_process}"
            ).strip(),
            "PYTHONUNBUFFERED": "1",
        }
        proc = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=_forward, args=(proc, f"[p{i}]", out), daemon=True).start()
        procs.append(proc)

    deadline = None if timeout is None else time.monotonic() + timeout
    status = 0
    try:
        while True:
            codes = [p.poll() for p in procs]
            failed = [c for c in codes if c not in (None, 0)]
            if failed:
                status = failed[0]
                with _write_lock:
                    out.write(
                        f"[launch] a process exited with status {status}; stopping the others\n"
                    )
                break
            if all(c == 0 for c in codes):
                break
            if deadline is not None and time.monotonic() > deadline:
                with _write_lock:
                    out.write(f"[launch] timed out after {timeout}s; stopping all processes\n")
                status = 124
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        status = 130
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return status


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
