"""`boardlab run`: run a campaign from a plan or a preset, resumably, into a results database."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys

DESCRIPTION = (
    "Run a campaign: every cell (workload x parameters x condition) repeated as the plan says, each run a "
    "fresh pinned worker, monitored, and stored as it ends (short runs half a second at a time). Running the "
    "same plan on the same database again resumes it: finished runs are kept and none is done twice."
)
DEFAULT_DB = "boardlab.db"


def add_arguments(parser) -> None:
    parser.add_argument("plan", nargs="?", help="a plan file (TOML); see README for its keys")
    parser.add_argument("--preset", help="a bundled plan instead of a file (see `boardlab list --presets`)")
    parser.add_argument("--db", default=DEFAULT_DB, help=f"results database (SQLite; default {DEFAULT_DB})")
    parser.add_argument(
        "--root",
        default="/",
        help="read (and later write) the board's /sys and /proc below DIR (a plan's [sweep] expands from it)",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="start a new campaign even if this plan was run before"
    )
    parser.add_argument(
        "--label",
        metavar="TEXT",
        help="name what changed since the last campaign (e.g. 'kernel 6.6 -> 6.12'); `boardlab "
        "history` shows it",
    )
    parser.add_argument(
        "--commit",
        metavar="auto|SHA",
        help="the commit this campaign measures, stored with it for `history` (its JUnit and annotation "
        "outputs, --bisect) and `serve`: auto asks git in --source-dir (`git rev-parse HEAD` and `git "
        "describe --always --dirty`); a resume under another commit is refused",
    )
    parser.add_argument(
        "--source-dir",
        metavar="DIR",
        help="the git checkout --commit auto reads (default: the current directory)",
    )
    parser.add_argument(
        "--branch",
        metavar="NAME",
        help="the branch measured (default with --commit auto: the one checked out)",
    )
    parser.add_argument(
        "--commit-describe",
        metavar="NAME",
        help="with --commit SHA: its `git describe` name (what a fleet run passes to each board)",
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
        "--peer",
        metavar="HOST[:PORT]",
        help="io.net sends to `boardlab-kern net-sink --listen 0.0.0.0:PORT` running on HOST (default port "
        "7300) over the real link, instead of a sink on loopback",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="load and check the plan (and the overrides), print its cells, runs, comparisons, an estimated "
        "duration (from earlier runs in --db) and whether a verdict is reachable; run and write nothing",
    )
    parser.add_argument(
        "--gate-timeout",
        type=float,
        metavar="SECONDS",
        help="how long each run may wait for an idle, cool board before it starts anyway (the plan's [gates] "
        "timeout_s, 30 s unless it says; the wait and whether it gave up are stored with each run). A "
        "resumed campaign takes it too; the dry-run's estimate uses it",
    )
    add_wait_arguments(parser)
    add_full_check_argument(parser)
    parser.add_argument(
        "--soak",
        metavar="DURATION",
        help="one long run per cell: duration_s = DURATION (e.g. 1h, 30m, 90s) and 1 repetition",
    )


def add_full_check_argument(parser) -> None:
    """--full-check: what a command that writes a SQLite store (run, bench, ingest) checks of it first."""
    parser.add_argument(
        "--full-check",
        action="store_true",
        help="check the whole SQLite store before writing (SQLite's quick_check), as is done anyway for a "
        "store up to 1 GiB; a larger one gets a check of its header and of every table but the runs' (the "
        "whole file takes minutes at 10^7 runs)",
    )


def add_wait_arguments(parser) -> None:
    """--wait SECONDS / --no-wait: what a command that changes a board's settings (run, governor run,
    restore) does when another boardlab holds them (the system lock, docs/safety.md)."""
    wait = parser.add_mutually_exclusive_group()
    wait.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="when another boardlab holds this board's system settings, wait at most SECONDS for it "
        "(default: wait as long as it takes, saying who holds them)",
    )
    wait.add_argument(
        "--no-wait", action="store_true", help="exit at once (code 2) when another boardlab holds them"
    )


def check_wait(args) -> None:
    """--wait in range, before anything is read: the lock takes a negative wait for --no-wait (its refusal
    then names an option never given) and never runs out of a nan one (every comparison with it is false)."""
    from boardlab.errors import InputError

    if args.wait is not None and not 0 <= args.wait <= 30 * 86400:
        raise InputError(f"--wait {args.wait:g}: expected 0 to 2592000 seconds (30 days)")


def take_system_lock(sr, what: str, args):
    """The system lock of the tree `sr`, taken as a campaign takes it (campaign.runner): waiting as --wait
    or --no-wait says and saying for whom on stderr. The caller releases it."""
    from boardlab.campaign.holder import with_progress
    from boardlab.conditions.journal import SystemLock

    check_wait(args)

    lock = SystemLock(sr, what)
    say = with_progress(lock.path, lambda line: print(line, file=sys.stderr, flush=True))
    lock.acquire(0.0 if args.no_wait else args.wait, say)
    return lock


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


def _dry_run_text(plan, summary) -> str:
    d = summary.to_dict()
    runs = f"{d['runs']}" if d["runs"] == d["runs_max"] else f"{d['runs']} (pilot) to {d['runs_max']} (cap)"
    if d["estimated_duration_s"] is None:
        duration = f"unknown: {d['estimate_basis']}"
    else:
        duration = f"about {d['estimated_duration_s'] / 60:.1f} min ({d['estimate_basis']})"
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}[d["correction"]]
    lines = [
        f"plan {plan.name} ({plan.source_name}): checked, nothing run",
        f"cells: {d['cells']}",
        f"runs: {runs}",
        f"comparisons: {d['comparisons']} (one family, {method})",
        f"estimated duration: {duration}",
    ]
    lines += [f"skipped here: {name}: {why}" for name, why in d["skipped_workloads"].items()]
    lines += _skipped_lines(d)
    if not d["verdict_reachable"]:  # a refused plan, or none of its comparisons runnable here, too
        lines.append(f"verdict reachable: NO: {d['message']}")
    elif d["comparisons"] == 0:
        lines.append("verdict reachable: no comparison in this plan (baselines only), so no verdict to reach")
    else:
        lines.append(
            f"verdict reachable: yes ({d['runs_per_arm']} runs per arm; the test's p-value is not floored by "
            f"n: {d['repetitions_needed']} per arm is the verdict rule's minimum)"
        )
    return "\n".join(lines + _power_lines(d))


def _dry_run_exit(plan, summary) -> int:
    """The code a real run of this plan would exit with before its first run: 2 where the runner refuses
    it (something unsupported under runs.unsupported = "fail", or no workload runnable here), so a script
    that checks a plan with --dry-run learns what the run would do; else 0."""
    from boardlab.errors import EXIT_USAGE
    from boardlab.report.escape import term

    why = summary.refused
    if why is None and summary.cells == 0:  # the runner's own refusal (campaign.runner)
        why = f"{plan.source_name}: no workload of this plan is supported here"
    if why is None:
        return 0
    print(f"boardlab run: refused here: {term(why)}: a real run stops before its first run", file=sys.stderr)
    return EXIT_USAGE


def _drop_if_empty(store, db: str) -> None:
    """Leave no empty results file behind when nothing ran (never one holding a run)."""
    if store.created and not store.has_runs():
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(db + suffix)


def _skipped_lines(d: dict) -> list[str]:
    """Conditions and cells this board cannot run: listed with the reason; their runs are not counted."""
    lines = [f"skipped here: condition {name}: {why}" for name, why in d["skipped_conditions"].items()]
    lines += [f"skipped here: {key}: unsupported: {why}" for key, why in d["skipped_cells"].items()]
    if d["refused"]:
        lines.append(f"refused here: {d['refused']}")
    return lines


def _listing_text(listing: dict) -> str:
    """Every workload and condition of the plan: ok, or unsupported here with the reason."""

    def line(kind: str, item: dict, what: str) -> str:
        reason = item["reason"]
        if not reason:
            return f"{kind} {item['name']} ({what}): ok"
        return f"{kind} {item['name']} ({what}): unsupported here: {reason.removeprefix('unsupported: ')}"

    lines = [line("workload", w, w["family"]) for w in listing["workloads"]]
    lines += [line("condition", c, " + ".join(c["parts"])) for c in listing["conditions"]]
    return "\n".join(lines)


def _power_lines(d: dict) -> list[str]:
    """The allocation and the repetitions for 80% power (campaign.advice), for the text dry-run."""
    lines = []
    refs = d["allocation"].get("reference_cells", {})
    shared = {v["runs"] for v in refs.values() if v["comparisons"] > 1}
    if shared:
        runs = ", ".join(map(str, sorted(r for r in shared if r is not None)))
        lines.append(f"allocation: {d['allocation']['rule']}; shared reference cells get {runs} runs")
    elif refs:
        lines.append(
            f"allocation: {d['allocation']['rule']}; no reference cell is shared by several comparisons"
        )
    if d["repetitions_for_power"] is not None:
        seconds = d["repetitions_for_power_duration_s"]
        when = f"about {seconds / 60:.1f} min" if seconds is not None else "duration unknown"
        lines.append(
            f"repetitions for 80% power: {d['repetitions_for_power']} ({when} at that count): "
            f"{d['repetitions_for_power_how']}"
        )
        lines += [f"  {p['workload']}: {p['advice']}" for p in d["power"]]
    return lines


def execute_plan(plan, catalog, args, identity, *, fresh: bool):
    """The campaign of a checked plan into `args.db` (the runner, the summary kept for serve and history):
    (outcome, progress), or the exit code when it was stopped before it ended (130). `args` holds
    db, root, quiet, monitor_hz, wait, no_wait, label and full_check, as `run` and `bench` parse them."""
    from boardlab.campaign.runner import Runner
    from boardlab.cli import stop_as_ctrl_c
    from boardlab.cli.progress import TerminalProgress
    from boardlab.conditions.journal import LockWaitInterrupted
    from boardlab.errors import InputError
    from boardlab.report.escape import term
    from boardlab.store import Store

    # The same orderly stop as Ctrl-C (the worker and loads stopped, settings restored, stored runs kept),
    # SIGHUP too even where it was ignored: a closed SSH session is the common way a session on a board ends
    signal.signal(signal.SIGTERM, stop_as_ctrl_c)
    signal.signal(signal.SIGHUP, stop_as_ctrl_c)
    progress = TerminalProgress(quiet=args.quiet)

    def note(text: str) -> None:  # the bounded check of a large store (Store.open)
        print(f"note: {term(text)}", file=sys.stderr)

    # locked for the whole campaign: a second run is refused
    with Store.open(args.db, full_check=args.full_check, note=note) as store:
        runner = Runner(
            plan,
            catalog,
            store,
            root=args.root,
            progress=progress,
            monitor_interval_s=1.0 / args.monitor_hz,
            fresh=fresh,
            lock_wait_s=0.0 if args.no_wait else args.wait,
            label=args.label,
            identity=identity,
        )
        try:
            outcome = runner.run()
            if outcome.runs_done:  # its summary for `boardlab serve` and `history` (boardlab.summary)
                from boardlab.summary import keep_after

                keep_after(
                    store,
                    [outcome.campaign_id],
                    lambda text: print(f"warning: {term(text)}", file=sys.stderr),
                )
        except InputError:
            _drop_if_empty(store, args.db)  # refused before anything ran
            raise
        except LockWaitInterrupted:
            _drop_if_empty(store, args.db)
            with contextlib.suppress(OSError):
                print("\ninterrupted while waiting for the system settings: nothing ran", file=sys.stderr)
            return 130
        except KeyboardInterrupt:
            with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone: the exit code stays
                print(
                    f"\ninterrupted: every finished run is kept in {term(args.db)}; run the same command to "
                    "resume",
                    file=sys.stderr,
                )
            return 130
    return outcome, progress


def run(args) -> int:
    import json

    from boardlab.campaign.plan import (
        PlanUnsupported,
        apply_overrides,
        expand_sweep,
        load_plan,
        plan_catalog,
        with_gate_timeout,
    )
    from boardlab.errors import InputError
    from boardlab.platform.sysroot import SysRoot
    from boardlab.workloads import all_workloads

    _check_run_options(args)
    from boardlab.campaign.identity import resolve

    identity = resolve(args.commit, args.branch, args.source_dir, args.commit_describe)
    SysRoot(args.root).require_board_tree()
    catalog = {w.name: w for w in all_workloads()}
    try:  # validated (and a [sweep] expanded from the board under --root) before anything is written
        plan = expand_sweep(load_plan(args.plan, args.preset, catalog), args.root)
    except PlanUnsupported as exc:
        print(f"boardlab run: unsupported: {exc}", file=sys.stderr)
        return 1
    catalog = plan_catalog(plan, catalog)  # and the workloads the plan declares
    if not args.quiet:
        for note in plan.notes:
            print(note, file=sys.stderr)
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
        peer=args.peer,
    )
    plan = with_gate_timeout(plan, args.gate_timeout)
    from boardlab.campaign.reach import summarize_plan

    summary = summarize_plan(plan, catalog, db=args.db, root=args.root, repetitions_flag=args.repetitions)
    if args.dry_run:
        from boardlab.campaign.checks import plan_listing

        listing = plan_listing(plan, catalog, summary.to_dict())  # what runs here, and why not
        if args.json:
            print(json.dumps({**summary.to_dict(), **listing}))
        else:
            print(_dry_run_text(plan, summary) + "\n" + _listing_text(listing))
        return _dry_run_exit(plan, summary)
    if (
        summary.reach.message and not summary.refused
    ):  # said before the first run; the plan still runs (docs/method.md)
        print(f"warning: {plan.source_name}: {summary.reach.message}", file=sys.stderr)
    got = execute_plan(plan, catalog, args, identity, fresh=args.fresh)
    if isinstance(got, int):
        return got
    outcome, progress = got
    _print_outcome(args, plan, summary, outcome)
    if progress.measured_nothing:
        said = f"all {progress.failures} runs failed: nothing was measured (each run's line above says why)"
        print(f"boardlab run: {said}", file=sys.stderr)
        return 1
    return 0


def _check_run_options(args) -> None:
    """The plan choice, the store (a board's own file) and the numeric options, before anything is read."""
    from boardlab.errors import InputError

    if bool(args.plan) == bool(args.preset):
        raise InputError("give a plan file or --preset NAME (one of them)")
    check_campaign_options(args)
    if not 0.1 <= args.monitor_hz <= 1000:
        raise InputError(f"--monitor-hz {args.monitor_hz}: expected a rate in [0.1, 1000] Hz")


def check_campaign_options(args) -> None:
    """What `run` and `bench` (both execute_plan) check alike before anything is read: the store is a
    board's own file, and --wait is in range."""
    from boardlab.errors import InputError

    if args.db.startswith(("postgresql://", "postgres://")):  # the board's own file, copied later
        raise InputError(
            f"--db {args.db.split('@')[-1]}: a campaign writes a SQLite file on the board it measures; "
            "give a file path, then `boardlab ingest FILE --db postgresql://...` copies it into the "
            "shared store"
        )
    check_wait(args)


def _print_outcome(args, plan, summary, outcome) -> None:
    """The campaign's end: its JSON record, or the cells and verdicts, where the runs are and what next."""
    import json

    from boardlab.report.escape import term
    from boardlab.store import Store

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
                    "lock_waited_s": outcome.lock_waited_s,  # for another boardlab's system settings
                    "verdict_reachable": summary.reach.reachable,
                    "repetitions_needed": summary.reach.repetitions_needed,
                    "reachability": summary.reach.message,
                }
            )
        )
    else:
        if outcome.runs_total and not args.quiet:  # the answer first: cells and verdicts
            from boardlab.analysis import analyze
            from boardlab.report.terminal import render_text

            with Store.open(args.db, create=False) as store:
                print(render_text(analyze(store, outcome.campaign_id)))
        print(
            f"campaign {term(plan.name)}: {outcome.status}, {outcome.runs_done}/{outcome.runs_total} runs "
            f"in {term(args.db)} (campaign id {outcome.campaign_id})"
        )
        if outcome.monitor_cost_pct_of_core is not None:
            print(
                f"monitor cost: {outcome.monitor_cost_pct_of_core:.2f}% of one core at {args.monitor_hz:g} Hz"
            )
        print(f"next: boardlab report --db {shlex.quote(term(args.db))} -o report.html")
