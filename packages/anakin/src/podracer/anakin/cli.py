"""`anakin`: the command line, generated from `AnakinConfig` by tyro."""

from __future__ import annotations

import sys

import tyro

from podracer.anakin.config import AnakinConfig


def main(argv: list[str] | None = None) -> int:
    # tyro reports a failed field validation (__post_init__) and exits with status 2.
    config = tyro.cli(AnakinConfig, args=argv, description=AnakinConfig.__doc__)
    from podracer.agents import is_main_process
    from podracer.agents import shutdown_distributed
    from podracer.anakin.train import final_return  # JAX starts here, after parsing
    from podracer.anakin.train import train  # JAX starts here, after parsing

    try:
        result = train(config)
        main_process = is_main_process()
    except ValueError as e:
        print(f"anakin: error: {e}", file=sys.stderr)
        return 2
    finally:
        shutdown_distributed()  # after the final checkpoint, which train() wrote
    if not main_process:
        return 0
    print(
        f"anakin: {config.agent} on {config.env}: {result.env_steps:,} env steps, "
        f"{result.sps:,.0f} frames/s after {result.compile_seconds:.1f}s compile, "
        f"final return {final_return(result):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
