"""`boardlab xcheck io.storage|io.net`: boardlab's I/O workloads against fio and iperf3 on the same job."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from boardlab.errors import InputError, MeasurementError

DESCRIPTION = (
    "Runs boardlab's workload and the reference tool on the same job in pairs of alternating order (A B, "
    "B A, ...) with the same CPU pinning, and prints per metric the median of the pairwise ratios boardlab / "
    "reference, and the ratio per order (an order effect cancels in the median and shows there). io.storage "
    "is compared with fio (the equivalent job file is printed), io.net with iperf3 on loopback or the given "
    "host (the equivalent command is printed)."
)


def size_arg(text: str) -> int:
    from boardlab.model.units import parse_size

    size = parse_size(text)
    if size is None:
        import argparse

        raise argparse.ArgumentTypeError(
            f"expected a size in bytes with an optional k/M/G suffix, got {text!r}"
        )
    return size


def add_arguments(parser) -> None:
    parser.add_argument(
        "workload", choices=("io.storage", "io.net"), help="what to cross-check"
    )  # CHECKS' keys
    parser.add_argument(
        "--pairs", type=int, default=10, help="pairs, alternating which tool runs first (default 10)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the pairs and median_ratio per metric as JSON"
    )
    s = parser.add_argument_group("io.storage (against fio)")
    s.add_argument(
        "--path", help="a file that does not exist (laid out, then removed) or a block device to test"
    )
    s.add_argument("--op", choices=("read", "write", "randrw"), default="read")
    s.add_argument("--pattern", choices=("seq", "rand"), default="seq")
    s.add_argument(
        "--bs", type=size_arg, default=128 * 1024, help="block size in bytes, k/M suffixes (default 128k)"
    )
    s.add_argument("--size", type=size_arg, default=64 * 1024**2, help="region in bytes (default 64M)")
    s.add_argument("--direct", type=int, choices=(0, 1), default=1, help="O_DIRECT (default 1)")
    s.add_argument("--engine", choices=("psync", "io_uring"), default="psync")
    s.add_argument("--iodepth", type=int, default=1)
    s.add_argument("--fsync", choices=("none", "each", "end"), default="none")
    s.add_argument(
        "--runtime-s",
        type=float,
        default=3.0,
        help="seconds each tool runs (fio's time-based runtime, to the millisecond; default 3)",
    )
    s.add_argument("--cpu", type=int, help="pin both tools to this CPU")
    s.add_argument(
        "--destructive", action="store_true", help="allow writing to a block device (data is lost)"
    )
    s.add_argument("--job-out", help="also save the fio job file here")
    n = parser.add_argument_group("io.net (against iperf3)")
    n.add_argument(
        "--mode",
        choices=("tcp", "udp", "zeroloss"),
        default="tcp",
        help="tcp stream, paced udp, or zeroloss: the highest UDP rate without loss by the same binary "
        "search (RFC 2544) on both sides, each trial a one-second run",
    )
    n.add_argument(
        "--send-path",
        choices=("write", "sendfile"),
        default="write",
        help="tcp: write(2), or sendfile(2) on both sides (iperf3 -Z)",
    )
    n.add_argument("--lo-bit-s", type=float, default=10e6, help="zeroloss: lowest rate tried (default 10e6)")
    n.add_argument("--hi-bit-s", type=float, default=1e9, help="zeroloss: highest rate tried (default 1e9)")
    n.add_argument(
        "--resolution", type=float, default=0.05, help="zeroloss: relative width where the search stops"
    )
    n.add_argument(
        "--host", default="127.0.0.1", help="address the sink/server listens on (default loopback)"
    )
    n.add_argument("--msg-bytes", type=size_arg, default=128 * 1024, help="TCP write size (default 128k)")
    n.add_argument("--udp-bytes", type=int, default=1400, help="UDP payload (default 1400)")
    n.add_argument(
        "--rate-bit-s", type=float, default=100e6, help="UDP offered rate in bit/s (default 100e6)"
    )
    n.add_argument(
        "--duration-s", type=float, default=3.0, help="iperf3 -t, whole seconds; boardlab as long (default 3)"
    )
    n.add_argument("--client-cpu", type=int, help="CPU of the sender (both tools)")
    n.add_argument("--server-cpu", type=int, help="CPU of the receiver (both tools)")
    n.add_argument(
        "--sockbuf-bytes", type=size_arg, default=0, help="socket buffers on both ends (iperf3 -w)"
    )


def _need(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        raise MeasurementError(f"{tool} is not installed: apt-get install {package}")


def _check_cpu(cpu: int | None, flag: str) -> None:
    if cpu is not None and cpu not in os.sched_getaffinity(0):
        raise InputError(f"{flag} {cpu}: not a CPU this process may use ({sorted(os.sched_getaffinity(0))})")


def _progress(i: int, pair, total: int) -> None:
    def fmt(d):
        return ", ".join(f"{k} {v:.4g}" for k, v in d.items() if v is not None)

    print(
        f"pair {i + 1}/{total}: boardlab {fmt(pair.boardlab)} | reference {fmt(pair.reference)}",
        file=sys.stderr,
    )


def _check_storage_job(args, path: Path) -> None:
    """The job's numbers within boardlab-kern io.storage's ranges (outside them its run failed after fio's,
    exit 1; a negative --runtime-s ran fio for ever), its path new or a block device (the layout overwrote a
    user's file, 18 bytes of notes became 4 MiB of pattern), and --job-out a place that may be written (a
    device given there was written through), before anything runs."""
    from boardlab.export import check_output

    if args.bs % 4096 or not 4096 <= args.bs <= 4 * 1024**2:
        raise InputError(f"--bs {args.bs}: must be a multiple of 4096 from 4k to 4M")
    if not args.bs <= args.size <= 2**40:
        raise InputError(f"--size {args.size}: expected one block (--bs {args.bs}) to 1T")
    if args.engine == "psync" and args.iodepth != 1:
        raise InputError("--iodepth > 1 needs --engine io_uring")
    if not 1 <= args.iodepth <= 256:
        raise InputError(f"--iodepth {args.iodepth}: expected 1 to 256")
    if not 0.1 <= args.runtime_s <= 86400:  # nan too
        raise InputError(f"--runtime-s {args.runtime_s:g}: expected 0.1 to 86400 seconds")
    if path.is_file():
        raise InputError(
            f"--path {path}: an existing file; xcheck lays out its own test file at --path and removes it "
            "after, so name a path that does not exist (or a block device)"
        )
    if path.is_symlink() and not path.exists():  # layout makes its target, cleanup unlinks only the link
        raise InputError(
            f"--path {path}: a link to {os.readlink(path)}, which does not exist; name a path that does not "
            "exist (or a block device)"
        )
    if path.exists() and not path.is_block_device():
        raise InputError(
            f"--path {path}: neither a regular file nor a block device; name a path that does not exist "
            "(or a block device)"
        )
    if args.job_out:
        check_output(args.job_out, option="--job-out")
        _check_apart(args.job_out, path)


def _check_apart(job_out: str, path: Path) -> None:
    """--job-out elsewhere than --path: the job file written there was laid out over by the test file and
    removed with it."""
    from boardlab.export import same_file

    if job_out != "-" and same_file(job_out, path):
        raise InputError(
            f"--job-out {job_out}: the same file as --path {path}, where the test file is laid out and "
            "removed; save the job file elsewhere"
        )


def _storage(args, kern: Path):
    from boardlab.export import write_output
    from boardlab.xcheck import pairs, storage

    if not args.path:
        raise InputError(
            "xcheck io.storage: --path FILE|DEVICE is required (nothing is written anywhere unnamed)"
        )
    path = Path(args.path)
    if not path.parent.is_dir():
        raise InputError(f"--path {args.path}: directory {path.parent} does not exist")
    _check_cpu(args.cpu, "--cpu")
    _check_storage_job(args, path)
    _need("fio", "fio")
    existed = path.exists()
    # A file xcheck lays out is its own to overwrite: fio's writes replace boardlab's pattern in it between
    # runs, and boardlab-kern refuses a file without its pattern unless destructive=1.
    job = storage.StorageJob(
        path=str(path), op=args.op, pattern=args.pattern, bs_bytes=args.bs, size_bytes=args.size,
        direct=bool(args.direct), engine=args.engine, iodepth=args.iodepth, fsync=args.fsync,
        runtime_s=args.runtime_s, destructive=args.destructive or not existed, cpu=args.cpu,
    )  # fmt: skip
    if path.is_block_device() and args.op != "read" and not args.destructive:
        raise InputError(f"--path {path} is a block device and --op {args.op} writes: add --destructive")
    with tempfile.TemporaryDirectory(prefix="boardlab-xcheck-") as tmp:
        job_file = Path(tmp) / "boardlab.fio"
        job_file.write_text(job.fio_job())
        if args.job_out:
            write_output(args.job_out, job.fio_job().encode(), option="--job-out")
        check = pairs.CrossCheck(
            job=f"io.storage {args.op} {args.pattern} bs={args.bs} on {path}",
            reference_tool="fio",
            boardlab_command=storage.kern_command(kern, job),
            reference_command=storage.fio_command(job_file),
            ratio_metrics=storage.RATIO_METRICS,
        )
        if not args.json:
            print("fio job:\n" + job.fio_job(), file=sys.stderr)
        try:
            if not existed:
                storage.layout(kern, job)
            check.pairs.extend(
                pairs.interleave(
                    args.pairs,
                    lambda: storage.run_boardlab(kern, job),
                    lambda: storage.run_fio(job_file, job),
                    lambda i, p: _progress(i, p, args.pairs),
                )
            )
        finally:
            if not existed and path.is_file():
                path.unlink()  # fio leaves the file it laid out; boardlab removes what it created
    check.notes.append("bandwidth and IOPS: bytes and I/Os over the whole timed run on both sides")
    check.notes.append(
        "latency: boardlab times each pread/pwrite (or io_uring submit to completion); fio's "
        "clat_ns percentiles"
    )
    return check


def _check_net_job(args) -> None:
    """The job within boardlab-kern io.net's and io.net_zeroloss's ranges, refused before either tool runs:
    outside them the run failed after iperf3's with exit 1 (a nan duration: an internal error; a
    --msg-bytes of 0: iperf3 never ended)."""
    import ipaddress

    from boardlab.model.units import plain_number

    checks: list[tuple[str, float, float, float]] = [
        ("--msg-bytes", args.msg_bytes, 1, 16 * 2**20),
        ("--udp-bytes", args.udp_bytes, 32, 65507),
        ("--rate-bit-s", args.rate_bit_s, 0, 1e12),
        ("--sockbuf-bytes", args.sockbuf_bytes, 0, 2**30),
    ]
    if args.mode == "zeroloss":
        checks += [("--lo-bit-s", args.lo_bit_s, 1e3, 1e12), ("--hi-bit-s", args.hi_bit_s, 1e3, 1e12)]
    for option, value, lo, hi in checks:
        if not lo <= value <= hi:  # nan too
            raise InputError(
                f"{option} {plain_number(value)}: expected {plain_number(lo)} to {plain_number(hi)}"
            )
    if not (1 <= args.duration_s <= 86400 and args.duration_s.is_integer()):  # nan too
        raise InputError(
            f"--duration-s {args.duration_s:g}: expected a whole number of seconds from 1 to 86400 (iperf3 "
            "runs whole seconds: -t 0.5 ran for ever, 2.5 ran 2)"
        )
    try:
        ipaddress.IPv4Address(args.host)
    except ValueError:
        raise InputError(
            f"--host {args.host}: expected an IPv4 address of this machine, e.g. 127.0.0.1"
        ) from None


def _net(args, kern: Path):
    from boardlab.xcheck import net, pairs

    _check_cpu(args.client_cpu, "--client-cpu")
    _check_cpu(args.server_cpu, "--server-cpu")
    if args.send_path != "write" and args.mode != "tcp":
        raise InputError(f"--send-path {args.send_path}: applies to --mode tcp only")
    if args.mode == "zeroloss" and not 0 < args.lo_bit_s < args.hi_bit_s:
        raise InputError(f"--lo-bit-s {args.lo_bit_s:g} --hi-bit-s {args.hi_bit_s:g}: need 0 < lo < hi")
    if not 0.001 <= args.resolution <= 0.5:
        raise InputError(f"--resolution {args.resolution:g}: use 0.001-0.5 (a relative width)")
    _check_net_job(args)
    _need("iperf3", "iperf3")
    job = net.NetJob(
        mode=args.mode, host=args.host, msg_bytes=args.msg_bytes, udp_bytes=args.udp_bytes,
        rate_bit_s=args.rate_bit_s, duration_s=args.duration_s, client_cpu=args.client_cpu,
        server_cpu=args.server_cpu, sockbuf_bytes=args.sockbuf_bytes, send_path=args.send_path,
        lo_bit_s=args.lo_bit_s, hi_bit_s=args.hi_bit_s, resolution=args.resolution,
    )  # fmt: skip
    zeroloss = args.mode == "zeroloss"
    reference = net.zeroloss_reference_command(job) if zeroloss else job.iperf_client(0)
    check = pairs.CrossCheck(
        job=f"io.net {args.mode}" + (f" {args.send_path}" if args.mode == "tcp" else "") + f" to {args.host}",
        reference_tool="iperf3",
        boardlab_command=net.zeroloss_kern_command(job) if zeroloss else net.kern_command(kern, job),
        reference_command=reference,
        ratio_metrics=net.RATIO_METRICS,
    )
    if not args.json:
        print("iperf3: " + " ".join(job.iperf_server(0)) + "  /  " + " ".join(reference), file=sys.stderr)
    if zeroloss:
        run_a, run_b = (
            (lambda: net.run_boardlab_zeroloss(job, check.notes)),
            (lambda: net.run_iperf_zeroloss(job, check.notes)),
        )
        check.notes.append(
            "zero_loss_bit_s: the highest offered rate whose one-second trial lost no datagram, by the same "
            "binary search on both sides (RFC 2544 26.1)"
        )
    else:
        run_a, run_b = (lambda: net.run_boardlab(kern, job, check.notes)), (lambda: net.run_iperf(job))
    check.pairs.extend(pairs.interleave(args.pairs, run_a, run_b, lambda i, p: _progress(i, p, args.pairs)))
    if args.mode == "tcp":
        check.notes.append(
            "cpu_ns_per_byte: boardlab's sender thread and sink process CPU per byte; iperf3's "
            "cpu_utilization_percent x seconds / bytes (its server counts from its own start: a little low)"
        )
    return check


# The cross-check of each workload against its reference tool (fio, iperf3), by the workload it checks.
CHECKS = {"io.storage": _storage, "io.net": _net}


def run(args) -> int:
    from boardlab.native import kern_path

    if args.pairs < 1:
        raise InputError("--pairs must be at least 1")
    kern = kern_path()
    check = CHECKS[args.workload](args, kern)
    doc = check.as_json()
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(
        f"{check.job}: boardlab vs {check.reference_tool}, {len(check.pairs)} pairs, alternating "
        "which runs first"
    )
    print(f"  {'metric':<26} {'boardlab median':>16} {'reference median':>17} {'median ratio':>13}")
    for name, m in doc["metrics"].items():
        ratio = f"{m['median_ratio']:.3f}" if m["median_ratio"] is not None else "-"

        def num(v):
            return f"{v:.4g}" if v is not None else "-"

        print(f"  {name:<26} {num(m['boardlab_median']):>16} {num(m['reference_median']):>17} {ratio:>13}")
    for name in check.ratio_metrics:
        r = check.by_order(name)
        if r.median is not None:
            print(f"  {name}: {r.describe('boardlab', check.reference_tool)}")
    for note in dict.fromkeys(check.notes):
        print(f"  note: {note}")
    return 0
