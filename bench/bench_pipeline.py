"""Pipelined requests on svc.mgmt cost CPU linear in their number: the server's CPU time per request at a
pipeline depth of 10,000 against 1,000, alternating A B, B A, on one connection each, the client writing
every request at once while it reads the responses. The role is given a 4 MiB request limit (a large SOAP
body allowed), so its input buffer can hold a whole deep pipeline: a server that moves or re-scans the rest
of its buffer per request pays the depth on every request.

The server's CPU time is the sum of its threads' on-CPU nanoseconds (/proc/PID/task/*/schedstat) across the
pipeline. Prints each pair and the median of the ratios (per-request CPU at 10k / at 1k); the target is
<= 1.5x (a cost per request that does not grow with the depth). Exits 1 if it is missed.
"""

from __future__ import annotations

import argparse
import glob
import socket
import sys
import threading

from boardlab.services.launch import free_port, start_role
from boardlab.xcheck.pairs import alternate, ratios_of

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
BODY = (
    f'<s:Envelope xmlns:s="{SOAP}"><s:Body><m:getStatus xmlns:m="urn:boardlab:vdm:mgmt:1"/></s:Body>'
    "</s:Envelope>"
).encode()
REQUEST = (
    b"POST /vdm HTTP/1.1\r\nHost: bench\r\nContent-Type: text/xml\r\nContent-Length: "
    + str(len(BODY)).encode()
    + b"\r\n\r\n"
    + BODY
)
TARGET = 1.5


def cpu_ns(pid: int) -> int:
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        with open(path) as f:
            total += int(f.read().split()[0])
    return total


def pipeline(port: int, pid: int, depth: int) -> float:
    """Sends `depth` requests at once on a new connection, reads every response; the server's CPU ns per
    request."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    payload = REQUEST * depth
    before = cpu_ns(pid)
    writer = threading.Thread(target=s.sendall, args=(payload,))
    writer.start()
    seen, tail = 0, b""
    while seen < depth:
        chunk = s.recv(1 << 16)
        if not chunk:
            raise RuntimeError(f"the server closed after {seen} of {depth} responses")
        buf = tail + chunk
        seen += buf.count(b"HTTP/1.1 200 ")
        tail = buf[-12:]  # a status line split across reads is counted once, in the next buffer
        seen -= tail.count(b"HTTP/1.1 200 ")
    used = cpu_ns(pid) - before
    writer.join()
    s.close()
    return used / depth


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--quick", action="store_true", help="2 pairs")
    args = ap.parse_args()
    pairs = 2 if args.quick else args.pairs
    port = free_port()
    rp = start_role("svc.mgmt", {"port": port, "duration_s": 600, "max_request_bytes": 4 << 20})
    try:
        pipeline(port, rp.pid, 100)  # warm

        def show(i, a, b, order):
            print(
                f"  pair {i + 1} ({order}): {a:8.0f} ns/request at 10k, {b:8.0f} at 1k: {a / b:.2f}x",
                flush=True,
            )

        done = alternate(
            pairs, lambda: pipeline(port, rp.pid, 10_000), lambda: pipeline(port, rp.pid, 1_000), show
        )
    except (OSError, RuntimeError) as exc:  # a pipeline not answered in full has no cost to compare
        print(f"  -> a pipeline failed: {exc} -> FAIL")
        return 1
    finally:
        rp.stop()
    pr = ratios_of(done, lambda a, b: a / b)
    ok = pr.median <= TARGET
    print(f"  per-request CPU, depth 10k / 1k: {pr.describe('10k', '1k')}")
    print(f"  -> median ratio {pr.median:.2f}x (target <= {TARGET}x) -> {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
