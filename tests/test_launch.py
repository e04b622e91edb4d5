"""The local launcher: its coordinator listens on loopback only, and a failure stops all."""

import ast
import subprocess
import sys
import textwrap

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
