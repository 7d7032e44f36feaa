"""`boardlab run`: run a campaign from a plan or a preset, resumably, into a results database."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

HELP = "run a campaign (a plan file or --preset NAME) into a results database"
DESCRIPTION = (
    "Run a campaign: every cell (workload x parameters x condition) repeated as the plan says, each run a "
    "fresh pinned worker, monitored, and committed at once. Running the same plan on the same database "
    "again resumes it: finished runs are kept and none is done twice."
)
DEFAULT_DB = "boardlab.db"


def add_arguments(parser) -> None:
    parser.add_argument("plan", nargs="?", help="a plan file (TOML); see README for its keys")
    parser.add_argument("--preset", help="a bundled plan instead of a file (see `boardlab list --presets`)")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"results database (SQLite; default {DEFAULT_DB})")
    parser.add_argument(
        "--root", default="/", help="read (and later write) the board's /sys and /proc below DIR"
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start a new campaign even if this plan was run before"
    )
    parser.add_argument(
        "--monitor-hz", type=float, default=10.0, help="monitor sampling rate (default 10 Hz)"
    )
    parser.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON on stdout")
    parser.add_argument("--repetitions", type=int, help="override the plan's repetitions per cell")
    parser.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="override duration_s of timed workloads (rt.cyclictest)",
    )
    parser.add_argument(
        "--workload", action="append", metavar="NAME", help="run only this workload of the plan (repeatable)"
    )
    parser.add_argument(
        "--scale", type=float, help="scale repetitions, iterations and AI frames by this factor (e.g. 0.2)"
    )
    parser.add_argument(
        "--soak",
        metavar="DURATION",
        help="one long run per cell: duration_s = DURATION (e.g. 1h, 30m, 90s) and 1 repetition",
    )


def _soak_s(text: str) -> float:
    from boardlab.errors import InputError

    units = {"s": 1, "m": 60, "h": 3600}
    try:
        value = float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except (ValueError, KeyError):
        raise InputError(f"--soak {text!r}: expected a duration such as 1h, 30m or 90s") from None
    if not 1 <= value <= 604800:
        raise InputError(f"--soak {text!r}: expected 1 s to 7 days")
    return value


def _on_sigterm(signum, frame):
    raise KeyboardInterrupt  # the same orderly stop as Ctrl-C: the worker is stopped, stored runs kept


def run(args) -> int:
    import json

    from boardlab.campaign.plan import apply_overrides, load_plan
    from boardlab.campaign.runner import Runner
    from boardlab.cli.progress import TerminalProgress
    from boardlab.errors import InputError
    from boardlab.platform.sysroot import SysRoot
    from boardlab.store import Store
    from boardlab.workloads import all_workloads

    if bool(args.plan) == bool(args.preset):
        raise InputError("give a plan file or --preset NAME (one of them)")
    if not 0.1 <= args.monitor_hz <= 1000:
        raise InputError(f"--monitor-hz {args.monitor_hz}: expected a rate in [0.1, 1000] Hz")
    SysRoot(args.root).require_board_tree()
    catalog = {w.name: w for w in all_workloads()}
    plan = load_plan(args.plan, args.preset, catalog)  # validated before anything is written
    if args.soak is not None:
        if args.duration is not None or args.repetitions is not None:
            raise InputError("--soak sets the duration and the repetitions: drop --duration/--repetitions")
        args.duration, args.repetitions = _soak_s(args.soak), 1
    plan = apply_overrides(
        plan,
        catalog,
        repetitions=args.repetitions,
        duration_s=args.duration,
        scale=args.scale,
        only_workloads=args.workload,
    )
    signal.signal(signal.SIGTERM, _on_sigterm)
    progress = TerminalProgress(quiet=args.quiet)
    existed = os.path.exists(args.db)
    with Store.open(args.db) as store:
        runner = Runner(
            plan,
            catalog,
            store,
            root=args.root,
            progress=progress,
            monitor_interval_s=1.0 / args.monitor_hz,
            fresh=args.fresh,
        )
        try:
            outcome = runner.run()
        except InputError:
            if not existed:  # refused before anything ran: leave no empty results file behind
                store.close()
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(args.db + suffix)
            raise
        except KeyboardInterrupt:
            print(
                f"\ninterrupted: every finished run is kept in {args.db}; run the same command to resume",
                file=sys.stderr,
            )
            return 130
    if args.json:
        print(
            json.dumps(
                {
                    "schema": 1,
                    "campaign_id": outcome.campaign_id,
                    "status": outcome.status,
                    "runs_done": outcome.runs_done,
                    "runs_total": outcome.runs_total,
                    "reruns": outcome.reruns,
                    "resumed": outcome.resumed,
                    "db": args.db,
                    "monitor_cost_pct_of_core": outcome.monitor_cost_pct_of_core,
                    "loop_s": outcome.loop_s,
                }
            )
        )
    else:
        if outcome.runs_total and not args.quiet:  # the answer first: cells and verdicts
            from boardlab.report.analysis import analyze
            from boardlab.report.terminal import render_text

            with Store.open(args.db, create=False) as store:
                print(render_text(analyze(store, outcome.campaign_id)))
        print(
            f"campaign {plan.name}: {outcome.status}, {outcome.runs_done}/{outcome.runs_total} runs "
            f"in {args.db} (campaign id {outcome.campaign_id})"
        )
        if outcome.monitor_cost_pct_of_core is not None:
            print(
                f"monitor cost: {outcome.monitor_cost_pct_of_core:.2f}% of one core at {args.monitor_hz:g} Hz"
            )
        print(f"next: boardlab report --db {args.db} -o report.html")
    failed = progress.failures
    return 1 if failed and outcome.runs_done == 0 else 0
