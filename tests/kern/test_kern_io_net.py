"""io.net against its own sink on loopback: TCP stream by every send path, paced UDP, TCP request/response."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from helpers import IO_URING_SETUP, kern_json, kern_json_denying, kern_ok_or_skip, under_qemu_user

FAST = ("--iterations", "3", "--warmup-max-iterations", "3")
PATHS = ("write", "sendfile", "splice", "msg_zerocopy", "uring_zc")


def net(kern, *params, extra=FAST):
    args = [a for p in params for a in ("--param", p)]
    return kern_json(kern, "io.net", *args, *extra)


@pytest.mark.parametrize("path", PATHS)
def test_tcp_stream_conserves_bytes_by_every_send_path(kern, path):
    rc, res = net(kern, f"send_path={path}", "msg_bytes=64k")
    kern_ok_or_skip(rc, res)
    info = res["info"]
    # The sink's report matched what was sent, byte for byte (verify fails otherwise).
    assert info["received_bytes"] == info["sent_bytes"] > 0
    g = res["metrics"]["goodput_bit_s"]
    assert g["unit"] == "bit/s" and all(v > 1e6 for v in g["values"])
    assert res["metrics"]["cpu_ns_per_byte_sender"]["value"] > 0
    assert res["metrics"]["cpu_ns_per_byte_receiver"]["value"] > 0
    assert info["send_path"] == path
    assert info["kernel_copied"]


@pytest.mark.parametrize("path", ("msg_zerocopy", "uring_zc"))
def test_zero_copy_on_loopback_reports_that_the_kernel_copied(kern, path):
    rc, res = net(kern, f"send_path={path}", "msg_bytes=64k")
    kern_ok_or_skip(rc, res)
    info = res["info"]
    assert info["zerocopy_completions"] > 0
    # Documentation/networking/msg_zerocopy.rst: loopback always takes the deferred copy.
    assert info["zerocopy_copied"] == info["zerocopy_completions"]
    assert info["kernel_copied"].startswith("yes")


def test_paced_udp_holds_its_rate_and_counts_every_datagram(kern):
    rc, res = net(kern, "mode=udp_stream", "rate_bit_s=20e6", "udp_bytes=1000", extra=("--iterations", "5"))
    kern_ok_or_skip(rc, res)
    m, info = res["metrics"], res["info"]
    # Pacing from the bytes sent so far: the offered rate is held within a few percent per iteration. Under
    # qemu-user beside stress-ng a stalled sender catches up in bursts (1.28 Gbit/s measured in one
    # iteration): there only the counts are checked, as timings under emulation mean nothing.
    if not under_qemu_user():
        assert m["goodput_bit_s"]["median"] == pytest.approx(20e6, rel=0.05)
    assert info["sent_datagrams"] == info["received_datagrams"] + info["lost_datagrams"]
    assert m["loss_percent"]["value"] == pytest.approx(100 * info["lost_datagrams"] / info["sent_datagrams"])
    assert m["jitter_ns"]["value"] >= 0 and m["jitter_ns"]["unit"] == "ns"


def test_unpaced_udp_loss_is_counted_not_an_error(kern):
    rc, res = net(kern, "mode=udp_stream", "rate_bit_s=0", "sockbuf_bytes=8192")
    kern_ok_or_skip(rc, res)
    assert 0 <= res["metrics"]["loss_percent"]["value"] <= 100


def test_tcp_rr_times_each_transaction(kern):
    rc, res = net(
        kern, "mode=tcp_rr", "msg_bytes=64", extra=("--iterations", "4", "--warmup-max-iterations", "0")
    )
    kern_ok_or_skip(rc, res)
    m = res["metrics"]
    assert "goodput_bit_s" not in m and m["transactions_s"]["unit"] == "1/s"
    p50, p99, p999 = (m[f"latency_{q}_ns"]["value"] for q in ("p50", "p99", "p999"))
    assert 0 < p50 <= p99 <= p999
    # A transaction cannot take less time than the rate says on average: p50 <= 1/tps x a margin for skew.
    assert p50 < 1e9 / min(m["transactions_s"]["values"]) * 20


@pytest.mark.parametrize("mode", ("tcp_stream", "tcp_rr", "udp_stream"))
def test_a_missing_byte_is_an_error(kern, mode):
    rc, res = net(kern, f"mode={mode}", "rate_bit_s=10e6", extra=(*FAST, "--corrupt"))
    assert rc == 1 and res["verified"] is False and res["metrics"] == {}


def test_send_paths_other_than_write_are_for_tcp_stream(kern):
    rc, res = net(kern, "mode=udp_stream", "send_path=sendfile")
    assert rc == 1 and any("tcp_stream" in e for e in res["errors"])


def test_a_separate_sink_process_serves_a_given_peer(kern):
    sink = subprocess.Popen(
        [str(kern), "net-sink", "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = sink.stdout.readline().split()
        assert line[0] == "listening"
        for mode in ("tcp_stream", "udp_stream", "tcp_rr"):
            rc, res = net(kern, f"mode={mode}", f"peer={line[1]}", "rate_bit_s=10e6")
            kern_ok_or_skip(rc, res)
            assert res["info"]["peer"] == line[1] and "sink_pid" not in res["info"]
    finally:
        os.killpg(sink.pid, signal.SIGKILL)
        sink.wait()


def test_a_bad_peer_is_named(kern):
    rc, res = net(kern, "peer=localhost")
    assert rc == 1 and any("HOST:PORT" in e for e in res["errors"])


def test_net_sink_needs_listen(kern):
    proc = subprocess.run([str(kern), "net-sink"], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2 and "--listen" in proc.stderr


def test_uring_zc_denied_by_seccomp_is_unsupported_with_the_reason(kern):
    # As under a container's default seccomp profile: io_uring_setup fails with EPERM.
    rc, res = kern_json_denying(kern, IO_URING_SETUP, "io.net", "--param", "send_path=uring_zc", *FAST)
    if res.get("supported") is False and "io_uring denied" not in res["reason"]:
        pytest.skip(f"uring_zc unsupported here for another reason: {res['reason']}")
    assert rc == 1 and res["supported"] is False and not res["ok"] and res["metrics"] == {}
    assert res["reason"].startswith("io_uring denied (io_uring_setup: Operation not permitted)")
