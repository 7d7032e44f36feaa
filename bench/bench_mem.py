"""mem family against reference tools in the same run, alternated A B, B A (the VM drifts).

1. mem.bandwidth op=memcpy against mbw's memcpy test on the same array size, median against median. In
   Debian's mbw 1.2.2 the test that calls libc memcpy is -t1 (printed as "DUMB"); -t0 ("MEMCPY") is the
   element loop (checked with perf: research/anchors-board-bench.md warns of the swap). mbw counts the array
   once in MiB; STREAM counts memcpy as 2 arrays in MB (1e6 bytes), so mbw's figure is converted before the
   ratio.
2. mem.bandwidth copy+scale+add+triad against stress-ng's stream stressor on the same array size
   (--stream-l3-size = array / 4, since stress-ng sizes each array at 4x that). One stress-ng bogo-op runs
   the four STREAM ops in turn and it reports read and write MiB/s over the whole run; boardlab's
   counterpart is the four ops' total bytes over their total time, from their per-op rates. On x86,
   stress-ng 0.15.06 writes these arrays with non-temporal stores (movnti, checked with perf annotate),
   which skip reading each destination line first (up to 1.5x the STREAM-counted rate once arrays are
   in DRAM), so boardlab runs with stores=nontemporal there; elsewhere both use ordinary stores.
   Target for both: median of the pairwise ratios boardlab/reference >= 0.9.
3. A mem.latency sweep, pattern random (ccbench's), from 4 KiB to past 4x the last-level cache: ns per
   access by size (median and best of 10 iterations), the steps found in the curve of the best values made
   monotone (interference only adds time), and the cache sizes the system reports beside them.

Exits 0 whatever the figures; prints PASS or FAIL per comparison.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

PAIRS = 6  # even: as many pairs in each order
TARGET = 0.9
MIB = 1024 * 1024
STREAM_OPS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}  # arrays moved per element, as STREAM counts
STORES = "nontemporal" if platform.machine() in ("x86_64", "AMD64", "i686", "i386") else "normal"
STRESS_NG_SECONDS = 10  # it reports a rate only when its timed loop (set-up excluded) ran >= 4.5 s


def pinned(cpu: int):
    """Both tools run on the same single CPU, so that neither gets a second core the other did not."""
    return lambda: os.sched_setaffinity(0, {cpu})


def kern(cpu: int, name: str, params: dict[str, object], *opts: str) -> dict:
    args = [str(kern_path()), name, "--json", *opts]
    for k, v in params.items():
        args += ["--param", f"{k}={v}"]
    proc = subprocess.run(args, capture_output=True, text=True, preexec_fn=pinned(cpu), timeout=600)
    res = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if proc.returncode != 0 or not res.get("ok"):
        raise RuntimeError(f"{name} {params} failed: {res.get('errors') or proc.stderr.strip()}")
    return res


def bandwidth_mb_s(cpu: int, op: str, array_bytes: int, stores: str = "normal") -> float:
    res = kern(
        cpu,
        "mem.bandwidth",
        {"op": op, "array_bytes": array_bytes, "stores": stores},
        "--iterations",
        "5",
        "--warmup-max-iterations",
        "2",
    )
    return res["metrics"]["mb_s"]["median"]


def mbw_memcpy_mb_s(cpu: int, array_mib: int) -> float:
    """mbw -t1 (libc memcpy): the median of its 10 timed copies (boardlab reports a median too), in STREAM's
    units: 2 arrays, MB = 1e6 bytes."""
    out = subprocess.run(
        ["mbw", "-q", "-n", "10", "-t1", str(array_mib)],
        capture_output=True,
        text=True,
        preexec_fn=pinned(cpu),
        check=True,
        timeout=600,
    ).stdout
    rates = [
        float(m.group(1)) for m in re.finditer(r"^\d+\s+Method: \w+\s.*Copy: ([0-9.]+) MiB/s", out, re.M)
    ]
    if len(rates) != 10:
        raise RuntimeError(f"expected 10 copies in mbw's output: {out!r}")
    return statistics.median(rates) * MIB / 1e6 * 2


def stress_ng_stream_mb_s(cpu: int, array_bytes: int, workdir: Path) -> float | None:
    """stress-ng's stream stressor, read + write rate over copy/scale/add/triad, in MB (1e6 bytes) per s."""
    yaml = workdir / "stream.yaml"
    yaml.unlink(missing_ok=True)
    subprocess.run(
        [
            "stress-ng",
            "--stream",
            "1",
            "--stream-l3-size",
            str(array_bytes // 4),
            "--stream-madvise",
            "normal",
            "-t",
            str(STRESS_NG_SECONDS),
            "--metrics-brief",
            "--yaml",
            str(yaml),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        preexec_fn=pinned(cpu),
        cwd=workdir,
        check=True,
        timeout=120,
    )
    text = yaml.read_text()
    rates = [
        float(m.group(1)) for m in re.finditer(r"memory-(?:read|write)-rate-mb-per-sec: ([0-9.]+)", text)
    ]
    if len(rates) != 2:
        return None  # its timed loop ran under 4.5 s (a loaded machine): no rate reported
    return sum(rates) * MIB / 1e6  # stress-ng's MB is MiB


def verdict(ratio: float) -> str:
    return "PASS" if ratio >= TARGET else "FAIL"


def print_pairs(label: str, done: list[tuple[float, float | None, str]]) -> None:
    """The pairs of alternate() (A B, B A, ...): the median ratio, in which an order effect cancels, and the
    ratio per order, which shows it."""
    r = ratios_of(done, lambda a, b: a / b if b else None)
    if r.median is None:
        print(f"{label}: no complete pair -> FAIL")
        return
    ours = [a for a, b, _ in done if b]
    theirs = [b for _, b, _ in done if b]
    print(
        f"{label}: boardlab median {statistics.median(ours):.0f} MB/s, reference median "
        f"{statistics.median(theirs):.0f} MB/s"
    )
    print(f"  pairwise ratios: {' '.join(f'{x:.3f}' for x in r.ratios)}")
    print(
        f"  boardlab/reference: {r.describe('boardlab', 'reference')} "
        f"(target >= {TARGET}) -> {verdict(r.median)}"
    )


# ---- cache levels, as the system reports them ----


def reported_caches() -> list[tuple[int, int]]:
    """(level, bytes) of cpu0's data and unified caches from sysfs, innermost first."""
    caches = []
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (d / "type").read_text().strip() == "Instruction":
                continue
            level = int((d / "level").read_text())
            size = (d / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1024, "M": MIB, "G": 1024 * MIB}.get(size[-1], 1)
        caches.append((level, int(size.rstrip("KMG")) * mult))
    return sorted(caches)


def human(n: float) -> str:
    for unit, div in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def find_steps(
    sizes: list[int], ns: list[float], rise: float = 1.15, total: float = 1.4
) -> list[tuple[int, int]]:
    """Steps of a latency curve: runs of consecutive points each >= `rise` x the one before, rising >= `total`
    x overall. Returns (i, j): points i (the last before the rise) to j (the top of the rise). The cache that
    overflowed holds sizes[i] but not sizes[i + 1]."""
    steps, i = [], 1
    while i < len(ns):
        if ns[i] >= rise * ns[i - 1]:
            start = i - 1
            while i < len(ns) and ns[i] >= rise * ns[i - 1]:
                i += 1
            if ns[i - 1] >= total * ns[start]:
                steps.append((start, i - 1))
        else:
            i += 1
    return steps


def monotone(ns: list[float]) -> list[float]:
    """Suffix minimum: interference (other tasks sharing the CPU and its caches) only adds time, and a working
    set is never faster than a larger one, so each size keeps the least of its own and every larger
    latency."""
    out, low = [], math.inf
    for v in reversed(ns):
        low = min(low, v)
        out.append(low)
    return out[::-1]


def latency_sweep(cpu: int, llc: int) -> None:
    top = max(4 * llc, 64 * MIB)
    sizes = [4096]  # powers of two and the midpoints 1.5 x 2^k, up to the first size at or past the top
    while sizes[-1] < top:
        s = sizes[-1]
        sizes.append(s * 3 // 2 if s & (s - 1) == 0 else s * 4 // 3)
    print(
        f"\n== mem.latency pattern=random sweep, 4 KiB .. {human(sizes[-1])} ({len(sizes)} sizes), CPU {cpu}"
    )
    print("per size: the median and the best of 10 iterations; the curve is the best, made monotone")
    print(f"{'size':>10} {'median ns':>10} {'best ns':>10} {'curve ns':>10}")
    med, best = [], []
    for s in sizes:
        res = kern(
            cpu,
            "mem.latency",
            {"pattern": "random", "size_bytes": s},
            *("--iterations", "10", "--warmup-max-iterations", "10", "--warmup-max-ms", "300"),
        )
        med.append(res["metrics"]["ns_per_access"]["median"])
        best.append(res["metrics"]["ns_per_access"]["min"])
    ns = monotone(best)
    for s, m, b, c in zip(sizes, med, best, ns, strict=True):
        print(f"{human(s):>10} {m:10.2f} {b:10.2f} {c:10.2f}")
    report_steps(sizes, ns, llc)


def report_steps(sizes: list[int], ns: list[float], llc: int) -> None:
    steps = find_steps(sizes, ns)
    print("\nsteps found in the curve (a cache holds the size before the rise, not the one after):")
    for n, (i, j) in enumerate(steps, 1):
        print(
            f"  step {n}: {ns[i]:.1f} ns at {human(sizes[i])} -> {ns[j]:.1f} ns at {human(sizes[j])}; "
            f"capacity between {human(sizes[i])} and {human(sizes[i + 1])}"
        )
    if not steps:
        print("  none (a flat curve: is the machine busy, or is the whole sweep inside one level?)")
    print("\ncache sizes the system reports (sysfs cpu0) against the steps:")
    matched = set()
    for level, size in reported_caches():
        near = [n for n, (i, j) in enumerate(steps, 1) if sizes[i] / 2 <= size <= sizes[i + 1] * 2]
        matched.update(near[:1])
        print(f"  L{level} {human(size):>9}: {f'step {near[0]}' if near else 'no step near it'}")
    for n, (i, _j) in enumerate(steps, 1):
        if n in matched:
            continue
        where = (
            "past the last-level cache: DRAM"
            if sizes[i] >= llc
            else "inside the reported last-level cache (a VM often gets only part of its host's L3)"
        )
        print(
            f"  step {n} ({human(sizes[i])} .. {human(sizes[i + 1])}) matches no reported size; it "
            f"lies {where}"
        )


def main() -> int:
    cpu = sorted(os.sched_getaffinity(0))[-1]
    t0 = time.monotonic()
    probe = kern(
        cpu,
        "mem.bandwidth",
        {"op": "memset", "array_bytes": 0},
        "--iterations",
        "1",
        "--warmup-max-iterations",
        "0",
    )
    auto, llc = int(probe["info"]["array_bytes"]), int(probe["info"]["llc_bytes"])
    array_mib = math.ceil(auto / MIB)
    array_bytes = array_mib * MIB
    print(
        f"array size: {array_mib} MiB per array ({probe['info']['array_bytes_source']}); all runs "
        f"on CPU {cpu}"
    )

    print(f"\n== mem.bandwidth op=memcpy vs mbw -t1 (libc memcpy), {PAIRS} pairs A B, B A, ...")
    done = alternate(
        PAIRS, lambda: bandwidth_mb_s(cpu, "memcpy", array_bytes), lambda: mbw_memcpy_mb_s(cpu, array_mib)
    )
    print_pairs("memcpy vs mbw", done)

    print(
        f"\n== mem.bandwidth copy+scale+add+triad stores={STORES} vs stress-ng --stream 1, {PAIRS} pairs "
        "A B, B A, ..."
    )

    def stream() -> float:
        rates = {op: bandwidth_mb_s(cpu, op, array_bytes, STORES) for op in STREAM_OPS}
        print("  boardlab " + ", ".join(f"{op} {r:.0f}" for op, r in rates.items()) + " MB/s")
        # The four ops' total bytes over their total time, as one stress-ng bogo-op counts them.
        return sum(STREAM_OPS.values()) / sum(n / rates[op] for op, n in STREAM_OPS.items())

    def show(i, aggregate, reference, order):
        rate = f"{reference:.0f} MB/s" if reference else "no rate (timed loop < 4.5 s)"
        print(f"  pair {i + 1} ({order}): boardlab {aggregate:.0f} MB/s; stress-ng {rate}")

    with tempfile.TemporaryDirectory(prefix="bench_mem_") as tmp:
        done = alternate(PAIRS, stream, lambda: stress_ng_stream_mb_s(cpu, array_bytes, Path(tmp)), show)
    print_pairs("STREAM 4-op aggregate vs stress-ng stream", done)

    latency_sweep(cpu, llc)
    print(f"\nbench_mem took {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
