"""`anakin`: the command line, generated from `AnakinConfig` and the agent registry."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from podracer.runs.signals import install

    install()  # first: Ctrl-C while the rest imports is one line, not a traceback
    from podracer.anakin.config import AnakinConfig
    from podracer.runs import run_cli

    def train(config):
        from podracer.anakin.run import train  # JAX starts here, after parsing

        return train(config)

    return run_cli(AnakinConfig, train, argv)


if __name__ == "__main__":
    sys.exit(main())
