"""`podracer`: the tools around runs, one subcommand each.

podracer plot runs/a runs/b --aggregate iqm     curves, bands over seeds, a summary table
podracer launch -n 2 -- anakin --distributed    a multi-process run on this machine
podracer sweep-best runs/NAME                   a sweep's points ranked; the best one's config
"""

from __future__ import annotations

import sys

from podracer.envs.extras import install_command

_COMMANDS = {
    "eval": ("podracer.runs.tools.evaluate", "episodes of a saved agent, on any env of its spec"),
    "plot": ("podracer.runs.tools.plot", "curves of one or more runs, aggregated over seeds"),
    "launch": ("podracer.runs.launch", "run N local processes of a multi-host run"),
    "sweep-best": (
        "podracer.runs.tools.sweep_best",
        "a sweep's final return by point, and the best point's config",
    ),
}


# Modules of podracer-runs' extras, imported by the commands that use them.
_EXTRAS = {"matplotlib": "plot", "rliable": "plot", "pandas": "plot", "imageio": "video",
           "imageio_ffmpeg": "video"}  # fmt: skip


def _usage() -> str:
    lines = ["usage: podracer COMMAND [ARGS ...]", "", "commands:"]
    width = max(map(len, _COMMANDS))
    lines += [f"  {name:<{width}}  {doc}" for name, (_, doc) in _COMMANDS.items()]
    lines += ["", "`podracer COMMAND --help` shows a command's own flags."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import importlib

    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] not in _COMMANDS:
        print(f"podracer: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(_COMMANDS[argv[0]][0])
    try:
        return module.main(argv[1:])
    except ImportError as e:
        extra = _EXTRAS.get((e.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"podracer {argv[0]}: needs {e.name}, from the {extra} extra: "
              f"{install_command('podracer-runs', extra)}", file=sys.stderr)  # fmt: skip
        return 2


if __name__ == "__main__":
    sys.exit(main())
