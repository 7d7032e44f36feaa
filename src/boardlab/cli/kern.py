"""`boardlab kern ARGS...`: run boardlab-kern with ARGS; `boardlab kern --path` prints where it is."""

from __future__ import annotations

import os
import sys

from boardlab.errors import BoardlabError

HELP = (
    "--path prints where boardlab-kern is; any other ARGS run it (exec: its exit status and output are its\n"
    "own). boardlab-kern's help follows."
)


def add_arguments(parser) -> None:  # only reached through `boardlab --help`; kern parses nothing itself
    parser.add_argument("args", nargs="*", help="arguments for boardlab-kern (try --help, --list)")


def passthrough(argv: list[str]) -> int:
    from boardlab.native import kern_path

    try:
        path = kern_path()
    except BoardlabError as exc:
        print(f"boardlab kern: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if argv == ["--path"]:
        print(path)
        return 0
    if argv in (["--help"], ["-h"]):  # boardlab's own option first: boardlab-kern's help cannot know it
        print(f"usage: boardlab kern --path\n       boardlab kern ARGS...\n\n{HELP}\n", flush=True)
    sys.stdout.flush()
    # exec keeps the kernel's exit code and signals, and puts no Python process between it and the timer.
    os.execv(path, [str(path), *argv])
    return 1  # not reached


def run(args) -> int:
    return passthrough(args.args)
