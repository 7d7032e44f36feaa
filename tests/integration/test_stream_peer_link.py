"""The stream preset over a real link: two network namespaces the test makes, joined by a veth pair whose
sending side `tc tbf` limits to 200 Mbit/s. `boardlab-kern net-sink` listens in the second (what the same
bundle starts on a peer board); `boardlab run --preset stream --workload io.net --peer ADDR` runs in the
first. The report's balance must be computed against that link (measured over it, about 200 Mbit/s), not
against a loopback figure, and must not call itself an upper bound. Both namespaces and the sink are removed
at the end, the sink by its PID.

A TCP sender's send() returns once the data is in its socket buffer, and that buffer frees in steps of up to
half its size; io.net therefore counts, for each iteration, the bytes the sink acknowledged in its time, and
times iterations of 10 ms or more. Before that, short iterations alternated between memory speed and the
link's, and one run through this 200 Mbit/s link measured 4.3 Gbit/s: its 64 KiB iterations, calibrated in
TCP's slow start, all fitted in the buffers. The sending namespace's send buffer is capped at 256 KiB
(net.ipv4.tcp_wmem is per namespace) only to keep the test short: calibration times writes, so with the
4 MiB default an iteration must outgrow 4 MiB, and a run takes seconds instead of a fraction of one."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

import pytest

# quiet: the goodput measured must come near the link's shaped rate
pytestmark = [pytest.mark.integration, pytest.mark.quiet]

RATE_BIT_S = 200e6
WMEM_MAX = 256 << 10  # the sending namespace's largest TCP send buffer
A_ADDR, B_ADDR, PORT = "10.214.0.1", "10.214.0.2", 7300


def _ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def _cell_medians(runs: list[dict]) -> list[float]:
    """Each cell's median goodput, as the report takes it (the balance uses the best cell)."""
    cells: dict[str, list[float]] = {}
    for r in runs:
        cells.setdefault(json.dumps(r["params"], sort_keys=True), []).append(r["value"])
    return [statistics.median(v) for v in cells.values()]


@pytest.fixture
def link():
    """(namespace A, namespace B); skips with the reason where `ip netns` or `tc tbf` cannot work here."""
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        pytest.skip("needs root, iproute2 (ip) and tc: the test makes two network namespaces and a veth pair")
    tag = f"bs{os.getpid() % 100000}"
    a_ns, b_ns = f"boardlab-test-{tag}-a", f"boardlab-test-{tag}-b"
    try:
        p = _ip("netns", "add", a_ns)
        if p.returncode:
            pytest.skip(f"ip netns add cannot work here: {p.stderr.strip()}")
        steps = [
            ("netns", "add", b_ns),
            ("-n", a_ns, "link", "add", f"{tag}a", "type", "veth", "peer", "name", f"{tag}b", "netns", b_ns),
            ("-n", a_ns, "addr", "add", f"{A_ADDR}/30", "dev", f"{tag}a"),
            ("-n", b_ns, "addr", "add", f"{B_ADDR}/30", "dev", f"{tag}b"),
            ("-n", a_ns, "link", "set", f"{tag}a", "up"),
            ("-n", b_ns, "link", "set", f"{tag}b", "up"),
            ("-n", a_ns, "link", "set", "lo", "up"),
            ("-n", b_ns, "link", "set", "lo", "up"),
        ]
        for step in steps:
            p = _ip(*step)
            if p.returncode:
                pytest.skip(f"ip {' '.join(step)}: {p.stderr.strip()}")
        tc = subprocess.run(
            ["ip", "netns", "exec", a_ns, "tc", "qdisc", "add", "dev", f"{tag}a", "root", "tbf",
             "rate", f"{RATE_BIT_S / 1e6:.0f}mbit", "burst", "256kb", "latency", "50ms"],
            capture_output=True, text=True,
        )  # fmt: skip
        if tc.returncode:
            pytest.skip(f"tc tbf cannot shape the veth here: {tc.stderr.strip()}")
        release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
        if release < (4, 15):  # before it, tcp_wmem is global: the cap would change the host's
            pytest.skip(f"kernel {os.uname().release}: net.ipv4.tcp_wmem is per network namespace from 4.15")
        wmem = subprocess.run(
            ["ip", "netns", "exec", a_ns, "sysctl", "-q", "-w", f"net.ipv4.tcp_wmem=4096 16384 {WMEM_MAX}"],
            capture_output=True, text=True,
        )  # fmt: skip
        if wmem.returncode:
            pytest.skip(f"cannot cap the sending namespace's TCP send buffer: {wmem.stderr.strip()}")
        yield a_ns, b_ns
    finally:
        for ns in (a_ns, b_ns):
            _ip("netns", "delete", ns)


@contextlib.contextmanager
def _sink(kern, b_ns: str):
    """`boardlab-kern net-sink` listening in namespace B, stopped by its PID at the end."""
    sink = subprocess.Popen(
        ["ip", "netns", "exec", b_ns, str(kern), "net-sink", "--listen", f"{B_ADDR}:{PORT}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(0.5)
        assert sink.poll() is None, sink.stderr.read()
        yield
    finally:
        sink.send_signal(signal.SIGTERM)
        try:
            sink.wait(timeout=10)
        except subprocess.TimeoutExpired:
            sink.kill()
            sink.wait()


def test_every_iteration_of_small_sends_is_timed_at_the_links_rate(link, kern):
    """64 KiB sends asked for 10 us iterations: the kernel's own 10 ms floor holds, and every iteration counts
    what crossed the link (before, they alternated between about 10 Gbit/s and 0.1 Gbit/s)."""
    a_ns, b_ns = link
    with _sink(kern, b_ns):
        run = subprocess.run(
            ["ip", "netns", "exec", a_ns, str(kern), "io.net", "--json", "-p", "mode=tcp_stream",
             "-p", "msg_bytes=65536", "-p", f"peer={B_ADDR}:{PORT}", "--min-iteration-ms", "0.01"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["iteration_target_ns"] >= 10e6
    values = result["metrics"]["goodput_bit_s"]["values"]
    assert len(values) == 10 and all(0.5 * RATE_BIT_S <= v < 1.1 * RATE_BIT_S for v in values), values
    assert result["info"]["received_bytes"] == result["info"]["sent_bytes"]


def test_the_stream_preset_over_a_veth_peer_reports_a_balance_against_that_link(link, kern, tmp_path):
    a_ns, b_ns = link
    with _sink(kern, b_ns):
        db = tmp_path / "stream over veth.db"
        env = {**os.environ, "BOARDLAB_STATE_DIR": str(tmp_path / "state")}
        run = subprocess.run(
            ["ip", "netns", "exec", a_ns, sys.executable, "-m", "boardlab", "run", "--preset", "stream",
             "--workload", "io.net", "--peer", B_ADDR, "--repetitions", "2", "--db", str(db), "--json"],
            capture_output=True, text=True, timeout=900, env=env,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["status"] == "complete"
    exp = subprocess.run([sys.executable, "-m", "boardlab", "export", "--db", str(db), "--format", "json"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    runs = [r for r in json.loads(exp.stdout)["runs"] if r["metric"] == "goodput_bit_s" and r["valid"]]
    tcp = [r["value"] for r in runs if r["params"]["mode"] == "tcp_stream"]
    assert tcp and all(r["params"]["peer"] == f"{B_ADDR}:{PORT}" for r in runs)
    # every run at the shaped link's rate, not loopback's tens of Gbit/s nor a buffer's memory speed
    assert all(0.3 * RATE_BIT_S <= v < 1.25 * RATE_BIT_S for v in tcp), tcp
    rep = subprocess.run([sys.executable, "-m", "boardlab", "report", "--db", str(db), "--format", "md",
                          "-o", str(tmp_path / "r.md")],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "r.md").read_text()
    row = next(line for line in md.splitlines() if f"measured over the link to {B_ADDR}" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[-2] == "link"
    m = re.fullmatch(r"([\d.]+) Mbit/s", cells[2])
    assert m and float(m[1]) * 1e6 == pytest.approx(max(_cell_medians(runs)), rel=0.01), (cells, tcp)
    assert "upper bound" not in row and "this balance is an upper bound" not in md
