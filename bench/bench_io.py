"""io.storage against fio and io.net against iperf3, through `boardlab xcheck` (interleaved A B pairs).

1. io.storage vs fio, the same job (psync, O_DIRECT, 128 KiB sequential reads of a 64 MiB region, pinned
   to one CPU) on an ext4 file of the virtio disk (a temporary file in the repository's directory, whose
   file system is the board's disk) and, when root, on a loop device backed by a tmpfs file. Target: the
   median of the pairwise ratios of bandwidth and p50 latency within 10% of 1.
2. io.net vs iperf3 on loopback, sender and receiver pinned to different CPUs: TCP goodput (128 KiB writes)
   within 10%; UDP at 100 Mb/s (1400-byte datagrams) with loss under 1% on both sides.

`--quick` runs 3 pairs instead of 10. Exits 0 whatever the figures; prints PASS or FAIL per target.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PAIRS = 3 if "--quick" in sys.argv else 10
REPO = Path(__file__).resolve().parent.parent


def boardlab(*args: str) -> dict | None:
    proc = subprocess.run(
        [sys.executable, "-m", "boardlab", "xcheck", *args, "--pairs", str(PAIRS), "--json"],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        print(f"  xcheck {' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1:]}")
        return None
    return json.loads(proc.stdout)


def verdict(ratio: float | None) -> str:
    return "-" if ratio is None else ("PASS" if abs(ratio - 1) <= 0.10 else "FAIL")


def report_storage(label: str, doc: dict | None) -> None:
    if doc is None:
        return
    for metric in ("bandwidth_mb_s", "latency_p50_ns"):
        r = doc["metrics"][metric]["median_ratio"]
        b, f = doc["metrics"][metric]["boardlab_median"], doc["metrics"][metric]["reference_median"]
        print(
            f"io.storage vs fio, {label}, {metric}: boardlab {b:.4g} fio {f:.4g} median ratio {r:.3f} {verdict(r)}"
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
            f"{m['reference_median'] / 1e9:.2f} Gbit/s median ratio {r:.3f} {verdict(r)}"
        )
    udp = boardlab("io.net", "--mode", "udp", "--rate-bit-s", "100e6", "--duration-s", "2", *pin)
    if udp:
        loss = udp["metrics"]["loss_percent"]
        bl, ip = loss["boardlab_median"], loss["reference_median"]
        worst_b = max(p["boardlab"]["loss_percent"] for p in udp["pairs"])
        worst_i = max((p["reference"]["loss_percent"] or 0) for p in udp["pairs"])
        ok = bl is not None and ip is not None and bl < 1 and ip < 1
        print(
            f"io.net vs iperf3, UDP 100 Mb/s loss: boardlab median {bl:.3f}% (worst {worst_b:.3f}%) iperf3 median "
            f"{ip if ip is None else round(ip, 3)}% (worst {worst_i:.3f}%) {'PASS' if ok else 'FAIL'}"
        )
        g = udp["metrics"]["goodput_bit_s"]
        print(f"io.net vs iperf3, UDP offered rate: median ratio {g['median_ratio']:.3f}")
        for note in dict.fromkeys(udp["notes"]):
            print(f"  note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
