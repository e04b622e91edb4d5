"""Multi-host runs on JAX's own distributed runtime, shared by Anakin and Sebulba.

`initialize_distributed` wraps `jax.distributed.initialize`: with no arguments JAX auto-detects the
cluster (TPU pods, Slurm, Open MPI, Kubernetes via JAX's cluster plugins, or the
`JAX_COORDINATOR_ADDRESS` variable, with `JAX_NUM_PROCESSES` / `JAX_PROCESS_ID` read
here); explicit arguments override it. On CPU-only machines the cross-process collectives use gloo.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket

from podracer.agents import ConfigError


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """How this process joins a multi-process run (all None: auto-detect)."""

    distributed: bool = False  # join a multi-process run (jax.distributed.initialize) first
    coordinator_address: str | None = None  # host:port of process 0
    num_processes: int | None = None
    process_id: int | None = None
    # Where process 0's coordinator listens. None: the coordinator's own host when that is
    # a loopback address (a single-machine run: nothing outside can connect), else every
    # interface (JAX's default, so the other hosts reach it).
    coordinator_bind_address: str | None = None
    initialization_timeout: int = 300  # seconds to wait for every process to join
    heartbeat_timeout: int = 60  # seconds after which a silent process fails the others

    def __post_init__(self) -> None:
        if self.num_processes is not None and self.num_processes < 1:
            raise ConfigError(
                f"DistributedConfig.num_processes must be >= 1, got {self.num_processes}"
            )
        if (
            self.process_id is not None
            and self.num_processes is not None
            and not (0 <= self.process_id < self.num_processes)
        ):
            raise ConfigError(
                f"DistributedConfig.process_id must be in [0, {self.num_processes}), "
                f"got {self.process_id}"
            )
        if self.initialization_timeout < 1:
            raise ConfigError("DistributedConfig.initialization_timeout must be >= 1 second")


_initialized = False


def _is_loopback(host: str) -> bool:
    """Whether `host` names loopback itself (127.x, ::1, localhost). A host *name* that
    merely resolves to loopback here (Debian's 127.0.1.1 for the machine's own name) is
    not: the other hosts reach it by its real address, so the coordinator must not bind
    127.0.1.1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Where JAX may find a cluster's processes by itself (its auto-detection: Slurm, Open MPI,
# MPI, Kubernetes, Cloud TPU): without a coordinator address, --distributed is then left
# to JAX rather than refused.
_CLUSTER_VARIABLES = (
    "SLURM_JOB_ID", "OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
    "KUBERNETES_SERVICE_HOST", "TPU_WORKER_HOSTNAMES", "CLOUD_TPU_TASK_ID",
)  # fmt: skip


def _on_cluster(environ) -> bool:
    return any(environ.get(name) for name in _CLUSTER_VARIABLES) or os.path.exists("/dev/accel0")


def _fail(message: str) -> None:
    raise ConfigError(f"--distributed: {message}")


def distributed_arguments(config: DistributedConfig, environ=os.environ) -> dict:
    """`jax.distributed.initialize`'s arguments from `config` and the launcher's
    variables, checked first: a missing coordinator, a malformed address or port, a
    process id out of range or a coordinator port already bound on process 0's host are
    one line here, not a traceback, an abort or a hang inside JAX."""
    env_int = lambda name: _env_int(environ, name)
    address = config.coordinator_address or environ.get("JAX_COORDINATOR_ADDRESS")
    num_processes = (
        config.num_processes if config.num_processes is not None
        else env_int("JAX_NUM_PROCESSES")
    )  # fmt: skip
    process_id = config.process_id if config.process_id is not None else env_int("JAX_PROCESS_ID")
    on_cluster = _on_cluster(environ)
    if address is None:
        if not on_cluster:
            _fail("no coordinator: give --coordinator-address HOST:PORT with --num-processes "
                  "and --process-id (or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, "
                  "JAX_PROCESS_ID), run under Slurm, Open MPI or on a Cloud TPU, or use "
                  "`podracer launch` on one machine")  # fmt: skip
    else:
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            _fail(f"the coordinator address must be HOST:PORT with a port in 1..65535, "
                  f"got {address!r}")  # fmt: skip
        if not on_cluster:
            for name, value in (("--num-processes", num_processes), ("--process-id", process_id)):
                if value is None:
                    _fail(f"with a coordinator address, {name} is needed too (or its "
                          f"JAX_* variable)")  # fmt: skip
    if num_processes is not None and num_processes < 1:
        _fail(f"the number of processes must be >= 1, got {num_processes}")
    if process_id is not None and num_processes is not None and not 0 <= process_id < num_processes:
        _fail(f"the process id must be in [0, {num_processes}), got {process_id}")
    bind = bind_address(address, config.coordinator_bind_address)
    if process_id == 0 and address is not None:
        _check_port_free(bind or f"0.0.0.0:{address.rpartition(':')[2]}")
    return dict(
        coordinator_address=config.coordinator_address,
        coordinator_bind_address=bind,
        num_processes=num_processes,
        process_id=process_id,
        initialization_timeout=config.initialization_timeout,
        heartbeat_timeout_seconds=config.heartbeat_timeout,
    )


def _env_int(environ, name: str) -> int | None:
    value = environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        _fail(f"{name} must be an integer, got {value!r}")


def _check_port_free(address: str) -> None:
    """Process 0's coordinator will listen at `address`: refuse a port another program
    (another run's coordinator) holds, which JAX reports by aborting the process."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, int(port)))
        except OSError as e:
            _fail(f"process 0's coordinator cannot listen at {address}: {e.strerror or e} "
                  f"(another run's coordinator? choose another port)")  # fmt: skip


def bind_address(coordinator_address: str | None, bind: str | None = None) -> str | None:
    """The address process 0's coordinator binds: `bind` if given, else the coordinator's
    own address when it is on loopback, else None (JAX binds every interface)."""
    if bind or not coordinator_address:
        return bind
    host, _, port = coordinator_address.rpartition(":")
    return f"{host}:{port}" if host and _is_loopback(host.strip("[]")) else None


def initialize_distributed(config: DistributedConfig) -> None:
    """Joins the run described by `config` (a no-op when not enabled or already joined)."""
    global _initialized
    if not config.distributed or _initialized:
        return
    import jax

    # Only affects the CPU backend (it must be set before any backend starts, so it is
    # set unconditionally: asking which backend is in use would start one).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # JAX's preemption service would take SIGTERM (Slurm's, Kubernetes') from the run's
    # own handlers, installed before this by the command line: the run would neither stop
    # nor save. The run's stop vote already reaches every process (podracer.runs.signals).
    jax.config.update("jax_enable_preemption_service", False)
    kwargs = distributed_arguments(config)
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as e:  # noqa: BLE001 - e.g. a process id another process holds
        lines = str(e).strip().splitlines() or [type(e).__name__]
        _fail(f"joining the run failed: {lines[0][:300]}")
    _initialized = True


def shutdown_distributed() -> None:
    global _initialized
    if _initialized:
        import jax

        jax.distributed.shutdown()
        _initialized = False


def is_main_process() -> bool:
    import jax

    return jax.process_index() == 0
