"""`boardlab monitor -- CMD ... | --pid PID`: CPU, memory, context switches and network drops of a process
and its threads, every interval, with min/avg/max and hourly means."""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import os
import sys

from boardlab.errors import InputError

DESCRIPTION = (
    "Samples a process (--pid PID, repeatable) or a command it starts (after --) every --interval-s. CPU "
    "comes from /proc/PID/schedstat in nanoseconds (cpu_pct_one_cpu, cpu_pct_all_cpus) and from "
    "/proc/PID/stat in jiffies (cpu_jiffies_pct_one_cpu, the vehicle-services study's method: a whole number "
    "of USER_HZ ticks per interval, so a 1% process reads 0 or 1% each second). Also RSS, PSS, % of "
    "memory, voluntary and involuntary context switches per second, and UDP/TCP drops and retransmits from "
    "/proc/net/snmp and netstat (namespace-wide), per-socket UDP drops and per-interface drops. Prints a "
    "live table, then min/avg/max per process; --json prints one document instead, --csv PATH writes "
    "every interval. --duration-s cuts the last interval short. Exit status: 0; 1 when no complete interval "
    "was sampled or the command (-- CMD) failed on its own (its exit code is printed, and is "
    "command_exit_code in --json); 2 for bad input."
)


def add_arguments(p) -> None:
    p.add_argument("--pid", type=int, action="append", default=[], help="process to monitor (repeatable)")
    p.add_argument("--interval-s", type=float, default=1.0, help="sampling interval in seconds (default 1)")
    p.add_argument(
        "--duration-s", type=float, help="stop after this long (default: until the processes end or Ctrl-C)"
    )
    p.add_argument("--no-threads", action="store_true", help="do not account threads one by one")
    p.add_argument(
        "--json", action="store_true", help="print one JSON document at the end instead of the table"
    )
    p.add_argument("--csv", metavar="PATH", help=CSV_HELP)
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...: start CMD and monitor it")


CSV_HELP = "also write every interval of every process to PATH (CSV; -: standard output, the table on stderr)"


def _fmt(v, scale=1.0, digits=2) -> str:
    return "-" if v is None else f"{v / scale:.{digits}f}"


def _write_csv(path: str, rows) -> None:
    """Through the outputs' one writer (export.open_output): a new file or a regular one replaced whole, by a
    rename of a file of its own beside it. A device was replaced by a regular file (`--csv /dev/null`, as
    root), and PATH.tmp, whatever it was, written over."""
    from boardlab.export import open_output
    from boardlab.monitor.process import CSV_FIELDS

    with open_output(path, option="--csv") as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        w = csv.writer(fh)
        w.writerow(CSV_FIELDS)
        for r in rows:
            w.writerow([getattr(r, f) for f in CSV_FIELDS])
        fh.flush()
        fh.detach()  # the file is open_output's to close (or, for "-", standard output's)


def run(args) -> int:
    from boardlab.monitor.process import Monitor
    from boardlab.platform.spawn import spawn, stop_group

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    _check(args, cmd)
    data_out = args.json or args.csv == "-"  # standard output is the data's: the command's output and the
    # table go to standard error
    proc = None
    pids = list(args.pid)
    if cmd:
        try:
            proc = spawn(cmd, stdout=sys.stderr if data_out else None, stderr=None)
        except OSError as exc:
            raise InputError(f"cannot start {cmd[0]}: {exc.strerror}") from None
        pids = [proc.pid]
    mon = Monitor(pids=pids, interval_s=args.interval_s, threads=not args.no_threads)
    out = sys.stderr if data_out else sys.stdout
    if not args.json:
        print(HEADER, file=out, flush=True)
    interrupted = stopped = False
    try:
        mon.run(
            duration_s=args.duration_s,
            on_interval=(lambda batch, net: None) if args.json else functools.partial(_show, out=out),
            should_stop=(lambda: proc.poll() is not None) if proc else (lambda: False),
        )
    except KeyboardInterrupt:
        interrupted = True
    finally:
        if proc is not None and proc.poll() is None:
            stopped = True  # at --duration-s or Ctrl-C: its exit code is boardlab's signal, not a failure
            stop_group(proc)
    extra = {
        "command": cmd or None,
        "command_exit_code": proc.returncode if proc else None,
        "command_stopped": stopped,
        "interrupted": interrupted,
    }
    doc = mon.document(extra)
    failed = _failure(doc, proc is not None and not stopped)
    if args.csv and mon.rows:
        _write_csv(args.csv, mon.rows)  # open_output names the path of an OSError
    elif args.csv:  # an earlier file stays: there is nothing to replace it with
        print(f"boardlab monitor: --csv {args.csv}: not written (no interval)", file=sys.stderr)
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    else:
        if doc["processes"]:
            _print_summary(doc, out)
        if proc is not None:
            print(f"  command: {_command_end(doc)}", file=out)
    if failed:
        print(f"boardlab monitor: {failed}", file=sys.stderr)
    return 1 if failed else 0


def _failure(doc: dict, ended_itself: bool) -> str | None:
    """Why the exit status is 1 (None: 0): nothing was measured, or the command failed on its own."""
    if not doc["processes"]:
        return "no complete interval was sampled (the process ended first)"
    code = doc["command_exit_code"]
    if ended_itself and code:
        return f"the command {_command_end(doc)}"
    return None


def _command_end(doc: dict) -> str:
    code = doc["command_exit_code"]
    if doc["command_stopped"]:
        return "was stopped by boardlab (--duration-s or Ctrl-C)"
    return f"exited with code {code}" if code is not None and code >= 0 else f"was killed by signal {-code}"


HEADER = (
    f"{'t_s':>7} {'pid':>7} {'comm':<15} {'cpu%1cpu':>8} {'cpu%all':>7} {'jiffy%1':>7} {'rss_MiB':>8} "
    f"{'pss_MiB':>8} {'mem%':>6} {'vcsw/s':>7} {'ivcsw/s':>7} {'sockdrop':>8}"
)


def _check(args, cmd: list[str]) -> None:
    """What to watch and how, refused before anything starts."""
    if bool(cmd) == bool(args.pid):
        raise InputError("give either --pid PID or -- CMD ARGS... (not both, not neither)")
    if not 0.01 <= args.interval_s <= 3600:
        raise InputError(f"--interval-s {args.interval_s:g}: expected 0.01 to 3600 seconds")
    if args.duration_s is not None and not args.duration_s > 0:  # nan too
        raise InputError(f"--duration-s {args.duration_s:g}: expected a positive number of seconds")
    if args.csv == "-" and args.json:
        raise InputError("--csv - and --json both write to standard output: give --csv a file path")
    if args.csv:
        from boardlab.export import check_output

        check_output(args.csv, option="--csv")  # before anything starts: a device is refused, not replaced
    for pid in args.pid:
        if not os.path.exists(f"/proc/{pid}/stat"):
            raise InputError(f"--pid {pid}: no such process")


def _show(batch, net, *, out) -> None:
    """One interval: a line per process, then the network counters that moved."""
    for r in batch:
        print(
            f"{r.t_s:>7.1f} {r.pid:>7} {r.comm[:15]:<15} {_fmt(r.cpu_pct_one_cpu):>8} "
            f"{_fmt(r.cpu_pct_all_cpus):>7} {_fmt(r.cpu_jiffies_pct_one_cpu, digits=0):>7} "
            f"{_fmt(r.rss_bytes, 2**20, 1):>8} {_fmt(r.pss_bytes, 2**20, 1):>8} {_fmt(r.mem_pct):>6} "
            f"{_fmt(r.ctxsw_vol_per_s, digits=0):>7} {_fmt(r.ctxsw_invol_per_s, digits=0):>7} "
            f"{r.socket_drops if r.socket_drops is not None else '-':>8}",
            file=out,
            flush=True,
        )
    moved = {k: v for k, v in net.items() if k != "t_s" and v}
    if moved:
        print(
            "        net: " + ", ".join(f"{k} +{v}" for k, v in sorted(moved.items())), file=out, flush=True
        )


def _print_summary(doc: dict, out) -> None:
    """Min / avg / max per interval of each process, and the namespace's network deltas."""
    print("\nsummary (min / avg / max per interval)", file=out)
    for p in doc["processes"]:
        c, j, r = p["cpu_pct_one_cpu"], p["cpu_jiffies_pct_one_cpu"], p["rss_bytes"]
        print(f"  {p['pid']} {p['comm']}: {p['intervals']} intervals", file=out)
        if c["n"]:  # the name of each figure in --json and --csv
            print(
                f"    cpu_pct_one_cpu            {c['min']:.3f} / {c['avg']:.3f} / {c['max']:.3f}", file=out
            )
        print(f"    cpu_jiffies_pct_one_cpu    {j['min']:.0f} / {j['avg']:.3f} / {j['max']:.0f}", file=out)
        if r["n"]:
            print(
                f"    rss_MiB                    {r['min'] / 2**20:.1f} / {r['avg'] / 2**20:.1f} / "
                f"{r['max'] / 2**20:.1f}",
                file=out,
            )
    moved = {k: v for k, v in doc["net_totals"].items() if v}
    summary = ", ".join(f"{k} {v}" for k, v in sorted(moved.items())) or "none"
    print(f"  net (namespace-wide deltas): {summary}", file=out)
