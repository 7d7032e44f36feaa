"""A process that burns a fixed share of one CPU: `python -m boardlab.services.burn PCT SECONDS`.

Every 100 ms it spins until its own CPU time (wake-ups included) reaches PCT % of the wall time since it
started, so the share is exact over the run whatever the wake-up cost. It is the reference load of the
monitor's accuracy test and benchmark (the 1 % process)."""

from __future__ import annotations

import sys
import time


def burn(pct: float, seconds: float, period_s: float = 0.1) -> None:
    t0 = time.monotonic()
    c0 = time.process_time()
    k = 0
    while True:
        k += 1
        due = t0 + k * period_s
        if due > t0 + seconds:
            break
        time.sleep(max(0.0, due - time.monotonic()))
        target = (time.monotonic() - t0) * pct / 100.0
        while time.process_time() - c0 < target:
            pass


if __name__ == "__main__":
    try:
        burn(float(sys.argv[1]), float(sys.argv[2]))
    except KeyboardInterrupt:  # stopped by the monitor or the user: not an error
        pass
