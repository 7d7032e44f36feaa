"""Command-line entry point: the only layer that prints or exits.

Each subcommand lives in its own module exposing `HELP`, `add_arguments(parser)` and `run(args) -> int`.
Only the module of the chosen subcommand is imported, so `boardlab --help` stays instant.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from boardlab import __version__
from boardlab.errors import EXIT_USAGE, BoardlabError

# name -> (module, one-line help). Order is the order shown by --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("boardlab.cli.info", "inventory this board and check its environment for measurement"),
    "run": ("boardlab.cli.run", "run a campaign (a plan file or --preset NAME) into a results database"),
    "list": ("boardlab.cli.list", "list workloads with their support status, parameters and metrics"),
    "restore": (
        "boardlab.cli.restore",
        "undo settings a killed boardlab left changed, from the restore journal",
    ),
    "export": ("boardlab.cli.export", "export every run of a results database (json, csv, parquet)"),
    "report": ("boardlab.cli.report", "report a campaign (HTML with plots, Markdown, or a text table)"),
    "compare": ("boardlab.cli.compare", "compare two campaigns (two boards or two sessions) cell by cell"),
    "models": ("boardlab.cli.models", "generate the AI workload's models (MobileNet, SSD, ResNet) offline"),
    "kern": ("boardlab.cli.kern", "run the native kernel executable boardlab-kern (or print its --path)"),
    "load": (
        "boardlab.cli.load",
        "load a SOAP endpoint at fixed rates (open loop, CO-correct) and find its knee",
    ),
    "monitor": (
        "boardlab.cli.monitor",
        "account CPU, memory, context switches and drops of a process (--pid or -- CMD)",
    ),
}


def _chosen_command(argv: list[str]) -> str | None:
    for token in argv:
        if token in COMMANDS:
            return token
        if not token.startswith("-"):
            return None
    return None


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="boardlab",
        description="Measure how fast a workload runs on this board, how steadily, at what cost, "
        "and what disturbs it.",
    )
    parser.add_argument("--version", action="version", version=f"boardlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen_command(argv)
    for name, (module_name, help_text) in COMMANDS.items():
        if name == chosen:
            module = importlib.import_module(module_name)
            p = sub.add_parser(name, help=help_text, description=getattr(module, "DESCRIPTION", help_text))
            module.add_arguments(p)
            p.set_defaults(_module=module)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `boardlab kern ARGS...` passes everything after `kern` through untouched.
    if argv and argv[0] == "kern":
        from boardlab.cli import kern

        return kern.passthrough(argv[1:])
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._module.run(args) or 0)
    except BoardlabError as exc:
        print(f"boardlab {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"boardlab {args.command}: interrupted", file=sys.stderr)
        return 130
