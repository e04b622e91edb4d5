"""`sebulba`: the command line, generated from `SebulbaConfig` and the agent registry."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from podracer.runs.signals import install

    install()  # first: Ctrl-C while the rest imports is one line, not a traceback
    from podracer.runs import run_cli
    from podracer.sebulba.config import SebulbaConfig

    def train(config):
        from podracer.sebulba.run import train  # JAX starts here, after parsing

        return train(config)

    return run_cli(SebulbaConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
