"""crypto.evp against `openssl speed -evp` on the same algorithm and block size, alternated A B, B A in one
run.

Target: boardlab's MB/s at least 0.9x openssl speed's (median of the pairwise ratios). openssl divides by its
own user CPU time (its default), the closest match to boardlab's figure, the median of ~1 ms iterations: both
leave out the time the process did not have the CPU. With `-elapsed` openssl would divide by 2 s of wall
clock, shared on a busy machine with everything else (measured here at load 6 on 2 CPUs: openssl 1.4-1.8 GB/s
elapsed vs 4.1 GB/s CPU time for AES-128-GCM, boardlab's median 4.1 GB/s). AEADs run with `-aead`, openssl's
TLS-like sequence (init with the IV, 13 bytes of AAD, payload, final per block), which is what crypto.evp does
per block. openssl prints 1000s of bytes per second; boardlab's MB is 1e6 bytes. Exits 0 whatever the
outcome."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys

from boardlab.native import kern_path
from boardlab.xcheck.pairs import alternate, ratios_of

PAIRS = 6  # even: as many pairs in each order
BLOCK = 16384
SECONDS = 2
TARGET = 0.9
CASES = [("aes-128-gcm", True), ("sha256", False), ("chacha20-poly1305", True)]


def boardlab_mb_s(kern: str, algorithm: str) -> float:
    cmd = [
        kern,
        "crypto.evp",
        "--param",
        f"algorithm={algorithm}",
        "--param",
        f"block_bytes={BLOCK}",
        "--json",
    ]
    res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=False).stdout)
    if not res.get("ok"):
        raise RuntimeError(
            f"boardlab-kern crypto.evp {algorithm} failed: {res.get('errors') or res.get('reason')}"
        )
    return res["metrics"]["mb_s"]["median"]


def openssl_mb_s(algorithm: str, aead: bool) -> float:
    cmd = ["openssl", "speed", "-seconds", str(SECONDS), "-bytes", str(BLOCK), "-evp", algorithm]
    if aead:
        cmd.append("-aead")
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()
    # "type          16384 bytes" then "AES-128-GCM    2559836.16k": the unit is 1000s of bytes per second.
    for i, line in enumerate(out):
        if line.startswith("type") and line.split()[1:] == [str(BLOCK), "bytes"]:
            value = out[i + 1].split()[-1]
            if value.endswith("k"):
                return float(value[:-1]) * 1e3 / 1e6
    raise RuntimeError(f"no '{BLOCK} bytes' result in the output of {' '.join(cmd)}")


def main() -> int:
    if not shutil.which("openssl"):
        print("openssl is not installed: nothing to compare against (apt-get install openssl)")
        return 0
    kern = str(kern_path())
    print(f"crypto.evp vs openssl speed -evp, block {BLOCK} bytes, {PAIRS} alternating pairs per algorithm")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
    for algorithm, aead in CASES:
        # A B, B A, ...: an order effect cancels and shows (the lambdas run here, in this iteration)
        done = alternate(PAIRS, lambda: boardlab_mb_s(kern, algorithm), lambda: openssl_mb_s(algorithm, aead))  # noqa: B023
        pr = ratios_of(done, lambda a, b: a / b)
        ours, theirs = [a for a, _, _ in done], [b for _, b, _ in done]
        verdict = "PASS" if pr.median >= TARGET else "FAIL"
        print(
            f"{algorithm:18s} boardlab {statistics.median(ours):8.1f} MB/s  openssl "
            f"{statistics.median(theirs):8.1f} MB/s  {pr.describe('boardlab', 'openssl')} (pairs "
            f"{', '.join(f'{r:.2f}' for r in pr.ratios)})  target >= {TARGET} {verdict}"
        )
        sys.stdout.flush()
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    note = ": the machine is shared, pairs spread and a FAIL may be contention" if load > cpus else ""
    print(f"load average {load:.1f} on {cpus} CPUs at the end{note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
