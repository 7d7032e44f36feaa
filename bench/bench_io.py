"""io.storage against fio and io.net against iperf3, through `boardlab xcheck` (pairs alternating which runs
first: A B, B A, ...; each ratio also per order).

1. io.storage vs fio, the same job (psync, O_DIRECT, 128 KiB sequential reads of a 64 MiB region, pinned
   to one CPU) on an ext4 file of the virtio disk (a temporary file in the repository's directory, whose
   file system is the board's disk) and, when root, on a loop device backed by a tmpfs file. Target: the
   median of the pairwise ratios of bandwidth and p50 latency within 10% of 1.
2. io.net vs iperf3 on loopback, sender and receiver pinned to different CPUs: TCP goodput (128 KiB writes)
   within 10%; UDP at 100 Mb/s (1400-byte datagrams) with loss under 1% on both sides.
3. The data-stream study's further cross-checks: sendfile against `iperf3 -Z` (goodput within 10%); CPU per
   byte, sender and receiver, against iperf3's cpu_utilization_percent x seconds / bytes (within 20%); the
   zero-loss UDP rate by the same RFC 2544 search on both sides (within 15%; 6 pairs, each a pair of
   searches of about ten one-second trials).

`--quick` runs 4 pairs instead of 10 (2 zero-loss pairs instead of 6). Exits 0 whatever the figures; prints
PASS or FAIL per target.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAIRS = 4 if "--quick" in sys.argv else 10  # even: as many pairs in each order
SEARCH_PAIRS = 2 if "--quick" in sys.argv else 6  # a pair of zero-loss searches takes about half a minute
REPO = Path(__file__).resolve().parent.parent


def boardlab(*args: str, pairs: int = PAIRS) -> dict | None:
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab", "xcheck", *args, "--pairs", str(pairs), "--json"],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        print(f"  xcheck {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(proc.stdout)


def orders(m: dict) -> str:
    """The ratio per order: `boardlab xcheck` alternates which tool runs first, so an order effect cancels in
    the median ratio and shows here."""
    o = m.get("by_order") or {}
    if not o.get("boardlab_first") or not o.get("reference_first"):
        return ""
    return (
        f" (boardlab first {o['boardlab_first']:.3f}, reference first {o['reference_first']:.3f}; "
        f"order effect {o['order_effect']:.3f})"
    )


def verdict(ratio: float | None, within: float = 0.10) -> str:
    return "-" if ratio is None else ("PASS" if abs(ratio - 1) <= within else "FAIL")


def report_ratio(label: str, doc: dict, metric: str, within: float, scale: float = 1, unit: str = "") -> None:
    m = doc["metrics"][metric]
    r, b, f = m["median_ratio"], m["boardlab_median"], m["reference_median"]
    if r is None or b is None or f is None:
        print(f"{label}, {metric}: - (a side reported no figure)")
        return
    print(
        f"{label}, {metric}: boardlab {b / scale:.4g}{unit} iperf3 {f / scale:.4g}{unit} median ratio {r:.3f}"
        f"{orders(m)} {verdict(r, within)} (target within {within:.0%})"
    )


def report_storage(label: str, doc: dict | None) -> None:
    if doc is None:
        return
    for metric in ("bandwidth_mb_s", "latency_p50_ns"):
        r = doc["metrics"][metric]["median_ratio"]
        b, f = doc["metrics"][metric]["boardlab_median"], doc["metrics"][metric]["reference_median"]
        print(
            f"io.storage vs fio, {label}, {metric}: boardlab {b:.4g} fio {f:.4g} median ratio {r:.3f}"
            f"{orders(doc['metrics'][metric])} {verdict(r)}"
        )


def cpus() -> tuple[int, int]:
    allowed = sorted(os.sched_getaffinity(0))
    return allowed[0], allowed[-1]


def main() -> int:
    for tool in ("fio", "iperf3"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (apt-get install {tool})")
            return 0
    a, b = cpus()
    print(f"== io.storage vs fio ({PAIRS} pairs, CPU {a})", flush=True)
    with tempfile.TemporaryDirectory(prefix=".bench-io-", dir=REPO) as tmp:
        df = subprocess.run(
            ["df", "--output=fstype,source", tmp], capture_output=True, text=True
        ).stdout.split()
        fs = f"{df[2]} ({df[3]})" if len(df) >= 4 else "this file system"
        job = ["--bs", "128k", "--size", "64M", "--cpu", str(a), "--runtime-s", "2"]
        report_storage(f"file on {fs}", boardlab("io.storage", "--path", str(Path(tmp) / "data.bin"), *job))
    if os.geteuid() == 0 and shutil.which("losetup"):
        with tempfile.TemporaryDirectory(prefix="boardlab-bench-", dir="/dev/shm") as shm:
            backing = Path(shm) / "loop.img"
            with open(backing, "wb") as f:
                f.truncate(128 * 1024 * 1024)
            dev = subprocess.run(["losetup", "-f", "--show", str(backing)], capture_output=True, text=True)
            if dev.returncode != 0:
                print(f"loop device: SKIP ({dev.stderr.strip()})")
            else:
                loop = dev.stdout.strip()
                try:
                    doc = boardlab("io.storage", "--path", loop, "--destructive", *job)
                    report_storage(f"loop device {loop} on tmpfs", doc)
                finally:
                    subprocess.run(["losetup", "-d", loop], check=False)
    else:
        print("io.storage vs fio, loop device on tmpfs: SKIP (needs root and losetup)")

    print(f"== io.net vs iperf3 on loopback ({PAIRS} pairs, sender CPU {a}, receiver CPU {b})", flush=True)
    pin = ["--client-cpu", str(a), "--server-cpu", str(b)]
    tcp = boardlab("io.net", "--mode", "tcp", "--msg-bytes", "128k", "--duration-s", "2", *pin)
    if tcp:
        m = tcp["metrics"]["goodput_bit_s"]
        r = m["median_ratio"]
        print(
            f"io.net vs iperf3, TCP goodput: boardlab {m['boardlab_median'] / 1e9:.2f} Gbit/s iperf3 "
            f"{m['reference_median'] / 1e9:.2f} Gbit/s median ratio {r:.3f}{orders(m)} {verdict(r)}"
        )
        report_ratio("io.net vs iperf3, TCP write", tcp, "cpu_ns_per_byte_sender", 0.20, unit=" ns/B")
        report_ratio("io.net vs iperf3, TCP write", tcp, "cpu_ns_per_byte_receiver", 0.20, unit=" ns/B")
    zc = boardlab(
        "io.net", "--mode", "tcp", "--send-path", "sendfile", "--msg-bytes", "128k", "--duration-s", "2", *pin
    )
    if zc:
        report_ratio("io.net sendfile vs iperf3 -Z", zc, "goodput_bit_s", 0.10, 1e9, " Gbit/s")
        report_ratio("io.net sendfile vs iperf3 -Z", zc, "cpu_ns_per_byte_sender", 0.20, unit=" ns/B")
        report_ratio("io.net sendfile vs iperf3 -Z", zc, "cpu_ns_per_byte_receiver", 0.20, unit=" ns/B")
    udp = boardlab("io.net", "--mode", "udp", "--rate-bit-s", "100e6", "--duration-s", "2", *pin)
    if udp:
        loss = udp["metrics"]["loss_percent"]
        bl, ip = loss["boardlab_median"], loss["reference_median"]
        worst_b = max(p["boardlab"]["loss_percent"] for p in udp["pairs"])
        worst_i = max((p["reference"]["loss_percent"] or 0) for p in udp["pairs"])
        ok = bl is not None and ip is not None and bl < 1 and ip < 1
        print(
            f"io.net vs iperf3, UDP 100 Mb/s loss: boardlab median {bl:.3f}% (worst {worst_b:.3f}%) iperf3 "
            f"median {ip if ip is None else round(ip, 3)}% (worst {worst_i:.3f}%) {'PASS' if ok else 'FAIL'}"
        )
        g = udp["metrics"]["goodput_bit_s"]
        print(f"io.net vs iperf3, UDP offered rate: median ratio {g['median_ratio']:.3f}{orders(g)}")
        for note in dict.fromkeys(udp["notes"]):
            print(f"  note: {note}")
    print(
        f"== zero-loss UDP rate vs iperf3 ({SEARCH_PAIRS} pairs of searches, 10 Mbit/s-1 Gbit/s)", flush=True
    )
    zl = boardlab(
        "io.net", "--mode", "zeroloss", "--lo-bit-s", "10e6", "--hi-bit-s", "1e9", *pin, pairs=SEARCH_PAIRS
    )
    if zl:
        report_ratio("io.net_zeroloss vs iperf3", zl, "zero_loss_bit_s", 0.15, 1e6, " Mbit/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
