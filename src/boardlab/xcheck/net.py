"""io.net against iperf3 on the same path: client and server (sink) pinned to the same CPUs on both sides."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from boardlab.errors import MeasurementError
from boardlab.platform.netstat import read_snmp, udp_loss_between
from boardlab.xcheck import pairs
from boardlab.xcheck.jsonrobust import parse
from boardlab.xcheck.pairs import pin, whole_run_rate

# CPU per byte: iperf3's cpu_utilization_percent (its process's rusage over the test's wall time) x the
# test's seconds / bytes, against boardlab's sender thread and sink process CPU over the bytes they moved.
RATIO_METRICS = ("goodput_bit_s", "cpu_ns_per_byte_sender", "cpu_ns_per_byte_receiver", "zero_loss_bit_s")
SEND_PATHS = ("write", "sendfile")  # the two iperf3 has: write(2), and sendfile(2) with -Z


@dataclass(frozen=True)
class NetJob:
    mode: str = "tcp"  # tcp | udp | zeroloss (the highest UDP rate without loss, RFC 2544)
    host: str = "127.0.0.1"
    msg_bytes: int = 128 * 1024  # TCP write size (iperf3 -l)
    udp_bytes: int = 1400
    rate_bit_s: float = 100e6  # UDP offered rate (iperf3 -b)
    duration_s: float = 3.0
    client_cpu: int | None = None
    server_cpu: int | None = None
    sockbuf_bytes: int = 0
    send_path: str = "write"  # TCP: write | sendfile (iperf3 -Z)
    lo_bit_s: float = 10e6  # zeroloss: the searched range and its resolution, alike for both tools
    hi_bit_s: float = 1e9
    resolution: float = 0.05

    def kern_params(self) -> list[str]:
        params: dict[str, object] = {"sink_addr": f"{self.host}:0", "sockbuf_bytes": self.sockbuf_bytes}
        if self.server_cpu is not None:
            params["sink_cpu"] = self.server_cpu
        if self.mode == "tcp":
            params |= {"mode": "tcp_stream", "msg_bytes": self.msg_bytes, "send_path": self.send_path}
        else:
            params |= {"mode": "udp_stream", "udp_bytes": self.udp_bytes, "rate_bit_s": self.rate_bit_s}
        return [a for k, v in params.items() for a in ("--param", f"{k}={v}")]

    def iperf_client(self, port: int) -> list[str]:
        cmd = ["iperf3", "-c", self.host, "-p", str(port), "-t", f"{self.duration_s:g}", "-J"]
        if self.mode == "tcp":
            cmd += ["-l", str(self.msg_bytes)] + (["-Z"] if self.send_path == "sendfile" else [])
        else:
            cmd += ["-u", "-b", f"{self.rate_bit_s:.0f}", "-l", str(self.udp_bytes)]
        if self.sockbuf_bytes:
            cmd += ["-w", str(self.sockbuf_bytes)]
        return cmd

    def iperf_server(self, port: int) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", self.host, "-p", str(port)]


def kern_command(kern: Path, job: NetJob) -> list[str]:
    """boardlab-kern io.net sending for about iperf3's -t: that many seconds of timed iterations."""
    return pairs.kern_command(kern, "io.net", job.kern_params(), pairs.iterations_for(job.duration_s * 1000))


def run_boardlab(kern: Path, job: NetJob, notes: list[str] | None = None) -> dict[str, float | None]:
    before = read_snmp("/") if job.mode == "udp" else None
    res = pairs.run_kern(kern_command(kern, job), "io.net", job.client_cpu, job.duration_s + 600)
    m = res["metrics"]
    size = job.msg_bytes if job.mode == "tcp" else job.udp_bytes
    out: dict[str, float | None] = {"goodput_bit_s": whole_run_rate(res, size * 8.0)}
    if job.mode == "tcp":
        for side in ("sender", "receiver"):
            metric = m.get(f"cpu_ns_per_byte_{side}") or {}
            out[f"cpu_ns_per_byte_{side}"] = metric.get("value")
    if job.mode == "udp":
        out["loss_percent"] = m["loss_percent"]["value"]
        out["jitter_ns"] = m["jitter_ns"]["value"]
        why = udp_loss_between(before, read_snmp("/"))
        lost = int(res["info"].get("lost_datagrams", 0))
        if why is not None and lost and notes is not None:
            notes.append(f"boardlab UDP: {why.text(lost)} (system-wide counters)")
    return out


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def iperf_metrics(doc: dict, mode: str) -> dict[str, float | None]:
    if doc.get("error"):
        raise MeasurementError(f"iperf3: {doc['error']}")
    end = doc.get("end") or {}
    if mode == "tcp":
        sent = end.get("sum_sent") or {}
        received = end.get("sum_received") or {}
        cpu = end.get("cpu_utilization_percent") or {}
        return {
            "goodput_bit_s": sent.get("bits_per_second"),
            "cpu_ns_per_byte_sender": cpu_ns_per_byte(cpu.get("host_total"), sent),
            "cpu_ns_per_byte_receiver": cpu_ns_per_byte(cpu.get("remote_total"), received),
        }
    s = end.get("sum") or end.get("sum_sent") or {}
    jitter = s.get("jitter_ms")
    lost = s.get("lost_percent")
    if lost is not None and lost > 100:  # esnet/iperf issue 1489: out-of-order counted twice
        lost = None
    return {
        "goodput_bit_s": s.get("bits_per_second"),
        "loss_percent": lost,
        "jitter_ns": jitter * 1e6 if jitter is not None else None,
    }


def cpu_ns_per_byte(percent: float | None, side: dict) -> float | None:
    """iperf3's CPU percent of one side (its process's user + system time over the wall time it counts)
    times the side's seconds, per byte. The server counts from its own start, not the test's (esnet/iperf
    issue 1076), so its figure is a little low on the receiver side."""
    seconds, nbytes = side.get("seconds"), side.get("bytes")
    if percent is None or not seconds or not nbytes:
        return None
    return percent / 100 * seconds * 1e9 / nbytes


def run_iperf(job: NetJob) -> dict[str, float | None]:
    port = free_port(job.host)
    server = subprocess.Popen(
        job.iperf_server(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=pin(job.server_cpu), start_new_session=True,
    )  # fmt: skip
    try:
        doc: dict = {}
        for _attempt in range(50):  # the server needs a moment to listen
            proc = pairs.run_tool(job.iperf_client(port), job.client_cpu, job.duration_s + 60)
            try:
                doc = parse(proc.stdout, "iperf3")
            except ValueError as exc:
                raise MeasurementError(str(exc)) from None
            if "unable to connect" in str(doc.get("error", "")):
                time.sleep(0.05)
                continue
            break
        return iperf_metrics(doc, job.mode)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def zeroloss_kern_command(job: NetJob) -> list[str]:
    """boardlab's side of the zero-loss check: the io.net_zeroloss workload, one trial = 12 timed iterations
    of >= 50 ms after up to 2 warm-up ones and the calibration: about one second of sending, as iperf3's -t 1
    (whole seconds only). The exposure must match: the longer a trial, the likelier a stall that loses."""
    import sys

    params = {
        "lo_bit_s": job.lo_bit_s, "hi_bit_s": job.hi_bit_s, "resolution": job.resolution,
        "udp_bytes": job.udp_bytes, "sink_addr": f"{job.host}:0", "sockbuf_bytes": job.sockbuf_bytes,
        "sink_cpu": -1 if job.server_cpu is None else job.server_cpu,
    }  # fmt: skip
    args = [a for k, v in params.items() for a in ("-p", f"{k}={v}")]
    return [sys.executable, "-m", "boardlab.pyrun", "io.net_zeroloss", "--json", "--iterations", "12", *args]


def run_boardlab_zeroloss(job: NetJob, notes: list[str] | None = None) -> dict[str, float | None]:
    proc = pairs.run_tool(zeroloss_kern_command(job), job.client_cpu, 3600)
    try:
        res = parse(proc.stdout, "io.net_zeroloss")
    except ValueError as exc:
        raise MeasurementError(f"io.net_zeroloss: {exc}: {proc.stderr.strip()[-300:]}") from None
    if res.get("supported") is False:
        raise MeasurementError(f"io.net_zeroloss unsupported here: {res.get('reason')}")
    errors = res.get("errors") or []
    if not res.get("ok") and any("even the lowest rate" in e for e in errors):
        # A measurement, not a failure: this search found no lossless rate in the range; the pair has no
        # ratio, and the note says why (a loaded machine can lose a datagram at any rate).
        if notes is not None:
            notes.append(f"boardlab: {errors[0]}")
        return {"zero_loss_bit_s": None}
    if not res.get("ok"):
        raise MeasurementError(f"io.net_zeroloss failed: {errors}")
    return {"zero_loss_bit_s": res["metrics"]["zero_loss_bit_s"]["value"]}


def run_iperf_zeroloss(job: NetJob, notes: list[str] | None = None) -> dict[str, float | None]:
    """The same RFC 2544 search (ratesearch.search, same range and resolution) with an iperf3 UDP run of
    one second as each trial. A loss iperf3 could not report (its lost_percent > 100 bug) fails the trial."""
    from dataclasses import replace

    from boardlab.workloads.ratesearch import Trial, search

    def trial(rate: float) -> Trial:
        m = run_iperf(replace(job, mode="udp", rate_bit_s=rate, duration_s=1.0))
        lost = m["loss_percent"]
        return Trial(rate, 100.0 if lost is None else lost, m["goodput_bit_s"] or 0.0, {})

    best, trials = search(trial, job.lo_bit_s, job.hi_bit_s, resolution=job.resolution)
    if best is None and notes is not None:
        notes.append(
            f"iperf3: lost {trials[-1].lost_percent:.3g}% even at the lowest rate tried ({job.lo_bit_s:.4g} "
            "bit/s): that search found no lossless rate (a receiver stalled on a loaded machine loses "
            "datagrams at any rate)"
        )
    return {"zero_loss_bit_s": best}


def zeroloss_reference_command(job: NetJob) -> list[str]:
    """iperf3's command for one trial of the search; RATE is each rate tried."""
    from dataclasses import replace

    cmd = replace(job, mode="udp", duration_s=1.0).iperf_client(0)
    cmd[cmd.index("-b") + 1] = "RATE"
    return cmd
