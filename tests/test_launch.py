"""The local launcher: its coordinator listens on loopback only, a failure stops all, a
signal reaches every process, and no process outlives it."""

import ast
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# Process 0 lists the sockets listening on the coordinator's port (from /proc/net/tcp and
# tcp6: local address and state 0A, LISTEN) once every process has joined.
SCRIPT = textwrap.dedent(
    """
    import os
    from podracer.runs import DistributedConfig, initialize_distributed
    import jax
    initialize_distributed(DistributedConfig(distributed=True))
    port = int(os.environ["JAX_COORDINATOR_ADDRESS"].rsplit(":", 1)[1])
    if jax.process_index() == 0:
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(table) as f:
                for line in f.readlines()[1:]:
                    local, state = line.split()[1], line.split()[3]
                    address, local_port = local.rsplit(":", 1)
                    if state == "0A" and int(local_port, 16) == port:
                        listening.append(address)
        print("LISTENING", sorted(listening))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/net")
def test_the_coordinator_of_a_local_launch_listens_on_loopback_only(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(SCRIPT)
    out = subprocess.run(
        [sys.executable, "-m", "podracer.runs.launch", "-n", "2", "--timeout", "120",
         "--", sys.executable, str(script)],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:]
    (line,) = [x for x in out.stdout.splitlines() if "LISTENING" in x]
    # 127.0.0.1 in /proc's little-endian hex, as IPv4 or IPv4-mapped IPv6 (::ffff:127.0.0.1);
    # all zeros (every interface, JAX's default) would be reachable from other machines.
    loopback = {"0100007F", "0000000000000000FFFF00000100007F"}
    addresses = ast.literal_eval(line.split("LISTENING ", 1)[1])
    assert addresses and set(addresses) <= loopback, line


def test_a_bind_address_is_only_chosen_for_a_loopback_coordinator():
    from podracer.runs.distributed import bind_address

    assert bind_address("127.0.0.1:1234") == "127.0.0.1:1234"
    assert bind_address("localhost:99") == "localhost:99"
    assert bind_address("10.1.2.3:1234") is None  # other hosts must reach it: JAX's default
    assert bind_address("10.1.2.3:1234", "0.0.0.0:1234") == "0.0.0.0:1234"  # as the user says
    assert bind_address(None) is None


# A stand-in for a training process: on SIGTERM/SIGINT it "saves" (a file, after 1 s)
# and exits 0, as a run does after its step.
CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    folder = sys.argv[1]
    def stop(signum, frame):
        time.sleep(1.0)
        name = signal.Signals(signum).name
        with open(os.path.join(folder, os.environ["JAX_PROCESS_ID"]), "w") as f:
            f.write(f"{os.getpid()} {name}")
        sys.exit(0)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print("ready", flush=True)
    time.sleep(600)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has exited
        return f.read().split()[2] != "Z"


def _launch_children(tmp_path):
    launcher = subprocess.Popen(
        [sys.executable, "-m", "podracer.runs.launch", "-n", "2", "--", sys.executable, "-c",
         CHILD, str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    ready = 0
    while ready < 2:
        line = launcher.stdout.readline()
        assert line, "the launcher ended early"
        ready += line.strip().endswith("ready")
    return launcher


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_to_the_launcher_reaches_every_process_and_it_waits_for_them(tmp_path, name):
    launcher = _launch_children(tmp_path)
    launcher.send_signal(getattr(signal, name))
    out, _ = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, out
    assert f"[launch] {name}: forwarded to every process" in out
    for i in ("0", "1"):  # each stopped by the forwarded signal, after its "checkpoint"
        pid, got = (tmp_path / i).read_text().split()
        assert got == name and not _alive(int(pid))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal")
def test_a_killed_launcher_leaves_no_process_running(tmp_path):
    launcher = _launch_children(tmp_path)
    launcher.kill()
    launcher.wait()
    launcher.stdout.close()
    deadline = time.monotonic() + 30
    while len(list(tmp_path.iterdir())) < 2:
        assert time.monotonic() < deadline, "a process outlived its launcher"
        time.sleep(0.1)
    for i in ("0", "1"):
        pid, got = (tmp_path / i).read_text().split()
        assert got == "SIGTERM"
        while _alive(int(pid)):
            assert time.monotonic() < deadline
            time.sleep(0.1)
