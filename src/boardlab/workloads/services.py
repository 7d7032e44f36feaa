"""svc.scenario: one run of the vehicle-services study, as a campaign cell.

The services are boardlab-kern roles (svc.pub, svc.sub, svc.mgmt, svc.nmea, svc.load) started together
for `duration_s`, each process accounted every second by boardlab's monitor (CPU by schedstat ns and by
jiffies, RSS, PSS). Scenarios:

- `position`: the Position service (synthetic values, or a GPS on the paced 4800-baud pty read in
  `read_mode`) publishing to a subscriber that measures one-way latency and loss;
- `orientation`: the Orientation service alone at 10 Hz, from synthetic values or from an INS feed over UDP
  (`source=ins`): with `position`, the sensor-vs-synthetic pair of each service that has a sensor;
- `three`: Position (GPS), Orientation (an INS feed over UDP at 10 Hz) and DirectionOfTravel (subscribes to
  both, publishes its own) together, as the study ran them;
- `soap`: the SOAP management endpoint under svc.load at `rate_hz`, closed loop (the study's client) or
  open loop (latency from each request's intended start), keep-alive on or off;
- `soap-saturation`: open-loop rates doubling from 100 Hz within the run until the endpoint saturates;
- `rest` / `operating`: power at rest, and (operating) that rest window followed by the three services in
  the same run: power at rest, operating, their difference, energy per message above rest. Read from the
  board's primary power source (the energy package's discovery); without one the run is unsupported and
  says why.

Runs inside the network placement the `netns` condition made (BOARDLAB_NETNS), else on loopback.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from boardlab.model.worker_result import spec_metrics
from boardlab.model.workload import MetricSpec, ParamSpec, WorkloadSpec

SCENARIOS = ("position", "orientation", "three", "soap", "soap-saturation", "rest", "operating")
SOURCES = {"position": ("synthetic", "nmea"), "orientation": ("synthetic", "ins")}  # each service's sensor


def _m(name: str, unit: str, hib: bool, help: str, *, tail: bool = False) -> MetricSpec:
    return MetricSpec(name, unit, hib, kind="value", help=help, tail=tail)


def power_unsupported(params, root="/") -> str | None:
    """The rest and operating scenarios measure the board's power source: without one, why they cannot run
    (the worker measures the machine it runs on, so this asks the same machine)."""
    if params.get("scenario") not in ("rest", "operating"):
        return None
    src, why = power_source(root)
    return None if src is not None else why.removeprefix("unsupported: ")


SPEC = WorkloadSpec(
    name="svc.scenario",
    family="svc",
    summary="Vehicle-services study: VICTORY-like services (pub/sub over multicast, SOAP management, GPS on "
    "a paced serial line) run together and accounted per process",
    runner="python",
    params=(
        ParamSpec("scenario", "enum", "position", choices=SCENARIOS, help="what runs (see the module doc)"),
        ParamSpec("duration_s", "float", "60", 1, 604_800, unit="s", help="how long the services run"),
        ParamSpec(
            "source",
            "enum",
            "synthetic",
            choices=("synthetic", "nmea", "ins"),
            help="position: synthetic or nmea (a GPS); orientation: synthetic or ins (an INS feed over UDP)",
        ),
        ParamSpec(
            "read_mode", "enum", "canonical", choices=("canonical", "byte", "block"), help="GPS read mode"
        ),
        ParamSpec("msg_rate_hz", "float", "1", 0.1, 10_000, unit="Hz", help="data messages per second"),
        ParamSpec(
            "rate_hz", "float", "10", 0, 1e6, unit="Hz", help="soap: request rate (closed: 0 = flat out)"
        ),
        ParamSpec("mode", "enum", "closed", choices=("closed", "open"), help="soap: closed or open loop"),
        ParamSpec("keepalive", "int", "1", 0, 1, help="soap: 1 keep connections, 0 one per request"),
        ParamSpec("connections", "int", "1", 1, 1024, help="soap: client connections"),
    ),
    metrics=(
        _m(
            "cpu_pct_one_cpu",
            "%",
            False,
            "CPU of the services (schedstat ns) as % of one CPU, mean per second",
        ),
        _m("cpu_jiffies_pct_one_cpu", "%", False, "the same from /proc jiffies (the study's method)"),
        _m("cpu_pct_all_cpus", "%", False, "CPU of the services as % of all CPUs"),
        _m("rss_bytes", "bytes", False, "resident memory of the services, summed, mean"),
        _m("pss_bytes", "bytes", False, "proportional set size of the services, summed, mean"),
        _m("mem_pct", "%", False, "RSS as % of MemTotal"),
        _m("build_p50_ns", "ns", False, "median XML message build time"),
        _m("send_p50_ns", "ns", False, "median sendto time"),
        _m("tx_p50_ns", "ns", False, "median time from message built to the kernel's software TX stamp"),
        _m("oneway_p50_ns", "ns", False, "median one-way latency publisher -> subscriber"),
        _m("oneway_p99_ns", "ns", False, "99th percentile one-way latency", tail=True),
        _m("lost", "messages", False, "messages the subscriber never received"),
        _m("reader_cpu_ns_per_s", "ns/s", False, "CPU of the GPS reader thread per second"),
        _m("achieved_rate_hz", "Hz", True, "soap: responses per second"),
        _m("corrected_p50_ns", "ns", False, "soap: median latency from the intended start"),
        _m("corrected_p99_ns", "ns", False, "soap: p99 latency from the intended start", tail=True),
        _m("service_p50_ns", "ns", False, "soap: median latency from the actual send"),
        _m("service_p99_ns", "ns", False, "soap: p99 latency from the actual send", tail=True),
        _m("errors", "requests", False, "soap: errors and timeouts"),
        _m("knee_rate_hz", "Hz", True, "soap-saturation: the highest open-loop rate that held"),
        _m("power_rest_w", "W", False, "rest/operating: mean power with nothing of the study running"),
        _m("energy_rest_j", "J", False, "rest/operating: energy of the rest window"),
        _m("power_operating_w", "W", False, "operating: mean power with the three services running"),
        _m("power_delta_w", "W", False, "operating: operating minus rest power of the same run"),
        _m("energy_operating_j", "J", False, "operating: energy of the operating window"),
        _m("energy_per_message_j", "J", False, "operating: energy above rest per data message published"),
        _m("tcp_retrans_segs", "segments", False, "TCP retransmissions in the namespace during the run"),
        _m(
            "udp_rcvbuf_errors",
            "datagrams",
            False,
            "UDP receive-buffer drops in the namespace during the run",
        ),
    ),
    roles=("services",),
    cell_unsupported=power_unsupported,
)


def supported() -> str | None:
    from boardlab.native import kern_path

    try:
        kern_path()
    except Exception as exc:  # noqa: BLE001 - any reason the binary is unusable is the reason
        return f"boardlab-kern is not available: {exc}"
    return None


def energy_reason(root="/") -> str:
    """What the rest/operating scenarios can do on this board: how they measure, or why they cannot."""
    src, why = power_source(root)
    if src is None:
        return f"energy {why}"
    return (
        f"measured by the rest and operating scenarios from {src.spec.name} ({src.spec.scope} scope): power "
        "at rest, operating, their difference and the energy per message above rest"
    )


def power_source(root="/", pmic_reader=None):
    """(the board's primary power source, None) or (None, why there is none); through the energy package's
    discovery, so the scenario and the campaign's per-run energy read the same sensor."""
    from boardlab.energy.sources import discover

    d = discover(root, pmic_reader=pmic_reader)
    src = d.primary()
    return (src, None) if src is not None else (None, d.reason)


def _phase(sampler, src, t0_ns: int, t1_ns: int) -> dict:
    sampler.wait_past(t1_ns)
    w, _pts, why = sampler.window(src, t0_ns, t1_ns)
    if w is None:
        raise RuntimeError(why)
    return {
        "duration_s": w.duration_s,
        "energy_j": w.energy_j,
        "power_w": w.power_avg_w,
        "quantization_j": w.quantization_j,
        "samples": w.samples,
        "warnings": list(w.warnings),
    }


def rest_operating(params: dict, root="/", *, pmic_reader=None) -> dict:
    """Power at rest (nothing of the study running) for `duration_s`; for `operating`, that rest window
    and then the three services for `duration_s`, in the same run, so their difference is a paired one
    (a drifting board shifts both). The power source is the one the energy package picks for the board."""
    scenario = params["scenario"]
    src, why = power_source(root, pmic_reader)
    if src is None:  # the runner says "unsupported here: <reason>"
        reason = why.removeprefix("unsupported: ")
        return {"ok": False, "supported": False, "reason": reason, "errors": [], "metrics": {}}
    from boardlab.energy.sampler import EnergySampler

    d = float(params["duration_s"])
    sampler = EnergySampler([src])
    sampler.start()
    svc = None
    try:
        t0 = time.monotonic_ns()
        sampler.wait_past(t0)  # a reading before the window's start edge
        t0 = time.monotonic_ns()
        time.sleep(d)
        t1 = time.monotonic_ns()
        rest = _phase(sampler, src, t0, t1)
        values = {"power_rest_w": rest["power_w"], "energy_rest_j": rest["energy_j"]}
        info: dict = {"scenario": scenario, "power_source": src.spec.to_dict(), "rest": rest}
        if scenario == "operating":
            from boardlab.errors import BoardlabError

            svc = _Services(d)
            t2 = time.monotonic_ns()
            try:
                roles = _three(svc, params, d)
            except BoardlabError as exc:
                return {"ok": False, "errors": [str(exc)], "metrics": {}, "info": info}
            t3 = time.monotonic_ns()
            op = _phase(sampler, src, t2, t3)
            blocks = {n: r.get("service") for n, r in roles.items() if isinstance(r, dict)}
            messages = sum((blocks.get(n) or {}).get("sent", 0) for n in ("position", "orientation"))
            messages += (blocks.get("dot") or {}).get("dot_sent", 0)
            delta = op["power_w"] - rest["power_w"]
            values |= {
                "power_operating_w": op["power_w"],
                "power_delta_w": delta,
                "energy_operating_j": op["energy_j"],
            }
            if messages:
                # the energy the services cost above rest, per data message they published
                values["energy_per_message_j"] = delta * op["duration_s"] / messages
            info |= {"operating": op, "messages": messages, "services": blocks}
            errors = [
                f"{n}: {e}" for n, r in roles.items() if isinstance(r, dict) for e in (r.get("errors") or [])
            ]
            return {"ok": not errors, "errors": errors, "metrics": spec_metrics(SPEC, values), "info": info}
        return {"ok": True, "errors": [], "metrics": spec_metrics(SPEC, values), "info": info}
    except RuntimeError as exc:  # no reading around a window: the sensor stopped answering
        return {"ok": False, "errors": [f"power source {src.spec.name}: {exc}"], "metrics": {}, "info": {}}
    finally:
        if svc is not None:
            svc.close()
        sampler.stop()


class _Services:
    """The role processes of one run, their monitor, and their teardown by PID."""

    def __init__(self, duration_s: float):
        self.duration_s = duration_s
        self.netns = os.environ.get("BOARDLAB_NETNS") or ""
        self.addr = os.environ.get("BOARDLAB_MCAST_IFACE_ADDR") or "127.0.0.1"
        self.prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        self.roles: dict[str, tuple[Any, bool]] = {}  # name -> (its running role, counted in the figures)
        self.extra: list = []  # helper processes (INS feed)
        self.monitor: Any = None  # a monitor.process.Monitor of the counted roles, from watch()
        self._mon_thread: threading.Thread | None = None
        self._stop = threading.Event()

    def start(self, name: str, role: str, params: dict, *, account: bool = True, wait_ready: bool = True):
        from boardlab.services.launch import start_role

        rp = start_role(role, params, prefix=self.prefix, wait_ready=wait_ready)
        self.roles[name] = (rp, account)
        return rp

    def watch(self) -> None:
        from boardlab.monitor.process import Monitor

        pids = [rp.pid for rp, account in self.roles.values() if account]
        self.monitor = Monitor(pids=pids, interval_s=1.0, threads=True, net_pid=pids[0] if pids else None)
        self._mon_thread = threading.Thread(
            target=self.monitor.run, kwargs={"should_stop": self._stop.is_set}, daemon=True
        )
        self._mon_thread.start()

    def finish(self, timeout_s: float) -> dict[str, dict]:
        out = {}
        try:
            for name, (rp, _) in self.roles.items():
                out[name] = rp.result(timeout_s)
        finally:
            self.close()
        return out

    def close(self) -> None:
        self._stop.set()
        if self._mon_thread:
            self._mon_thread.join(3)
        for rp, _ in self.roles.values():
            rp.stop()
        for p in self.extra:
            if p.poll() is None:
                from boardlab.platform.spawn import stop_group

                stop_group(p)

    def accounting(self) -> dict:
        if not self.monitor:
            return {}
        from boardlab.monitor.process import SUMMARY_FIELDS

        doc = self.monitor.document()
        names = {rp.pid: name for name, (rp, _) in self.roles.items()}
        per = {}
        # each service's summarized fields (involuntary switches too: a service preempted by the others)
        fields = (*SUMMARY_FIELDS, "hourly_cpu_pct_one_cpu", "hourly_cpu_jiffies_pct_one_cpu", "threads")
        for p in doc["processes"]:
            per[names.get(p["pid"], str(p["pid"]))] = {k: p[k] for k in fields}
        return {
            "per_service": per,
            "net_totals": doc["net_totals"],
            "iface_drop_totals": doc["iface_drop_totals"],
        }

    def per_second(self) -> list[dict]:
        """Each service's per-second samples as the worker result's "series" (CPU, RSS, PSS): the report
        plots any workload's series the same way (docs/extending.md, "Per-second series")."""
        if not self.monitor:
            return []
        names = {rp.pid: name for name, (rp, _) in self.roles.items()}
        out: dict[tuple[str, str], dict] = {}
        for r in self.monitor.rows:
            for metric, unit in (("cpu_pct_one_cpu", "%"), ("rss_bytes", "bytes"), ("pss_bytes", "bytes")):
                v = getattr(r, metric)
                if v is None:
                    continue
                label = names.get(r.pid, str(r.pid))
                e = out.setdefault(
                    (metric, label), {"metric": metric, "label": label, "unit": unit, "points": []}
                )
                e["points"].append([round(r.t_s, 3), v])
        return list(out.values())


def _sum_avg(acc: dict, key: str):
    vals = [s[key]["avg"] for s in acc.get("per_service", {}).values() if s[key]["avg"] is not None]
    return sum(vals) if vals else None


def _role_values(svc_blocks: dict, sweep: dict | None) -> dict[str, Any]:
    """The metric values the roles measured themselves, from their "service" blocks (and the saturation
    sweep's document); a value may be None (no reader time without a duration)."""
    values: dict[str, Any] = {}
    pub = svc_blocks.get("position") or svc_blocks.get("orientation") or svc_blocks.get("pub")
    if pub:
        values["build_p50_ns"] = pub["build_ns"]["p50"]
        values["send_p50_ns"] = pub["send_ns"]["p50"]
        tx = pub.get("tx_timestamp")
        if tx and tx["supported"]:
            values["tx_p50_ns"] = tx["built_to_tx_ns"]["p50"]
        if pub.get("reader"):
            secs = pub["duration_ns"] / 1e9
            values["reader_cpu_ns_per_s"] = pub["reader"]["cpu_ns"] / secs if secs else None
    sub = svc_blocks.get("sub")
    if sub:
        values["oneway_p50_ns"] = sub["oneway_latency_ns"]["p50"]
        values["oneway_p99_ns"] = sub["oneway_latency_ns"]["p99"]
        values["lost"] = sub["lost"]
    load = svc_blocks.get("load")
    if load:
        values["achieved_rate_hz"] = load["achieved_rate_hz"]
        values["corrected_p50_ns"] = load["corrected_ns"]["p50"]
        values["corrected_p99_ns"] = load["corrected_ns"]["p99"]
        values["service_p50_ns"] = load["service_ns"]["p50"]
        values["service_p99_ns"] = load["service_ns"]["p99"]
        values["errors"] = load["errors"] + load["timeouts"]
    if sweep is not None:
        values["knee_rate_hz"] = sweep["knee_rate_hz"]
    return values


def run(params: dict, iterations: int | None = None) -> dict:
    scenario = params["scenario"]
    if scenario in ("rest", "operating"):
        return rest_operating(params)
    from boardlab.errors import BoardlabError

    duration = float(params["duration_s"])
    if scenario in SOURCES and params["source"] not in SOURCES[scenario]:
        from boardlab.errors import InputError

        raise InputError(
            f"source={params['source']}: the {scenario} scenario takes source "
            f"{' or '.join(SOURCES[scenario])}"
        )
    svc = _Services(duration)
    try:
        if scenario == "position":
            roles = _position(svc, params, duration)
        elif scenario == "orientation":
            roles = _orientation(svc, params, duration)
        elif scenario == "three":
            roles = _three(svc, params, duration)
        elif scenario == "soap":
            roles = _soap(svc, params, duration)
        else:
            roles = _saturation(svc, params, duration)
    except BoardlabError as exc:
        svc.close()
        return {"ok": False, "errors": [str(exc)], "metrics": {}, "info": {}}
    acc = svc.accounting()
    series = svc.per_second()
    errors = [f"{n}: {e}" for n, r in roles.items() if isinstance(r, dict) for e in (r.get("errors") or [])]
    summed = (
        "cpu_pct_one_cpu",
        "cpu_jiffies_pct_one_cpu",
        "cpu_pct_all_cpus",
        "rss_bytes",
        "pss_bytes",
        "mem_pct",
    )
    values = {k: _sum_avg(acc, k) for k in summed}
    values["tcp_retrans_segs"] = acc.get("net_totals", {}).get("tcp_retrans_segs")
    values["udp_rcvbuf_errors"] = acc.get("net_totals", {}).get("udp_rcvbuf_errors")
    svc_blocks = {n: r.get("service") for n, r in roles.items() if isinstance(r, dict) and "service" in r}
    values |= _role_values(svc_blocks, roles.get("sweep"))
    metrics = spec_metrics(SPEC, {k: v for k, v in values.items() if v is not None})
    info = {
        "scenario": scenario,
        "netns": svc.netns or None,
        "accounting": acc,
        "services": svc_blocks,
        **({"sweep": roles["sweep"]} if "sweep" in roles else {}),
    }
    return {"ok": not errors, "errors": errors, "metrics": metrics, "info": info, "series": series}


def _group_port(base: int) -> tuple[str, int]:
    # a port of our own per run (the pid), so concurrent campaigns do not hear each other
    return "239.255.0.5", base + os.getpid() % 2000


@contextlib.contextmanager
def _gps_link() -> Iterator[str]:
    """Where svc.nmea makes its pseudo-terminal's link (the GPS receiver's device): a private directory,
    removed with whatever is in it however the run ends (a service that failed to start raises)."""
    import shutil
    import tempfile

    where = tempfile.mkdtemp(prefix="boardlab-gps-")
    try:
        yield os.path.join(where, "gps")
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _position(svc: _Services, params: dict, d: float) -> dict:
    with _gps_link() if params["source"] == "nmea" else contextlib.nullcontext("") as link:
        return _position_with(svc, params, d, link)


def _position_with(svc: _Services, params: dict, d: float, link: str) -> dict:
    group, port = _group_port(20000)
    pub_params = {
        "group": group,
        "port": port,
        "iface_addr": svc.addr,
        "rate_hz": params["msg_rate_hz"],
        "duration_s": d,
        "tx_timestamp": 1,  # the study's "transmit time" split: build -> kernel TX stamp
    }
    svc.start("sub", "svc.sub", {"group": group, "port": port, "iface_addr": svc.addr, "duration_s": d + 3})
    if link:
        svc.start("gps", "svc.nmea", {"duration_s": d + 1, "link": link, "start_delay_s": 0.2}, account=False)
        pub_params |= {"source": "nmea", "device": link, "read_mode": params["read_mode"]}
    svc.start("position", "svc.pub", pub_params)
    svc.watch()
    return svc.finish(d + 30)


ORIENTATION_HZ = 10  # the INS feed's and the Orientation service's rate, as in `three`


def _ins_feed(svc: _Services, port: int, d: float) -> None:
    """The INS feed (`boardlab.services.ins`) sending to the Orientation service's UDP port."""
    import subprocess

    from boardlab.platform.spawn import spawn

    argv = [*svc.prefix, sys.executable, "-m", "boardlab.services.ins", svc.addr, str(port),
            str(ORIENTATION_HZ), str(d)]  # fmt: skip
    svc.extra.append(spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def _orientation(svc: _Services, params: dict, d: float) -> dict:
    group, port = _group_port(24000)
    ins_port = port + 5000
    base = {"group": group, "port": port, "iface_addr": svc.addr}
    svc.start("sub", "svc.sub", {**base, "duration_s": d + 3})
    pub = {**base, "rate_hz": ORIENTATION_HZ, "duration_s": d, "message": "orientation", "tx_timestamp": 1}
    if params["source"] == "ins":
        pub |= {"source": "ins", "ins_port": ins_port}
    svc.start("orientation", "svc.pub", pub)
    if params["source"] == "ins":
        _ins_feed(svc, ins_port, d)
    svc.watch()
    return svc.finish(d + 30)


def _three(svc: _Services, params: dict, d: float) -> dict:
    with _gps_link() as link:
        return _three_with(svc, params, d, link)


def _three_with(svc: _Services, params: dict, d: float, link: str) -> dict:
    group, port = _group_port(22000)
    dot_port, ins_port = port + 2500, port + 5000
    base = {"group": group, "iface_addr": svc.addr}
    svc.start("sub", "svc.sub", {**base, "port": dot_port, "duration_s": d + 3}, account=False)
    svc.start(
        "dot",
        "svc.sub",
        {
            **base,
            "port": port,
            "duration_s": d + 2,
            "publish_dot": 1,
            "out_group": group,
            "out_port": dot_port,
        },
    )
    svc.start("gps", "svc.nmea", {"duration_s": d + 1, "link": link, "start_delay_s": 0.2}, account=False)
    svc.start(
        "orientation",
        "svc.pub",
        {
            **base,
            "port": port,
            "rate_hz": 10,
            "duration_s": d,
            "message": "orientation",
            "source": "ins",
            "ins_port": ins_port,
        },
    )
    svc.start(
        "position",
        "svc.pub",
        {
            **base,
            "port": port,
            "rate_hz": params["msg_rate_hz"],
            "duration_s": d,
            "source": "nmea",
            "device": link,
            "read_mode": params["read_mode"],
        },
    )
    _ins_feed(svc, ins_port, d)
    svc.watch()
    return svc.finish(d + 30)


def _room(params: dict) -> dict:
    """svc.mgmt's connection limit (256 by default) above the load generator's connections."""
    return {"max_connections": max(256, params["connections"] + 16)}


def _start_mgmt(svc: _Services, params: dict, duration_s: float) -> int:
    """svc.mgmt (the SOAP management service) on a free port of the scenario's address; its port."""
    from boardlab.services.launch import free_port

    port = free_port()
    svc.start(
        "mgmt",
        "svc.mgmt",
        {"bind_addr": svc.addr, "port": port, "duration_s": duration_s, "keepalive": params["keepalive"]}
        | _room(params),
    )
    return port


def _soap(svc: _Services, params: dict, d: float) -> dict:
    port = _start_mgmt(svc, params, d + 10)
    svc.watch()
    load = svc.start(
        "load",
        "svc.load",
        {
            "host": svc.addr,
            "port": port,
            "mode": params["mode"],
            "rate_hz": params["rate_hz"],
            "duration_s": d,
            "keepalive": params["keepalive"],
            "connections": params["connections"],
        },
        account=False,
        wait_ready=False,  # a load generator prints no ready line: it starts loading at once
    )
    res = load.result(d + 30)
    svc.roles["mgmt"][0].stop()
    out = svc.finish(30)
    out["load"] = res
    return out


def _saturation(svc: _Services, params: dict, d: float) -> dict:
    from boardlab.services import load as loadmod

    port = _start_mgmt(svc, params, 3 * d + 60)
    svc.watch()
    rates = loadmod.ramp(100.0, 200_000.0)
    step_s = max(0.5, d / 8)
    target = loadmod.Target(svc.addr, port, "/vdm")
    t0 = time.monotonic()
    steps = []
    for r in rates:
        st = loadmod.run_step(
            target,
            r,
            mode="open",
            connections=params["connections"],
            keepalive=bool(params["keepalive"]),
            duration_s=step_s,
            prefix=svc.prefix,
        )
        steps.append(st)
        if st.saturated_reason or time.monotonic() - t0 > 3 * d:
            break
    svc.roles["mgmt"][0].stop()
    out = svc.finish(30)
    out["sweep"] = loadmod.document(target, steps, until_saturation=True, slo_p99_ms=None)
    return out
