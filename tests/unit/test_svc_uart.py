"""The GPS over a serial device, as on a board with a UART: a pty pair stands in for the UART (its far end,
the master, is the test). The feeder (svc.nmea device=...) sets the line to baud 8N1 raw and writes paced
sentences; the publisher (svc.pub source=nmea device=...) sets it to baud 8N1 in its read mode and parses
what arrives. A pty ignores the speed, so what is checked is the line setup, the bytes, and the parsing."""

from __future__ import annotations

import os
import random
import select
import termios
import time

import pytest

from boardlab.services.launch import run_role, start_role

from helpers import under_qemu_user

pytestmark = [
    pytest.mark.skipif(under_qemu_user(), reason="qemu-user: the roles are tested natively"),
    pytest.mark.spawns,
]

# the NMEA 0183 examples everyone quotes (valid checksums): 48 deg 07.038' N, 11 deg 31.000' E
GGA = b"$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
RMC = b"$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A\r\n"


def nmea_ok(line: bytes) -> bool:
    body, _, cks = line.rstrip(b"\r\n").partition(b"*")
    x = 0
    for c in body[1:]:
        x ^= c
    return body.startswith(b"$") and len(cks) == 2 and int(cks, 16) == x


@pytest.fixture
def uart():
    master, slave = os.openpty()
    try:
        yield master, os.ttyname(slave), slave
    finally:
        os.close(master)
        os.close(slave)


def test_feeder_sets_the_uart_to_4800_8n1_raw_and_writes_whole_sentences(kern, uart):
    master, path, slave = uart
    feeder = start_role("svc.nmea", {"device": path, "duration_s": 2.2, "start_delay_s": 0.1})
    got = b""
    deadline = time.monotonic() + 6
    while feeder.proc.poll() is None and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            got += os.read(master, 4096)
    res = feeder.result(10)
    while select.select([master], [], [], 0.05)[0]:
        got += os.read(master, 4096)
    assert res["ok"], res["errors"]
    s = res["service"]
    assert s["bursts"] >= 2 and len(got) == s["bytes"] > 0 and s["dropped_bytes"] == 0
    lines = got.split(b"\n")[:-1]  # complete lines (the run may end inside a burst)
    # raw output: every sentence ends CR LF, not the CR CR LF that ONLCR would make of it
    assert len(lines) >= 12 and all(x.endswith(b"\r") and not x.endswith(b"\r\r") for x in lines)
    assert all(nmea_ok(x + b"\n") for x in lines)
    assert {x[3:6] for x in lines} == {b"GGA", b"RMC", b"GSA", b"GSV"}
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(slave)
    assert ospeed == termios.B4800 and cflag & termios.CSIZE == termios.CS8
    assert not cflag & (termios.PARENB | termios.CSTOPB) and cflag & termios.CLOCAL
    assert not oflag & termios.OPOST


def test_feeder_refuses_a_rate_termios_lacks(kern, uart):
    _, path, _ = uart
    res = run_role("svc.nmea", {"device": path, "duration_s": 0.2, "baud": 5000}, timeout_s=20)
    assert not res["ok"] and "baud=5000" in res["errors"][0]


@pytest.mark.parametrize("mode", ["canonical", "byte", "block"])
def test_publisher_reads_the_uart_in_each_mode_and_parses_the_fix(kern, uart, mode):
    master, path, slave = uart
    group, port = f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}", random.randint(20000, 40000)
    pub = start_role(
        "svc.pub",
        {
            "group": group,
            "port": port,
            "rate_hz": 5,
            "duration_s": 1.5,
            "source": "nmea",
            "device": path,
            "read_mode": mode,
            "baud": 9600,
        },
    )
    # the publisher is ready: the line is set up as it reads it
    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = termios.tcgetattr(slave)
    assert ispeed == termios.B9600 and cflag & termios.CSIZE == termios.CS8 and not cflag & termios.PARENB
    assert not lflag & termios.ECHO  # nothing written by the GPS comes back to it
    assert bool(lflag & termios.ICANON) == (mode == "canonical")
    if mode == "byte":
        assert cc[termios.VMIN] == 1 and cc[termios.VTIME] == 0
    burst = (GGA + RMC) * 3
    for b in burst:  # as a UART delivers them: one byte after another
        os.write(master, bytes([b]))
    res = pub.result(20)
    assert res["ok"], res["errors"]
    r, fix = res["service"]["reader"], res["service"]["last_fix"]
    assert r["read_mode"] == mode and r["bytes"] == len(burst)
    assert r["sentences_ok"] == 6 and r["sentences_bad"] == 0
    assert fix["latitude_deg"] == pytest.approx(48 + 7.038 / 60, abs=1e-6)
    assert fix["longitude_deg"] == pytest.approx(11 + 31 / 60, abs=1e-6)
    if mode == "canonical":
        assert r["reads"] <= 6 + 2  # a line per read
    if mode == "byte":
        assert r["reads"] >= len(burst)
