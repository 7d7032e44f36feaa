"""The programs background loads run: `python -m boardlab.conditions.programs KIND CONFIG_JSON`.

Each runs as the leader of the process group boardlab started for it (background.py) and uses the standard
library only: importing more would cost a board a second before the load even starts. Every process it
starts or forks dies with it (PR_SET_PDEATHSIG); SIGINT (or SIGTERM) ends it cleanly, after which it writes
its counters as JSON to the `status` path of its configuration. The status file appears, `{"running":
true}`, when its loop begins: boardlab's warm-up counts from there, not from the interpreter's start (a
board's second). Every program ends by itself after `max_s`.

- `command`: runs a user command (an argv list, never a shell), restarted when it ends if `restart`;
- `ddgzip`: the satellite study's loop: dd writes a file from /dev/urandom or /dev/zero, gzip compresses it,
  both are deleted, again;
- `burstynet`: a Tor relay's traffic, roughly: bursts of fixed-size messages (a Tor cell is 514 bytes) over a
  loopback TCP connection or UDP socket between two child processes, with exponential on and off times; the
  off times adapt so that the two processes use `cpu_share` of one core on average.
"""

from __future__ import annotations

import ctypes
import io
import json
import mmap
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

PR_SET_PDEATHSIG = 1
# the final counters overwrite this much of the status file, written when the loop starts: a load that fills
# its disk (ddgzip on a full TMPDIR) must still be able to say so
STATUS_RESERVED_BYTES = 8192
_STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})
LOOPBACK = "127.0.0.1"  # bursty traffic never leaves the board
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent(parent: int) -> None:
    """In a child: SIGKILL when the parent dies, and exit now if it already has; the stop's signals, held
    off in the parent while it started the child (`_held_stop`), back to unblocked before the exec."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _popen(argv: list[str], **kw) -> subprocess.Popen:
    parent = os.getpid()
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, preexec_fn=lambda: _die_with_parent(parent), **kw)


@contextmanager
def _held_stop() -> Iterator[None]:
    """Holds the stop's SIGINT (and SIGTERM) off while a child starts and is recorded: landing inside Popen,
    it left a child running that the program did not know of, and so did not stop (a dd that went on filling
    a full disk after the round's files were deleted, so that the counters could not be written)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


def _started(path: str) -> None:
    """Says that the program's loop begins, for the parent's warm-up to count from (background.py
    `program_load`): the status file appears, `{"running": true}` padded with spaces to
    STATUS_RESERVED_BYTES, the room the final counters overwrite in place. Exits with a one-line reason
    when even that cannot be written (a full disk)."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(json.dumps({"running": True}).ljust(STATUS_RESERVED_BYTES))
        os.replace(tmp, path)
    except OSError as exc:
        print(f"cannot write its status file {path}: {exc.strerror}", file=sys.stderr)
        sys.exit(1)


def _write_status(path: str, doc: dict) -> None:
    """The final counters, over the room `_started` reserved (trailing spaces are valid JSON): writing
    them needs no new space. The parent reads them only once the program has exited."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    with open(fd, "w") as f:
        f.write(json.dumps(doc).ljust(STATUS_RESERVED_BYTES))


def _end_child(proc: subprocess.Popen | None, grace_s: float = 0.5) -> None:
    """SIGINT (a child started after the group's SIGINT never got it), a moment, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGINT)
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _stopping() -> None:
    """From the first SIGINT on, finish writing the status; a second one must not cut that short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


# ---- command ----


QUICK_FAILURE_S = 1.0  # a command ending sooner than this has not shown that it loads the board


def command(cfg: dict) -> int:
    argv, restart = cfg["argv"], cfg["restart"]
    deadline = time.monotonic() + cfg["max_s"]
    starts, quick_failures, last = 0, 0, None
    codes: Counter[str] = Counter()
    tail, error = b"", None
    proc, t0, stopped_running_s = None, 0.0, None
    _started(cfg["status"])
    try:
        while True:
            t0 = time.monotonic()
            try:
                with _held_stop():
                    proc = _popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            except OSError as exc:
                error = f"cannot start {argv[0]}: {exc}"
                break
            starts += 1
            assert proc.stderr is not None
            stderr = cast(
                io.BufferedReader, proc.stderr
            )  # a pipe, opened in binary: read1 takes what is there
            while chunk := stderr.read1(65536):
                tail = (tail + chunk)[-2000:]
            code = last = proc.wait()
            codes[str(code)] += 1
            if not restart or time.monotonic() >= deadline:
                break
            if code != 0 and time.monotonic() - t0 < QUICK_FAILURE_S:  # failing at once: back off, up to 2 s
                quick_failures += 1
                time.sleep(min(2.0, 0.05 * 2**quick_failures))
            else:
                quick_failures = 0
    except KeyboardInterrupt:
        _stopping()
        stopped_running_s, last = _at_stop(proc, codes, starts, t0, last)
        _end_child(proc)
    _write_status(
        cfg["status"],
        {
            "starts": starts,
            "exit_codes": dict(codes),
            "last_exit": last,  # the last start's, as Popen.returncode (negative: killed by that signal)
            "stopped_running_s": stopped_running_s,
            "stderr_tail": tail.decode(errors="replace")[-500:],
            "error": error,
        },
    )
    return 0


def _at_stop(
    proc: subprocess.Popen | None, codes: Counter[str], starts: int, t0: float, last: int | None
) -> tuple[float | None, int | None]:
    """At the run's stop, the last start's account (counted into `codes`): (how long it had run when the stop
    ended it, or None; the last start's exit). The stop's SIGINT reaches the command too (it is in the
    group): a start it killed is one the stop ended, not an exit of the command, even when its exit was
    counted before the stop reached this process."""
    if proc is None:
        return None, last
    if proc.poll() is None:  # the stop ended a running start: how long had it run
        return round(time.monotonic() - t0, 3), last
    counted = sum(codes.values()) == starts
    if proc.returncode == -signal.SIGINT:  # the stop's own signal killed it, counted yet or not
        if counted:
            codes[str(proc.returncode)] -= 1
            if not codes[str(proc.returncode)]:
                del codes[str(proc.returncode)]
        return round(time.monotonic() - t0, 3), proc.returncode
    if not counted:
        # it had ended, but the stop came before its exit was counted (reading its stderr, in its wait):
        # uncounted, a start that failed like every other read as one the stop ended, and the load as run
        codes[str(proc.returncode)] += 1
    return None, proc.returncode


# ---- ddgzip ----


def ddgzip(cfg: dict) -> int:
    block = 65536
    count = max(1, -(-cfg["size_bytes"] // block))
    raw = os.path.join(cfg["dir"], f"ddgzip-{os.getpid()}.bin")
    packed = raw + ".gz"
    deadline = time.monotonic() + cfg["max_s"]
    cycles = bytes_written = bytes_compressed = errors = 0
    last_error = None
    proc = None
    _started(cfg["status"])
    try:
        while time.monotonic() < deadline:
            with _held_stop():
                proc = _popen(
                    [cfg["dd"], f"if={cfg['source']}", f"of={raw}", f"bs={block}", f"count={count}"],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            _, err = proc.communicate()
            if proc.returncode == 0:
                with open(packed, "wb") as out:
                    with _held_stop():
                        proc = _popen(
                            [cfg["gzip"], f"-{cfg['level']}", "-c", raw], stdout=out, stderr=subprocess.PIPE
                        )
                    _, err = proc.communicate()
            if proc.returncode != 0:
                errors += 1
                last_error = err.decode(errors="replace").strip()[-300:] or f"exit {proc.returncode}"
                time.sleep(0.5)  # a full disk must not turn into a busy loop
            else:
                cycles += 1
                bytes_written += os.path.getsize(raw)
                bytes_compressed += os.path.getsize(packed)
            _remove(raw, packed)
            if cfg["pause_s"]:
                time.sleep(cfg["pause_s"])
    except KeyboardInterrupt:
        _stopping()
        _end_child(proc)
    _remove(raw, packed)  # a stop between a round's start and its clean-up leaves its files
    _write_status(
        cfg["status"],
        {
            "cycles": cycles,
            "bytes_written": bytes_written,
            "bytes_compressed": bytes_compressed,
            "errors": errors,
            "last_error": last_error,
        },
    )
    return 0


def _remove(*paths: str) -> None:
    """Deletes a round's files, those of them that exist (a failed dd or gzip leaves one or none)."""
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


# ---- burstynet ----

# Counters shared by the two children and the leader, in an anonymous shared mapping made before fork; each
# child writes only its own fields. Receiver: CPU s, bytes, messages. Sender: CPU s, bytes, messages, bursts,
# time in bursts (s), time paused (s).
_RECEIVED = struct.Struct("<dQQ")
_SENT = struct.Struct("<dQQQdd")


def _receiver(sock: socket.socket, protocol: str, shared: mmap.mmap) -> None:
    buf = bytearray(65536)
    got = msgs = 0
    try:
        conn = sock.accept()[0] if protocol == "tcp" else sock
        while True:
            n = conn.recv_into(buf)
            if n == 0 and protocol == "tcp":
                break
            got += n
            msgs += 1
            if msgs % 16 == 0:
                _RECEIVED.pack_into(shared, 0, time.process_time(), got, msgs)
    except (KeyboardInterrupt, OSError):
        pass
    _RECEIVED.pack_into(shared, 0, time.process_time(), got, msgs)


def _sender(address: tuple[str, int], cfg: dict, shared: mmap.mmap) -> None:
    rng = random.Random(cfg["seed"])
    message = rng.randbytes(cfg["message_bytes"])
    on_mean_s = cfg["burst_ms"] / 1000.0
    share = cfg["cpu_share"]
    sent = msgs = bursts = 0
    on_total = off_total = 0.0
    started = time.monotonic()
    deadline = started + cfg["max_s"]
    try:
        kind = socket.SOCK_STREAM if cfg["protocol"] == "tcp" else socket.SOCK_DGRAM
        sock = socket.socket(socket.AF_INET, kind)
        sock.connect(address)
        send = sock.sendall if cfg["protocol"] == "tcp" else sock.send
        while time.monotonic() < deadline:
            end = time.monotonic() + rng.expovariate(1.0 / on_mean_s)
            t0 = time.monotonic()
            while True:
                for _ in range(32):
                    # counted before the send: a stop (SIGINT) landing between the two must not leave a
                    # message received but never counted as sent
                    sent += len(message)
                    msgs += 1
                    try:
                        send(message)
                    except BlockingIOError:  # UDP: the socket buffer is full; the burst goes on
                        pass
                if time.monotonic() >= end:
                    break
            on_total += time.monotonic() - t0
            bursts += 1
            _SENT.pack_into(
                shared, _RECEIVED.size, time.process_time(), sent, msgs, bursts, on_total, off_total
            )
            # Pause until both processes' CPU time so far is `share` of the time elapsed: closed loop, so
            # the share holds over a run of a second as well as an hour (an open-loop random pause drifted
            # far above it on a quiet CPU). The bursts' exponential lengths keep the traffic bursty.
            receiver_cpu = _RECEIVED.unpack_from(shared, 0)[0]
            used = time.process_time() + receiver_cpu
            off = used / share - (time.monotonic() - started)
            if off > 0:
                off_total += off
                time.sleep(off)
    except (KeyboardInterrupt, OSError):
        pass
    _SENT.pack_into(shared, _RECEIVED.size, time.process_time(), sent, msgs, bursts, on_total, off_total)


def _fork(leader: int, body, *args) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _die_with_parent(leader)
            body(*args)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return pid


def _reap(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    try:
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
    except ChildProcessError:
        pass
    return True


def burstynet(cfg: dict) -> int:
    shared = mmap.mmap(-1, _RECEIVED.size + _SENT.size)
    kind = socket.SOCK_STREAM if cfg["protocol"] == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(socket.AF_INET, kind)
    sock.bind((LOOPBACK, 0))
    if cfg["protocol"] == "tcp":
        sock.listen(1)
    address = sock.getsockname()
    leader = os.getpid()
    t0 = time.monotonic()
    receiver = _fork(leader, _receiver, sock, cfg["protocol"], shared)
    sender = _fork(leader, _sender, address, cfg, shared)
    sock.close()
    left = [receiver, sender]
    _started(cfg["status"])
    try:
        os.waitpid(sender, 0)  # it ends at max_s
        left.remove(sender)
        if not _reap(receiver, 1.0):  # TCP: the receiver sees the end of the stream; UDP: tell it
            os.kill(receiver, signal.SIGINT)
            _reap(receiver, 1.0)
        left.remove(receiver)
    except KeyboardInterrupt:
        _stopping()
        left = [pid for pid in left if not _reap(pid, 1.0)]  # they got the SIGINT too: their last counters
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    recv_cpu, got, got_msgs = _RECEIVED.unpack_from(shared, 0)
    send_cpu, sent, sent_msgs, bursts, on_s, off_s = _SENT.unpack_from(shared, _RECEIVED.size)
    elapsed = time.monotonic() - t0
    _write_status(
        cfg["status"],
        {
            "protocol": cfg["protocol"],
            "bursts": bursts,
            "bytes_sent": sent,
            "bytes_received": got,
            "messages_sent": sent_msgs,
            "messages_received": got_msgs,
            "burst_s": round(on_s, 4),
            "paused_s": round(off_s, 4),
            "elapsed_s": round(elapsed, 4),
            "cpu_s": round(recv_cpu + send_cpu, 4),
            "cpu_share": round((recv_cpu + send_cpu) / elapsed, 4) if elapsed > 0 else None,
        },
    )
    return 0


PROGRAMS = {"command": command, "ddgzip": ddgzip, "burstynet": burstynet}


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if len(argv) != 2 or argv[0] not in PROGRAMS:
        print(
            f"usage: python -m boardlab.conditions.programs {{{','.join(PROGRAMS)}}} CONFIG_JSON",
            file=sys.stderr,
        )
        return 2
    return PROGRAMS[argv[0]](json.loads(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
