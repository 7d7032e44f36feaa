"""Wall time of `boardlab --help` against `python -c pass`, alternated A B, B A in one run.

Target: `boardlab --help` under 0.3 s here. The VM drifts, so the figure is the median of pairwise
differences and ratios, never one timing."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

PAIRS = 20
BOARDLAB = [str(Path(sys.executable).parent / "boardlab"), "--help"]
REFERENCE = [sys.executable, "-c", "pass"]
TARGET_S = 0.3


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    wall(BOARDLAB), wall(REFERENCE)  # warm the page cache for both
    from boardlab.xcheck.pairs import alternate, ratios_of

    done = alternate(PAIRS, lambda: wall(BOARDLAB), lambda: wall(REFERENCE))  # A B, B A, ...
    a, b = [x for x, _, _ in done], [y for _, y, _ in done]
    med = statistics.median(a)
    print(
        f"boardlab --help: median {med * 1000:.1f} ms; python -c pass: median "
        f"{statistics.median(b) * 1000:.1f} ms"
    )
    print(f"ratio boardlab/python: {ratios_of(done, lambda x, y: x / y).describe('boardlab', 'python')}")
    print(
        "extra over the interpreter: "
        f"{statistics.median(x - y for x, y in zip(a, b, strict=True)) * 1000:.1f} ms"
    )
    print(f"target: under {TARGET_S:.1f} s -> {'PASS' if med < TARGET_S else 'FAIL'}")
    return 0 if med < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
