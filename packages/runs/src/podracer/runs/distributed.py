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

from podracer.agents.validation import ConfigError


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
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


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
    env_int = lambda name: int(os.environ[name]) if os.environ.get(name) else None
    address = config.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    kwargs = dict(
        coordinator_address=config.coordinator_address,
        coordinator_bind_address=bind_address(address, config.coordinator_bind_address),
        num_processes=config.num_processes
        if config.num_processes is not None
        else env_int("JAX_NUM_PROCESSES"),
        process_id=config.process_id
        if config.process_id is not None
        else env_int("JAX_PROCESS_ID"),
        initialization_timeout=config.initialization_timeout,
        heartbeat_timeout_seconds=config.heartbeat_timeout,
    )
    jax.distributed.initialize(**kwargs)
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
