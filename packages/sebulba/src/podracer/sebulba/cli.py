"""The `sebulba` command: a tyro CLI generated from `SebulbaConfig`."""

from __future__ import annotations

import math

from podracer.sebulba.config import SebulbaConfig
from podracer.sebulba.run import TrainResult
from podracer.sebulba.run import final_return
from podracer.sebulba.run import train


def main(argv: list[str] | None = None) -> TrainResult:
    import tyro  # CLI-only import

    config = tyro.cli(SebulbaConfig, args=argv, description="Train an agent with Sebulba.")
    result = train(config)
    ret = final_return(result)
    status = " (interrupted)" if result.interrupted else ""
    print(
        f"sebulba {config.agent} on {config.env}{status}: {result.env_steps:,} env steps, "
        f"{result.updates} updates, {result.sps:,.0f} SPS, final return "
        f"{'n/a' if math.isnan(ret) else f'{ret:.1f}'}"
        + (f", run dir {result.run_dir}" if result.run_dir else "")
    )
    return result


if __name__ == "__main__":
    main()
