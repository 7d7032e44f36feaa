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

RATIO_METRICS = ("goodput_bit_s",)


@dataclass(frozen=True)
class NetJob:
    mode: str = "tcp"  # tcp | udp
    host: str = "127.0.0.1"
    msg_bytes: int = 128 * 1024  # TCP write size (iperf3 -l)
    udp_bytes: int = 1400
    rate_bit_s: float = 100e6  # UDP offered rate (iperf3 -b)
    duration_s: float = 3.0
    client_cpu: int | None = None
    server_cpu: int | None = None
    sockbuf_bytes: int = 0

    def kern_params(self) -> list[str]:
        params: dict[str, object] = {"sink_addr": f"{self.host}:0", "sockbuf_bytes": self.sockbuf_bytes}
        if self.server_cpu is not None:
            params["sink_cpu"] = self.server_cpu
        if self.mode == "tcp":
            params |= {"mode": "tcp_stream", "msg_bytes": self.msg_bytes}
        else:
            params |= {"mode": "udp_stream", "udp_bytes": self.udp_bytes, "rate_bit_s": self.rate_bit_s}
        return [a for k, v in params.items() for a in ("--param", f"{k}={v}")]

    def iperf_client(self, port: int) -> list[str]:
        cmd = ["iperf3", "-c", self.host, "-p", str(port), "-t", f"{self.duration_s:g}", "-J"]
        if self.mode == "tcp":
            cmd += ["-l", str(self.msg_bytes)]
        else:
            cmd += ["-u", "-b", f"{self.rate_bit_s:.0f}", "-l", str(self.udp_bytes)]
        if self.sockbuf_bytes:
            cmd += ["-w", str(self.sockbuf_bytes)]
        return cmd

    def iperf_server(self, port: int) -> list[str]:
        return ["iperf3", "-s", "-1", "-B", self.host, "-p", str(port)]


def kern_command(kern: Path, job: NetJob) -> list[str]:
    return pairs.kern_command(kern, "io.net", job.kern_params())


def run_boardlab(kern: Path, job: NetJob, notes: list[str] | None = None) -> dict[str, float | None]:
    before = read_snmp("/") if job.mode == "udp" else None
    res = pairs.run_kern(kern_command(kern, job), "io.net", job.client_cpu)
    m = res["metrics"]
    size = job.msg_bytes if job.mode == "tcp" else job.udp_bytes
    out: dict[str, float | None] = {"goodput_bit_s": whole_run_rate(res, size * 8.0)}
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
        return {"goodput_bit_s": sent.get("bits_per_second")}
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


def run_iperf(job: NetJob) -> dict[str, float | None]:
    port = free_port(job.host)
    server = subprocess.Popen(
        job.iperf_server(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=pin(job.server_cpu), start_new_session=True,
    )  # fmt: skip
    try:
        doc: dict = {}
        for _attempt in range(50):  # the server needs a moment to listen
            proc = subprocess.run(
                job.iperf_client(port), capture_output=True, text=True, preexec_fn=pin(job.client_cpu),
                timeout=job.duration_s + 60,
            )  # fmt: skip
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
