"""Command-line entry point: the only layer that prints or exits.

Each subcommand lives in its own module exposing `add_arguments(parser)` and `run(args) -> int`; its one-line
help is its line of `COMMANDS` below.
Only the module of the chosen subcommand is imported, so `boardlab --help` stays instant.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import traceback

from boardlab import __version__
from boardlab.errors import EXIT_FAILURE, EXIT_USAGE, BoardlabError, InputError

# name -> (module, one-line help). Order is the order shown by --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("boardlab.cli.info", "inventory this board and check its environment for measurement"),
    "run": ("boardlab.cli.run", "run a campaign (a plan file or --preset NAME) into a results database"),
    "bench": (
        "boardlab.cli.bench",
        "benchmark commands head to head, under conditions (hyperfine's spelling), as a stored campaign",
    ),
    "list": ("boardlab.cli.list", "list workloads with their support status, parameters and metrics"),
    "restore": (
        "boardlab.cli.restore",
        "undo settings a killed boardlab left changed, from the restore journal",
    ),
    "export": ("boardlab.cli.export", "export every run of a results database (json, csv, parquet)"),
    "report": ("boardlab.cli.report", "report a campaign (HTML with plots, Markdown, or a text table)"),
    "compare": ("boardlab.cli.compare", "compare two campaigns (two boards or two sessions) cell by cell"),
    "history": (
        "boardlab.cli.history",
        "a plan's campaigns over time per board: each cell, what changed, regressions",
    ),
    "models": ("boardlab.cli.models", "generate the AI workload's models (MobileNet, SSD, ResNet) offline"),
    "kern": ("boardlab.cli.kern", "run the native kernel executable boardlab-kern (or print its --path)"),
    "governor": ("boardlab.cli.governor", "governor lab: snoop sweep, labels, tree to C, daemon, simulator"),
    "bundle": (
        "boardlab.cli.bundle",
        "pack boardlab for a board (armhf, arm64): wheel, boardlab-kern, install.sh",
    ),
    "xcheck": (
        "boardlab.cli.xcheck",
        "cross-check io.storage against fio or io.net against iperf3 (median ratio)",
    ),
    "load": (
        "boardlab.cli.load",
        "load a SOAP endpoint at fixed rates (open loop, CO-correct) and find its knee",
    ),
    "monitor": (
        "boardlab.cli.monitor",
        "account CPU, memory, context switches and drops of a process (--pid or -- CMD)",
    ),
    "ingest": (
        "boardlab.cli.ingest",
        "copy boards' results files into a shared store (PostgreSQL or SQLite)",
    ),
    "serve": (
        "boardlab.cli.serve",
        "serve a store read-only as web pages (boards, campaigns, history, running)",
    ),
    "fleet": ("boardlab.cli.fleet", "run a plan on many boards through labgrid, results into one store"),
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


M_ARENA_MAX = -8  # glibc's malloc.h: mallopt's parameter for the number of malloc arenas


def _one_malloc_arena_under_an_address_limit() -> None:
    """Under `ulimit -v` (RLIMIT_AS), a thread's first malloc reserves a 64 MiB arena of address space; where
    that does not fit, glibc falls back to an mmap and a munmap per allocation of that thread (a report of
    10^5 runs under the limit of tests/e2e/test_report_memory.py took 40 s instead of 2, in system time, with
    the store's check scanning in a thread). One arena shared by every thread fits where the first one did.
    Without a limit nothing changes: an arena per thread is faster there."""
    import resource

    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        return
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(M_ARENA_MAX, 1)
    except (OSError, AttributeError):  # a C library without mallopt (musl): nothing to set
        pass


def _stop_signal_default() -> None:
    """boardlab stops the workers and loads it starts with SIGINT (conditions/background.py, stressor.py), as
    Ctrl-C does. Started in the background by a shell without job control (`setsid nohup boardlab run ... &`,
    as a fleet starts a campaign on a board, or from a script's `cmd &`), it inherits SIGINT ignored, and an
    ignored signal stays ignored across exec: every load would ignore its stop and be killed
    STOP_GRACE_S later, and the campaign's own Ctrl-C would do nothing. A handler, unlike SIG_IGN, is reset
    to the default in each child at exec, so the default handler goes back in here."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _stop_on_term() -> None:
    """SIGTERM (`kill`, a service manager, a CI timeout) and SIGHUP (a closed SSH session) stop every command
    as Ctrl-C does, through its KeyboardInterrupt path: its programs stopped, its temporary files removed,
    its settings restored. By default they ended the interpreter at once, leaving an `xcheck`'s fio running
    and its files behind. A signal the caller ignores (`nohup`) stays ignored; `run`, `serve` and `governor`
    set their own."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, stop_as_ctrl_c)


def stop_as_ctrl_c(signum, frame):
    """A signal handler: the stop goes the way of Ctrl-C (KeyboardInterrupt), the command's orderly stop."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _stop_signal_default()
    _stop_on_term()
    _one_malloc_arena_under_an_address_limit()  # before any thread starts
    # `boardlab kern ARGS...` passes everything after `kern` through untouched.
    if argv and argv[0] == "kern":
        from boardlab.cli import kern

        return kern.passthrough(argv[1:])
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # said by the command's own parser, with its usage (argparse's own would show boardlab's)
        _innermost(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "_module", None) is None:
        parser.print_help()
        return EXIT_USAGE
    debug = os.environ.get("BOARDLAB_DEBUG", "") not in ("", "0")
    try:
        _refuse_empty_paths(_innermost(parser, args), args)
        return int(args._module.run(args) or 0)
    except KeyboardInterrupt:
        print(f"boardlab {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away (`| head`): nothing left to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:  # one line naming the place and the fix; the traceback only on request
        if debug:
            traceback.print_exc()
        error = _as_boardlab_error(exc, args)
        if error is None:
            print(
                f"boardlab {args.command}: internal error: {type(exc).__name__}: {_one_line(str(exc))} "
                "(a bug: run again with BOARDLAB_DEBUG=1 and report the traceback)",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        print(f"boardlab {args.command}: error: {_one_line(str(error))}", file=sys.stderr)
        return error.exit_code


# The options, across commands, whose value is a file or directory. An empty one reads as "." to the OS or
# as "not given" to the code (`args.out or default`): `--root ''` took the current directory for the board,
# `models build --out ''` built into the default cache, `report -o ''` printed to stdout.
PATH_OPTIONS = frozenset({
    "root", "db", "output", "out", "c_out", "plan_out", "export_json", "export_markdown", "source_dir",
    "tree", "trace", "html", "kern", "path", "job_out", "samples", "csv", "token_file", "bundle", "ssh_key",
    "lg_env", "remote_dir", "keep",
})  # fmt: skip


def _refuse_empty_paths(parser: argparse.ArgumentParser, args) -> None:
    """An empty path option is refused (exit 2) before the command runs, naming the option."""
    for action in parser._actions:
        if action.dest in PATH_OPTIONS and action.option_strings and getattr(args, action.dest, None) == "":
            raise InputError(f"{'/'.join(action.option_strings)} '': an empty path; give a file or directory")


def _innermost(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the (sub)command `args` chose: `governor sweep`'s, not boardlab's. Every subcommand
    level names its choice in `args` (add_subparsers' dest)."""
    while True:
        subs = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = subs.choices.get(getattr(args, subs.dest, "")) if subs is not None else None
        if chosen is None:
            return parser
        parser = chosen


def _one_line(text: str) -> str:
    from boardlab.report.escape import term

    return term(" ".join(text.split()))


def _as_boardlab_error(exc: Exception, args) -> BoardlabError | None:
    """Maps what the operating system or a database driver raised to a BoardlabError; None for a bug."""
    if isinstance(exc, BoardlabError):
        return exc
    if isinstance(exc, OSError):
        from boardlab.errors import os_error

        return os_error(exc)
    from boardlab.store import driver_error  # a database driver's error, named by the store

    return driver_error(exc, str(getattr(args, "db", None) or "the results database"))
