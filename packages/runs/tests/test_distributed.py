"""--distributed's options are checked before JAX sees them: each mistake is one line."""

import socket
import subprocess
import sys

import pytest

from podracer.agents.validation import ConfigError
from podracer.runs import DistributedConfig
from podracer.runs.distributed import bind_address
from podracer.runs.distributed import distributed_arguments

ON = DistributedConfig(distributed=True)


def config(**fields):
    return DistributedConfig(distributed=True, **fields)


def test_the_launcher_s_variables_make_the_arguments(tmp_path):
    with socket.socket() as s:  # a port free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}", "JAX_NUM_PROCESSES": "2",
           "JAX_PROCESS_ID": "0"}  # fmt: skip
    kwargs = distributed_arguments(ON, env)
    assert kwargs["num_processes"] == 2 and kwargs["process_id"] == 0
    assert kwargs["coordinator_bind_address"] == f"127.0.0.1:{port}"


@pytest.mark.parametrize(
    "fields, env, message",
    [
        ({}, {}, "no coordinator: give --coordinator-address HOST:PORT"),
        ({"coordinator_address": "host0"}, {}, "must be HOST:PORT with a port in 1..65535"),
        ({"coordinator_address": "host0:70000", "num_processes": 2, "process_id": 1}, {},
         "got 'host0:70000'"),
        ({"coordinator_address": "host0:1234", "process_id": 1}, {}, "--num-processes is needed"),
        ({"coordinator_address": "host0:1234", "num_processes": 2}, {}, "--process-id is needed"),
        ({}, {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "2",
              "JAX_PROCESS_ID": "2"}, "the process id must be in [0, 2), got 2"),
        ({}, {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_NUM_PROCESSES": "two",
              "JAX_PROCESS_ID": "0"}, "JAX_NUM_PROCESSES must be an integer, got 'two'"),
    ],
)  # fmt: skip
def test_a_mistake_is_one_line_naming_the_option(fields, env, message):
    with pytest.raises(ConfigError) as e:
        distributed_arguments(config(**fields), env)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_coordinator_port_in_use_is_refused_on_process_0():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        fields = dict(coordinator_address=f"127.0.0.1:{port}", num_processes=2)
        with pytest.raises(ConfigError, match=f"cannot listen at 127.0.0.1:{port}"):
            distributed_arguments(config(process_id=0, **fields), {})
        distributed_arguments(config(process_id=1, **fields), {})  # joins: does not listen


def test_on_a_cluster_jax_finds_the_processes():
    assert distributed_arguments(ON, {"SLURM_JOB_ID": "7"})["coordinator_address"] is None


def test_a_host_name_resolving_to_loopback_is_not_bound_to_loopback():
    # Debian maps the machine's own name to 127.0.1.1: other hosts reach it by its real
    # address, so its coordinator must listen on every interface (JAX's default).
    assert bind_address(f"{socket.gethostname()}:1234") is None
    assert bind_address("localhost:1234") == "localhost:1234"


SIGTERM_AFTER_JOINING = """
import os, signal, socket, sys, time
from podracer.runs import DistributedConfig, initialize_distributed
caught = []
signal.signal(signal.SIGTERM, lambda signum, frame: caught.append(signum))  # the CLI's, first
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
initialize_distributed(DistributedConfig(
    distributed=True, coordinator_address=f"127.0.0.1:{port}", num_processes=1, process_id=0))
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.5)
print("CAUGHT", caught)
"""


def test_sigterm_after_joining_still_reaches_the_run_s_handler():
    # Slurm's preemption notice: JAX's preemption service would take it from the handler
    # the command line installed before joining, and the run would train on.
    child = subprocess.run([sys.executable, "-c", SIGTERM_AFTER_JOINING], capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.splitlines()[-1] == "CAUGHT [15]", child.stderr[-2000:]
    assert "SIGTERM caught" not in child.stderr
