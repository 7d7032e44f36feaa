"""Compression throughput of boardlab-kern's compress kernels against the standard tools, on the same file.

Seed 000 measured 7-Zip's LZMA, bzip2 and pbzip2 on a satellite computer. Here each kernel compresses the
sensor-like corpus (written once with `boardlab-kern corpus`, passed with input=FILE) and the matching tool
compresses the same file to /dev/null; the tool's rate is file bytes / its wall time. Pairs alternate their
order, kernel tool, tool kernel, ... (these VMs drift by up to a third within an hour) and each line prints
the median of the pairwise ratios kernel/tool. Target: compression at least 0.9x the tool -> PASS, else FAIL.
Decompression ratios against `xz -d`, `bzip2 -d`, `pbzip2 -d` and `zstd -d` are printed for information. Files
are sized per codec so that the whole script takes about three minutes on a 2-core VM; the kernel times 2
iterations after 1 warm-up iteration (its median is the kernel's figure), the tool runs once per pair, as a
user runs it.

Also printed: the kernel's compressed size over the tool's (1.000 when the streams are the same; xz, bzip2 and
pbzip2 write byte-identical streams, the zstd tool cuts a large input into blocks a little differently)."""

from __future__ import annotations

import functools
import json
import shutil
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
KERN_ITER = ("--iterations", "2", "--warmup-max-iterations", "1")

# name, kernel, kernel params, file size, compress command, suffix, decompress command
CASES = [
    ("lzma preset 6 vs xz -6 -T1", "compress.lzma", ["preset=6"], 2 * MIB,
     ["xz", "-6", "-T1", "-k", "-c"], ".xz", ["xz", "-d", "-T1", "-c"]),
    ("bzip2 level 9 vs bzip2 -9", "compress.bzip2", ["level=9"], 6 * MIB,
     ["bzip2", "-9", "-c"], ".bz2", ["bzip2", "-d", "-c"]),
    ("bzip2 threads 2 vs pbzip2 -9 -p2", "compress.bzip2", ["level=9", "threads=2"], 8 * MIB,
     ["pbzip2", "-9", "-p2", "-c"], ".pbz2", ["pbzip2", "-d", "-p2", "-c"]),
    ("zstd level 3 vs zstd -3 --single-thread", "compress.zstd", ["level=3"], 32 * MIB,
     ["zstd", "-3", "--single-thread", "-q", "-c"], ".zst", ["zstd", "-d", "-q", "-c"]),
]  # fmt: skip


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def kernel(name: str, params: list[str], path: Path) -> dict:
    args = [str(kern_path()), name, "--param", f"input={path}", *KERN_ITER, "--json"]
    for p in params:
        args += ["--param", p]
    res = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    if not res["ok"]:
        raise SystemExit(f"{name} failed: {res['errors']}")
    return res


def verdict(ratio: float) -> str:
    return "PASS" if ratio >= TARGET else "FAIL"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench_compress_") as tmp:
        files: dict[int, Path] = {}
        for size in sorted({c[3] for c in CASES}):
            files[size] = Path(tmp) / f"corpus_{size // MIB}M.bin"
            subprocess.run(
                [str(kern_path()), "corpus", "--bytes", str(size), "--out", str(files[size])],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        print(
            f"corpus: default mix, {PAIRS} pairs per line, kernel {' '.join(KERN_ITER)}; target >= {TARGET}x"
        )
        for title, name, params, size, ccmd, suffix, dcmd in CASES:
            if not shutil.which(ccmd[0]):
                print(f"{title}: SKIP ({ccmd[0]} not installed)")
                continue
            path = files[size]
            packed = Path(tmp) / (path.name + suffix)
            with packed.open("wb") as f:  # the tool's stream, once: input of its decompression, size check
                subprocess.run([*ccmd, str(path)], stdout=f, check=True)
            # A B, B A, ...: an order effect cancels and shows (bound now: the loop variables move on)
            tool = functools.partial(
                lambda c, d: (wall(c), wall(d)), [*ccmd, str(path)], [*dcmd, str(packed)]
            )
            done = alternate(PAIRS, functools.partial(kernel, name, params, path), tool)
            mb = size / 1e6  # the input in MB
            c = ratios_of(done, lambda res, t, m=mb: res["metrics"]["compress_mb_s"]["median"] / (m / t[0]))
            d = ratios_of(done, lambda res, t, m=mb: res["metrics"]["decompress_mb_s"]["median"] / (m / t[1]))
            k_rate = statistics.median(res["metrics"]["compress_mb_s"]["median"] for res, _, _ in done)
            t_rate = statistics.median(size / t[0] / 1e6 for _, t, _ in done)
            size_ratio = done[-1][0]["info"]["compressed_bytes"] / packed.stat().st_size
            print(
                f"{title} ({size // MIB} MiB): compress {k_rate:.2f} vs {t_rate:.2f} MB/s, "
                f"{c.describe('kernel', 'tool')} (pairs {min(c.ratios):.2f}-{max(c.ratios):.2f}) "
                f"{verdict(c.median)}; decompress {d.describe('kernel', 'tool')} (information); "
                f"compressed size kernel/tool {size_ratio:.4f}"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
