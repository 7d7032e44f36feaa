"""`boardlab load`: drive a SOAP endpoint at fixed rates, open loop (timed from each request's intended
start, so a stalled server cannot hide) or closed loop (the vehicle-services study's client)."""

from __future__ import annotations

import json
import os
import sys

from boardlab.errors import InputError

DESCRIPTION = (
    "Sends SOAP requests to TARGET (http://HOST:PORT/PATH) or, with --serve, to boardlab's own management "
    "endpoint started on loopback. Open loop (default): requests start on a schedule whatever the responses "
    "do, and latency is measured from each request's intended start (corrected) as well as from its actual "
    "send (service time). Closed loop: each connection waits for its response, as the vehicle-services "
    "study's client did. --rates sweeps; --until-saturation stops at the first rate whose achieved rate is "
    "below 95% of the target, that has errors or timeouts, or whose corrected p99 exceeds --slo-p99-ms."
)


DEFAULT_STALL_MS = 200  # --serve-stall-ms


def add_arguments(p) -> None:
    p.add_argument("target", nargs="?", help="endpoint URL, e.g. http://127.0.0.1:18080/vdm (or use --serve)")
    p.add_argument(
        "--serve", action="store_true", help="start boardlab's SOAP endpoint on loopback and load it"
    )
    p.add_argument("--rate", type=float, help="one target rate in Hz (default 100)")
    p.add_argument("--rates", help="comma-separated target rates in Hz, run in order, e.g. 1,10,100,200")
    p.add_argument(
        "--until-saturation",
        action="store_true",
        help="stop at the first saturated rate and report it with the knee before it, exit 0 (a rate where "
        "every request failed counts as saturated); ramps 100, 200, 400, ... Hz when --rates is not given",
    )
    p.add_argument(
        "--slo-p99-ms", type=float, help="with --until-saturation: a corrected p99 above this saturates"
    )
    p.add_argument("--mode", choices=("open", "closed"), default="open", help="open (default) or closed loop")
    p.add_argument(
        "--arrival", choices=("constant", "poisson"), default="constant", help="open loop: spacing of starts"
    )
    p.add_argument(
        "--connections", type=int, default=1, help="TCP connections, one request outstanding on each (1)"
    )
    p.add_argument("--no-keepalive", action="store_true", help="a new connection for every request")
    p.add_argument("--duration-s", type=float, default=10.0, help="seconds per rate (default 10)")
    p.add_argument(
        "--timeout-ms", type=int, default=2000, help="a response later than this is a timeout (2000)"
    )
    p.add_argument(
        "--op", choices=("getStatus", "getPosition"), default="getStatus", help="operation to call"
    )
    p.add_argument(
        "--serve-stall-every-ms", type=int, default=0, help="with --serve: freeze the server this often"
    )
    p.add_argument(
        "--serve-stall-ms",
        type=int,
        help=f"with --serve-stall-every-ms: length of each freeze ({DEFAULT_STALL_MS})",
    )
    p.add_argument(
        "--samples",
        metavar="FILE",
        help="also write every request (intended and actual start, end, corrected latency, service time, "
        "outcome; ns) to this CSV file, schema in docs/services.md",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")


def _check(args) -> None:
    if bool(args.target) == bool(args.serve):
        raise InputError("give either a TARGET URL or --serve (not both, not neither)")
    if args.rate is not None and args.rates is not None:
        raise InputError("give --rate or --rates, not both")
    if args.rates is not None and not args.rates.strip(" ,"):  # was the default 100 Hz, as if not given
        raise InputError(f"--rates {args.rates!r}: expected comma-separated rates in Hz, e.g. 1,10,100,200")
    if not 0.05 <= args.duration_s <= 604800:
        raise InputError(f"--duration-s {args.duration_s:g}: expected 0.05 to 604800 seconds")
    if not 1 <= args.connections <= 4096:
        raise InputError(f"--connections {args.connections}: expected 1 to 4096")
    if args.rate is not None and not 0 <= args.rate <= 1e6:
        raise InputError(f"--rate {args.rate:g}: expected 0 to 1000000 Hz")
    if args.mode == "open" and args.rate == 0:
        raise InputError("--rate 0 means 'as fast as responses come': use it with --mode closed")
    if args.slo_p99_ms is not None and args.slo_p99_ms <= 0:
        raise InputError("--slo-p99-ms must be positive")
    if not 1 <= args.timeout_ms <= 600000:
        raise InputError(f"--timeout-ms {args.timeout_ms}: expected 1 to 600000")
    _check_stalls(args)
    if args.samples == "-" and args.json:  # the CSV, then the JSON: stdout would be neither
        raise InputError("--samples - and --json both write to stdout: give --samples FILE")


def _check_stalls(args) -> None:
    """The served endpoint's freezes: in svc.mgmt's ranges (outside them the server never starts, and the
    load saw "connection refused"), and only where they take effect."""
    every, length = args.serve_stall_every_ms, args.serve_stall_ms
    if not 0 <= every <= 3600000:
        raise InputError(f"--serve-stall-every-ms {every}: expected 0 (never) to 3600000")
    if length is not None and not 0 <= length <= 60000:
        raise InputError(f"--serve-stall-ms {length}: expected 0 to 60000")
    if length is not None and not every:  # a length of freezes that never come: no freeze at all
        raise InputError(
            f"--serve-stall-ms {length} is the length of each freeze of --serve-stall-every-ms: give that "
            "too (how often, above 0), or drop --serve-stall-ms"
        )
    if args.target and (every or length is not None):  # a TARGET is not boardlab's to freeze
        raise InputError(
            "--serve-stall-every-ms and --serve-stall-ms freeze boardlab's own endpoint: give --serve "
            "instead of TARGET, or drop them"
        )


def _ms(ns) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}"


def run(args) -> int:
    from boardlab.services import load

    _check(args)
    if args.samples:
        from boardlab.export import check_output

        check_output(args.samples, option="--samples")
    if args.rates:
        rates = load.parse_rates(args.rates)
    elif args.rate is not None:
        rates = (args.rate,)
    else:
        rates = load.ramp() if args.until_saturation else (100.0,)
    server = None
    if args.serve:
        from boardlab.services.launch import free_port, start_role

        port = free_port()
        total_s = len(rates) * (args.duration_s + args.timeout_ms / 1000 + 5) + 10
        server = start_role(
            "svc.mgmt",
            {
                "port": port,
                "duration_s": total_s,
                "stall_every_ms": args.serve_stall_every_ms,
                "stall_ms": DEFAULT_STALL_MS if args.serve_stall_ms is None else args.serve_stall_ms,
                "max_connections": max(256, args.connections + 16),  # room for every client connection
            },
        )
        target = load.Target("127.0.0.1", port, "/vdm")
    else:
        target = load.parse_target(args.target)

    text = sys.stderr if args.json or args.samples == "-" else sys.stdout  # stdout: the data's, when it is
    header = (
        f"{'target_hz':>10} {'achieved_hz':>11} {'ok':>8} {'err':>5} {'tmo':>5} {'late':>6} "
        f"{'corr_p50_ms':>11} {'corr_p99_ms':>11} {'svc_p50_ms':>10} {'svc_p99_ms':>10}  saturated"
    )

    def show(st) -> None:
        line = (
            f"{st.target_rate_hz:>10g} {st.achieved_rate_hz:>11.2f} {st.ok:>8} {st.errors:>5} "
            f"{st.timeouts:>5} {st.late_starts:>6} {_ms(st.corrected_p50_ns):>11} "
            f"{_ms(st.corrected_p99_ns):>11} {_ms(st.service_p50_ns):>10} {_ms(st.service_p99_ns):>10}  "
            f"{st.saturated_reason or 'no'}"
        )
        print(line, file=text, flush=True)

    if not args.json:
        print(
            f"load {target.url}: {args.mode} loop, {args.connections} connection(s), "
            f"keep-alive {'off' if args.no_keepalive else 'on'}, {args.duration_s:g} s per rate",
            file=text,
        )
        print(header, file=text)
    else:
        print(f"boardlab load: {target.url}, {len(rates)} rate(s) of {args.duration_s:g} s", file=sys.stderr)
    import tempfile

    tmpdir = tempfile.mkdtemp(prefix="boardlab-load-") if args.samples else None
    parts: list[tuple[float, str]] = []
    n = [0]

    def samples_for(rate: float) -> str | None:
        if not tmpdir:
            return None
        n[0] += 1
        parts.append((rate, os.path.join(tmpdir, f"{n[0]}.csv")))
        return parts[-1][1]

    try:
        steps = load.sweep(
            target,
            rates,
            until_saturation=args.until_saturation,
            on_step=show,
            samples_for=samples_for,
            mode=args.mode,
            arrival=args.arrival,
            connections=args.connections,
            keepalive=not args.no_keepalive,
            duration_s=args.duration_s,
            timeout_ms=args.timeout_ms,
            op=args.op,
            slo_p99_ms=args.slo_p99_ms,
        )
        if args.samples:
            from boardlab.export import write_output

            write_output(
                args.samples,
                load.merge_samples([p for p in parts if os.path.exists(p[1])]),
                option="--samples",
            )
            if args.samples != "-":
                print(f"wrote {args.samples}", file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
        if tmpdir:
            import shutil

            shutil.rmtree(tmpdir, ignore_errors=True)
    doc = load.document(target, steps, until_saturation=args.until_saturation, slo_p99_ms=args.slo_p99_ms)
    if args.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
    elif args.until_saturation:
        k = doc["knee_rate_hz"]
        last = steps[-1]
        print(f"knee: {k:g} Hz held" if k is not None else "knee: no rate held", end="", file=text)
        print(
            f"; saturated at {last.target_rate_hz:g} Hz ({last.saturated_reason})"
            if last.saturated_reason
            else "; no saturation within the rates tried",
            file=text,
        )
    return 0
