"""The service roles of boardlab-kern: publisher, subscriber, SOAP endpoint, NMEA feeder, load generator.

Every server runs on loopback (or in a network namespace the test creates) and is stopped by its PID.
Timing assertions check what the code controls (counts, schedules, ordering), with margins for a busy
machine; the tight figures are for bench/bench_services.py.
"""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import subprocess
import time
import urllib.request

import pytest

from boardlab.services.launch import free_port, run_role, start_role

from helpers import LatenessProbe, under_qemu_user

pytestmark = pytest.mark.skipif(
    under_qemu_user(),
    reason="qemu-user does not emulate the multicast, overflow-count and timestamp socket options: the roles "
    "are tested natively",
)

SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
MGMT = "urn:boardlab:vdm:mgmt:1"


def unique_group() -> tuple[str, int]:
    """A group and port of its own, so parallel runs of the suite never hear each other."""
    return f"239.255.{random.randint(1, 254)}.{random.randint(1, 254)}", random.randint(20000, 40000)


def envelope(inner: str) -> bytes:
    return (f'<s:Envelope xmlns:s="{SOAP}"><s:Body>{inner}</s:Body></s:Envelope>').encode()


def post(port: int, body: bytes, timeout: float = 5) -> tuple[int, str]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/vdm", data=body, headers={"Content-Type": "text/xml; charset=utf-8"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_list_names_every_role_with_its_parameters(kern):
    out = subprocess.run([str(kern), "--list", "--json"], capture_output=True, text=True, check=True).stdout
    specs = {k["name"]: k for k in json.loads(out)["kernels"]}
    for role in ("svc.pub", "svc.sub", "svc.mgmt", "svc.nmea", "svc.load"):
        assert specs[role]["family"] == "svc" and specs[role]["supported"], role
    assert {"rate_hz", "source", "read_mode", "group", "iface_addr"} <= {
        p["name"] for p in specs["svc.pub"]["params"]
    }
    assert {"parser", "rcvbuf_bytes", "publish_dot"} <= {p["name"] for p in specs["svc.sub"]["params"]}


def test_pub_sub_deliver_every_message_with_its_latency(kern):
    group, port = unique_group()
    sub = start_role("svc.sub", {"group": group, "port": port, "duration_s": 8, "expect": 50})
    pub = run_role("svc.pub", {"group": group, "port": port, "rate_hz": 100, "duration_s": 0.5}, timeout_s=20)
    res = sub.result(20)
    assert pub["ok"] and res["ok"], (pub["errors"], res["errors"])
    p, s = pub["service"], res["service"]
    assert p["schema"] == 1 and p["role"] == "pub" and p["message_kind"] == "Position"
    assert p["sent"] == 50 and p["send_errors"] == 0
    assert (
        p["build_ns"]["count"] == 50 and p["send_ns"]["count"] == 50 and p["schedule_lag_ns"]["count"] == 50
    )
    assert s["received"] == 50 and s["lost"] == 0 and s["duplicates"] == 0 and s["bad"] == 0
    assert s["by_kind"]["Position"] == {
        "unique": 50,
        "first_seq": 0,
        "max_seq": 49,
        "seq_jumps": 0,
        "seq_resyncs": 0,
    }
    lat = s["oneway_latency_ns"]
    assert lat["count"] == 50 and 0 < lat["p50"] <= lat["p99"] <= lat["max"] < 2e9


def _libxml2_built(kern) -> bool:
    out = subprocess.run(
        [str(kern), "svc.sub", "--json", "--param", "parser=libxml2", "--param", "duration_s=0.05"],
        capture_output=True,
        text=True,
        timeout=20,
    ).stdout
    return json.loads(out).get("supported") is not False


@pytest.mark.parametrize("parser", ["expat", "libxml2"])
def test_both_parsers_read_every_message_and_its_values(kern, parser):
    if parser == "libxml2" and not _libxml2_built(kern):
        pytest.skip("boardlab-kern was built without libxml2 (install libxml2-dev and rebuild)")
    group, port = unique_group()
    sub = start_role(
        "svc.sub", {"group": group, "port": port, "duration_s": 8, "expect": 30, "parser": parser}
    )
    run_role("svc.pub", {"group": group, "port": port, "rate_hz": 100, "duration_s": 0.3}, timeout_s=20)
    s = sub.result(20)["service"]
    assert s["parser"] == parser and s["received"] == 30 and s["bad"] == 0 and s["lost"] == 0
    # the publisher's synthetic position, as the text of the message's elements
    assert s["last_fix"]["latitude_deg"] == pytest.approx(42.5133, abs=1e-4)
    assert s["last_fix"]["longitude_deg"] == pytest.approx(-83.0261, abs=1e-4)
    assert s["parse_ns"]["count"] == 30


def test_software_tx_timestamps_pair_with_every_message(kern):
    group, port = unique_group()
    pub = run_role(
        "svc.pub",
        {"group": group, "port": port, "rate_hz": 200, "duration_s": 0.25, "tx_timestamp": 1},
        timeout_s=20,
    )["service"]
    tx = pub["tx_timestamp"]
    if not tx["supported"]:
        pytest.skip(f"no software TX timestamps here: {tx['reason']}")
    assert tx["reason"] is None and tx["stamps"] == pub["sent"] == 50
    # loopback stamps inside sendto: built -> TX is no longer than built -> sendto returned
    assert 0 < tx["built_to_tx_ns"]["p50"] <= pub["send_ns"]["max"]
    off = run_role(
        "svc.pub", {"group": group, "port": port, "rate_hz": 200, "duration_s": 0.05}, timeout_s=20
    )
    assert off["service"]["tx_timestamp"] is None  # not asked: no stamping, no error-queue reads


def test_rate_schedule_is_absolute(kern):
    """The i-th message is due at t0 + i/rate: the count over the run is exact, and the rate holds."""
    group, port = unique_group()
    pub = run_role("svc.pub", {"group": group, "port": port, "rate_hz": 500, "duration_s": 1}, timeout_s=20)
    assert pub["service"]["sent"] == 500
    assert pub["metrics"]["achieved_rate_hz"]["value"] == pytest.approx(500, rel=0.05)


def _in_netns(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up && " + script],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_forced_overflow_drops_add_up_exactly(kern, tmp_path, unshare_net):
    """A 4 KiB receive buffer, a stalled subscriber and a 5 kHz burst: sent - received = the socket's
    SO_RXQ_OVFL drops = the namespace's Udp RcvbufErrors, exactly (a private netns has no other traffic)."""
    k = f"'{kern}'"
    script = (
        "cat /proc/net/snmp > before; "
        f"{k} svc.sub --json --param duration_s=4 --param rcvbuf_bytes=4096 --param stall_ms=600 "
        "--param group=239.255.9.9 --param port=21000 > sub.json 2> sub.err & sleep 0.3; "
        f"{k} svc.pub --json --param group=239.255.9.9 --param port=21000 --param rate_hz=5000 "
        "--param duration_s=0.5 > pub1.json; sleep 0.5; "
        # after the stall: a few more, so the subscriber sees the drop count on a later datagram
        f"{k} svc.pub --json --param group=239.255.9.9 --param port=21000 --param rate_hz=50 "
        "--param duration_s=0.2 > pub2.json; wait; cat /proc/net/snmp > after"
    )
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up && " + script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    sub = json.loads((tmp_path / "sub.json").read_text())["service"]
    sent = sum(json.loads((tmp_path / f).read_text())["service"]["sent"] for f in ("pub1.json", "pub2.json"))
    from boardlab.platform.procacct import parse_snmp

    def rcvbuf(name):
        return parse_snmp((tmp_path / name).read_text())["Udp"]["RcvbufErrors"]

    dropped = rcvbuf("after") - rcvbuf("before")
    assert sub["socket_overflow_drops"] > 0
    assert sent - sub["received"] == sub["socket_overflow_drops"] == dropped
    # two publishers, each numbering from 0: the sequence check sees the drops of the first as its gap
    assert sub["received"] + sub["socket_overflow_drops"] == sent


@pytest.fixture()
def mgmt(kern):
    port = free_port()
    rp = start_role("svc.mgmt", {"port": port, "duration_s": 60, "max_request_bytes": 4096})
    yield port, rp
    rp.stop()


def test_mgmt_serves_wsdl_and_every_operation(mgmt):
    port, rp = mgmt
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/vdm?wsdl", timeout=5) as r:
        wsdl = r.read().decode()
    assert 'targetNamespace="urn:boardlab:vdm:mgmt:1"' in wsdl and f"127.0.0.1:{port}/vdm" in wsdl
    code, body = post(port, envelope(f'<m:getPosition xmlns:m="{MGMT}"/>'))
    assert code == 200 and "<m:latitudeDeg>42.5133000</m:latitudeDeg>" in body
    code, body = post(
        port, envelope(f'<m:setEnabled xmlns:m="{MGMT}"><m:enabled>false</m:enabled></m:setEnabled>')
    )
    assert code == 200 and "<m:enabled>false</m:enabled>" in body
    code, body = post(port, envelope(f'<m:getStatus xmlns:m="{MGMT}"/>'))
    assert code == 200 and "<m:enabled>false</m:enabled>" in body and "<m:requestsServed>" in body


def test_mgmt_answers_bad_requests_with_soap_faults(mgmt):
    port, rp = mgmt
    code, body = post(port, b"<not xml")
    assert code == 500 and "<faultcode>soap:Client</faultcode>" in body and "malformed XML" in body
    code, body = post(port, envelope('<m:reboot xmlns:m="urn:x"/>'))
    assert code == 500 and "unknown operation" in body
    code, body = post(port, b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>')
    assert code == 500 and "DOCTYPE" in body
    code, body = post(port, envelope("<x>" + "a" * 5000 + "</x>"))
    assert code == 413 and "exceeds the limit of 4096 bytes" in body


def test_mgmt_survives_fuzzed_requests(mgmt):
    """Random mutations of a valid request, random bytes, truncated and oversized headers: every one gets
    an HTTP answer or a closed connection, and the endpoint still serves a valid call afterwards."""
    port, rp = mgmt
    rng = random.Random(16)
    good = envelope(f'<m:setEnabled xmlns:m="{MGMT}"><m:enabled>true</m:enabled></m:setEnabled>')
    answered = 0
    for i in range(300):
        kind = i % 4
        if kind == 0:
            body = bytearray(good)
            for _ in range(rng.randint(1, 8)):
                body[rng.randrange(len(body))] = rng.randrange(256)
            raw = b"POST /vdm HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + bytes(body)
        elif kind == 1:
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 600)))
        elif kind == 2:
            raw = b"POST /vdm HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % rng.randint(0, 10**9) + good[:10]
        else:
            raw = b"GET /" + b"a" * rng.randint(5000, 12000) + b" HTTP/1.1\r\nX: y\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.settimeout(0.5)
            try:
                s.sendall(raw)
                s.shutdown(socket.SHUT_WR)
                if s.recv(65536):
                    answered += 1
            except (TimeoutError, ConnectionResetError, BrokenPipeError):
                pass
        assert rp.proc.poll() is None, f"the endpoint died on fuzz case {i}"
    assert answered > 100
    code, body = post(port, envelope(f'<m:getStatus xmlns:m="{MGMT}"/>'))
    assert code == 200
    rp.stop()
    res = rp.result(10)
    assert res["ok"] and res["service"]["faults"] > 50


def test_open_loop_load_keeps_its_schedule(mgmt, kern):
    port, _ = mgmt
    res = run_role(
        "svc.load", {"port": port, "rate_hz": 200, "duration_s": 1, "connections": 2}, timeout_s=30
    )
    s = res["service"]
    assert res["ok"] and s["scheduled"] == 200 and s["sent"] == 200
    assert s["ok"] + s["errors"] + s["timeouts"] == 200 and s["errors"] == 0
    assert s["corrected_ns"]["count"] == s["ok"]
    # the corrected latency contains the service time and the start lag
    assert s["corrected_ns"]["max"] >= s["service_ns"]["max"]


def test_stall_is_seen_by_open_loop_and_hidden_from_service_time(kern):
    """The coordinated-omission test: the server freezes 200 ms every 2 s; at 100 req/s the requests that
    were due during a freeze wait for it, so corrected latency shows the freeze and service time does not."""
    port = free_port()
    srv = start_role("svc.mgmt", {"port": port, "duration_s": 30, "stall_every_ms": 2000, "stall_ms": 200})
    try:
        with LatenessProbe() as probe:
            res = run_role("svc.load", {"port": port, "rate_hz": 100, "duration_s": 4.5}, timeout_s=30)
    finally:
        srv.stop()
    s = res["service"]
    # whatever the machine's load: every scheduled request is accounted for, and the freezes are seen
    assert s["scheduled"] == 450 and s["ok"] + s["errors"] + s["timeouts"] == 450
    assert s["late_starts"] >= 10 and s["corrected_ns"]["p99"] >= 150e6
    # and on a machine that wakes the load generator on time, service time does not contain the freeze
    probe.check(s["ok"] == 450, f"every request answered ({s['ok']} of 450)", tolerance_ms=5)
    ratio = s["corrected_ns"]["p99"] / s["service_ns"]["p99"]
    probe.check(ratio > 10, f"corrected p99 over 10x service p99 ({ratio:.1f}x)", tolerance_ms=5)


def test_closed_loop_at_a_rate_waits_for_each_response(mgmt, kern):
    port, _ = mgmt
    res = run_role("svc.load", {"port": port, "mode": "closed", "rate_hz": 50, "duration_s": 1}, timeout_s=30)
    s = res["service"]
    assert s["mode"] == "closed" and s["ok"] == pytest.approx(50, abs=2) and s["errors"] == 0


def test_nmea_feeder_paces_bytes_at_the_baud_rate(kern, tmp_path):
    link = tmp_path / "gps"
    feeder = start_role("svc.nmea", {"duration_s": 2.0, "link": str(link), "start_delay_s": 0.3})
    fd = os.open(link, os.O_RDONLY | os.O_NOCTTY)
    import termios
    import tty

    tty.setraw(fd)
    stamps, data = [], b""
    t_end = time.monotonic() + 3.5
    with LatenessProbe() as probe:
        while time.monotonic() < t_end:
            import select

            if select.select([fd], [], [], 0.2)[0]:
                chunk = os.read(fd, 256)
                stamps.extend([time.monotonic()] * len(chunk))
                data += chunk
    os.close(fd)
    res = feeder.result(10)
    s = res["service"]
    assert s["bursts"] == 2 and s["dropped_bytes"] == 0 and s["bytes"] == len(data)
    assert res["metrics"]["paced_bytes_per_s"]["value"] == pytest.approx(480, rel=0.01)
    lines = data.decode().split("\r\n")[:-1]
    assert [x[3:6] for x in lines[:6]] == ["GGA", "RMC", "GSA", "GSV", "GSV", "GSV"]
    for line in lines:  # every checksum is the XOR of the bytes between $ and *
        body, cs = line[1:].split("*")
        x = 0
        for ch in body.encode():
            x ^= ch
        assert f"{x:02X}" == cs
    # as the reader saw it: the first burst's bytes arrive at 480 B/s, not at once. The rate is the median
    # over windows of half the burst, so that a reader or feeder late once (a loaded machine: the bytes
    # wait in the pty and come in one read) moves a few windows, not the figure.
    n1 = len(data) // 2
    k = n1 // 2
    per_byte_s = statistics.median(stamps[i + k] - stamps[i] for i in range(n1 - k)) / k
    probe.check(
        abs(per_byte_s * 480 - 1) <= 0.1,
        f"the first burst's bytes came at {1 / per_byte_s:.0f} B/s (median of windows), paced 480 (10%)",
        tolerance_ms=20,
    )
    assert not link.exists()
    del termios


def test_pub_reads_the_gps_in_each_mode(kern, tmp_path):
    group, port = unique_group()
    out = {}
    for mode in ("canonical", "byte", "block"):
        link = tmp_path / f"gps-{mode}"
        feeder = start_role("svc.nmea", {"duration_s": 2.0, "link": str(link), "start_delay_s": 0.3})
        pub = run_role(
            "svc.pub",
            {
                "group": group,
                "port": port,
                "rate_hz": 10,
                "duration_s": 2.5,
                "source": "nmea",
                "device": str(link),
                "read_mode": mode,
            },
            timeout_s=20,
        )
        feeder.result(10)
        out[mode] = pub["service"]["reader"]
        assert pub["ok"], pub["errors"]
        assert out[mode]["sentences_ok"] == 12 and out[mode]["sentences_bad"] == 0
        assert pub["service"]["last_fix"]["latitude_deg"] == pytest.approx(42.5133, abs=1e-3)
    # canonical: one read per sentence; byte: one per byte; block: fewer than canonical
    assert out["canonical"]["reads"] <= 12 + 25
    assert out["byte"]["reads"] >= out["byte"]["bytes"]
    assert out["byte"]["reads"] > 10 * out["canonical"]["reads"]


def test_dot_service_derives_direction_of_travel(kern):
    group, port = unique_group()
    out_port = port + 1
    dot_sub = start_role("svc.sub", {"group": group, "port": out_port, "duration_s": 10, "expect": 5})
    dot = start_role(
        "svc.sub",
        {
            "group": group,
            "port": port,
            "duration_s": 10,
            "publish_dot": 1,
            "out_group": group,
            "out_port": out_port,
        },
    )
    ori = start_role(
        "svc.pub", {"group": group, "port": port, "rate_hz": 20, "duration_s": 1.2, "message": "orientation"}
    )
    time.sleep(0.2)
    run_role("svc.pub", {"group": group, "port": port, "rate_hz": 10, "duration_s": 1}, timeout_s=20)
    ori.result(20)
    got = dot_sub.result(20)["service"]
    dot.stop()
    d = dot.result(10)["service"]
    assert d["role"] == "dot" and d["dot_sent"] >= 5
    assert got["by_kind"]["DirectionOfTravel"]["unique"] >= 5 and got["bad"] == 0


def test_publisher_management_switches_transmission(kern):
    """setEnabled(false) on the publisher's own endpoint stops its messages; getStatus counts them."""
    group, port = unique_group()
    mport = free_port()
    pub = start_role(
        "svc.pub", {"group": group, "port": port, "rate_hz": 50, "duration_s": 2, "mgmt_port": mport}
    )
    from boardlab.services.launch import wait_port

    wait_port("127.0.0.1", mport)
    time.sleep(0.5)
    code, body = post(
        mport, envelope(f'<m:setEnabled xmlns:m="{MGMT}"><m:enabled>false</m:enabled></m:setEnabled>')
    )
    assert code == 200
    code, body = post(mport, envelope(f'<m:getStatus xmlns:m="{MGMT}"/>'))
    assert "<m:enabled>false</m:enabled>" in body and "<m:messagesSent>" in body
    res = pub.result(20)["service"]
    assert res["sent"] > 0 and res["skipped_disabled"] > 0 and res["sent"] + res["skipped_disabled"] == 100
    assert res["mgmt"]["operations"] == {"getPosition": 0, "setEnabled": 1, "getStatus": 1}


def test_poisson_arrivals_average_the_rate(mgmt, kern):
    port, _ = mgmt
    res = run_role(
        "svc.load",
        {"port": port, "rate_hz": 400, "duration_s": 2, "arrival": "poisson", "connections": 4},
        timeout_s=30,
    )
    s = res["service"]
    # Poisson count over 2 s at 400 Hz: mean 800, sd ~28; 5 sd either side
    assert s["arrival"] == "poisson" and 660 <= s["scheduled"] <= 940
    assert s["ok"] + s["errors"] + s["timeouts"] == s["scheduled"]
