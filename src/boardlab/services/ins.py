"""An INS feed for the Orientation service: `python -m boardlab.services.ins HOST PORT RATE_HZ SECONDS`
sends 'INS heading pitch roll' datagrams on an absolute schedule (a slowly turning vehicle)."""

from __future__ import annotations

import socket
import sys
import time


def feed(host: str, port: int, rate_hz: float, seconds: float) -> int:
    sent = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        t0 = time.monotonic()
        k = 0
        while True:
            due = t0 + k / rate_hz
            if due - t0 >= seconds:
                break
            time.sleep(max(0.0, due - time.monotonic()))
            heading = (87.5 + 0.5 * k / rate_hz) % 360
            try:
                s.sendto(f"INS {heading:.3f} 1.250 -0.500".encode(), (host, port))
                sent += 1
            except OSError:
                pass  # nobody bound yet: the Orientation service counts what it gets
            k += 1
    return sent


if __name__ == "__main__":
    try:
        feed(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
    except KeyboardInterrupt:
        pass
