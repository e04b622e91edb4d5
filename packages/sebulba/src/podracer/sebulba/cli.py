"""The `sebulba` command: a tyro CLI generated from `SebulbaConfig`."""

from __future__ import annotations

import math
import sys

from podracer.sebulba.config import SebulbaConfig
from podracer.sebulba.run import TrainResult
from podracer.sebulba.run import final_return
from podracer.sebulba.run import train


def run(argv: list[str] | None = None) -> TrainResult:
    """Parses `argv` into a `SebulbaConfig`, trains, prints a summary (process 0)."""
    import tyro  # CLI-only import

    from podracer.agents import is_main_process
    from podracer.agents import shutdown_distributed

    # tyro reports a failed field validation (__post_init__) and exits with status 2.
    config = tyro.cli(SebulbaConfig, args=argv, description="Train an agent with Sebulba.")
    try:
        result = train(config)
    finally:
        shutdown_distributed()  # after the final checkpoint, which train() wrote
    if is_main_process():
        ret = final_return(result)
        status = " (interrupted)" if result.interrupted else ""
        print(
            f"sebulba {config.agent} on {config.env}{status}: {result.env_steps:,} env steps, "
            f"{result.updates} updates, {result.sps:,.0f} SPS, final return "
            f"{'n/a' if math.isnan(ret) else f'{ret:.1f}'}"
            + (f", run dir {result.run_dir}" if result.run_dir else "")
        )
    return result


def main(argv: list[str] | None = None) -> int:
    """The console entry point: exit status 0, or 2 for a bad value found while building."""
    try:
        run(argv)
    except ValueError as e:
        print(f"sebulba: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
