"""Network placement: where a networked workload's traffic flows (shared by the vehicle-services and the
data-stream studies).

- `private` (default): a fresh network namespace with only loopback up and a multicast route on it, so
  the namespace-wide counters (/proc/net/snmp) belong to the measured traffic alone.
- `veth`: two namespaces joined by a veth pair, shaped by `tbf` to emulate 10 or 100 Mbit/s Ethernet;
  delay and loss need `netem`, which some kernels lack (reported as unsupported, with the reason).
- `iface`: a real interface between boards (no namespace); the peer's address is given.

Workloads learn the placement from the environment they inherit (set for the run, restored after):
BOARDLAB_NETNS (the namespace to run in, `ip netns exec NAME ...`; empty for `iface`), BOARDLAB_PEER_NETNS
(the peer side of a veth pair), BOARDLAB_LOCAL_ADDR, BOARDLAB_PEER_ADDR and BOARDLAB_MCAST_IFACE_ADDR
(the address for IP_MULTICAST_IF). The same values are the run's recorded state. Namespaces are journaled,
so a crashed run's are deleted by the next start or `boardlab restore`.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.model.units import plain_number

MODES = ("private", "veth", "iface")
LOCAL_VETH, PEER_VETH = "10.216.0.1", "10.216.0.2"
ENV_KEYS = (
    "BOARDLAB_NETNS",
    "BOARDLAB_PEER_NETNS",
    "BOARDLAB_LOCAL_ADDR",
    "BOARDLAB_PEER_ADDR",
    "BOARDLAB_MCAST_IFACE_ADDR",
)
_seq = itertools.count()


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def _tc(ns: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ip", "netns", "exec", ns, "tc", *args], capture_output=True, text=True, check=False
    )


def netns_reason(probe_netem: bool = False) -> str | None:
    """None when network namespaces (and, with probe_netem, netem qdiscs) can be made here; else why not,
    quoting the command that failed. Tried in a throwaway namespace: `ip netns add` bind-mounts under
    /run/netns, which fails in a chroot whose / is not a mount point and in unprivileged containers, where
    root and iproute2 alone would have said yes."""
    ns = f"boardlab-probe-{os.getpid()}-{next(_seq)}"
    made = _ip("netns", "add", ns, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace (ip netns add: {_first_line(made.stderr)})"
    try:
        up = _ip("-n", ns, "link", "set", "lo", "up", check=False)
        if up.returncode != 0:
            return f"cannot bring up loopback in a network namespace ({_first_line(up.stderr)})"
        if not probe_netem:
            return None
        p = _tc(ns, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms")
        if p.returncode != 0:
            return f"qdisc netem missing in this kernel ({p.stderr.strip() or 'tc failed'})"
        return None
    finally:
        _ip("netns", "delete", ns, check=False)


def netem_reason() -> str | None:
    """None when netem qdiscs can be made here; else why not."""
    return netns_reason(probe_netem=True)


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["failed"])[0]


@dataclass(frozen=True)
class NetnsParams:
    mode: str = param("enum", "private", choices=MODES, help="where the traffic flows")
    rate_mbit: float | None = param(  # veth: tbf rate (10 or 100 for the Ethernet the study used)
        "float", None, min=0.01, max=100000, unit="Mbit/s", help="veth: tbf rate"
    )
    delay_ms: float | None = param("float", None, min=0, max=60000, unit="ms", help="veth: netem delay")
    loss_pct: float | None = param("float", None, min=0, max=100, unit="%", help="veth: netem loss")
    iface: str | None = param("str", None, help="iface: the real interface between the boards")
    peer_addr: str | None = param("str", None, help="iface: the other board's IPv4 address")


class Netns(DeclaredKind[NetnsParams]):
    name = "netns"
    summary = (
        "network placement: a private namespace, a veth pair shaped to 10/100 Mbit/s, or a real interface"
    )

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        if not shutil.which("ip"):
            return "the ip command (iproute2) is not installed", ()
        return None, ("private and veth need root (network namespaces)",)

    def refuse(self, p: NetnsParams, params: dict) -> tuple[str | None, str] | None:
        if p.mode != "veth" and any(x is not None for x in (p.rate_mbit, p.delay_ms, p.loss_pct)):
            return "mode", 'rate_mbit, delay_ms and loss_pct shape a veth pair: use mode = "veth"'
        if p.mode == "iface":
            if not p.iface or not p.peer_addr:
                return "iface", 'mode "iface" needs iface = "NAME" and peer_addr = "A.B.C.D"'
            try:
                ipaddress.IPv4Address(p.peer_addr)
            except ValueError:
                return "peer_addr", f"expected an IPv4 address, found {p.peer_addr!r}"
        elif p.iface or p.peer_addr:
            return "iface", 'iface and peer_addr belong to mode = "iface"'
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        p = self.typed(params)
        if p.mode == "iface":
            if not ctx.root.path(f"sys/class/net/{p.iface}").exists():
                present = (
                    sorted(os.listdir(ctx.root.path("sys/class/net")))
                    if ctx.root.path("sys/class/net").is_dir()
                    else []
                )
                return f"no network interface {p.iface!r}; present: {', '.join(present) or 'none'}"
            if str(ctx.root.path("")) == "/" and _iface_addr(p.iface or "") is None:  # live system only
                # the services send and join their groups on the interface's address
                return (
                    f"interface {p.iface!r} has no IPv4 address: the services need one to send and join "
                    f"on (ip addr add A.B.C.D/N dev {p.iface})"
                )
            return None
        if os.geteuid() != 0:
            return "unsupported: network namespaces need root (run boardlab as root)"
        if not shutil.which("ip"):
            return "unsupported: the ip command (iproute2) is not installed"
        if p.mode == "veth" and p.rate_mbit is not None and not shutil.which("tc"):
            return "unsupported: the tc command (iproute2) is not installed"
        why = netns_reason(
            probe_netem=p.mode == "veth" and (p.delay_ms is not None or p.loss_pct is not None)
        )
        return f"unsupported: {why}" if why else None

    @contextmanager
    def applied(self, p: NetnsParams, ctx: ApplyContext):
        made: list[tuple[str, str]] = []  # (namespace, journal token)

        def new_ns(role: str) -> str:
            ns = f"boardlab-{os.getpid()}-{next(_seq)}-{role}"
            token = ctx.journal.made_netns(ns, what=f"network namespace ({role})")
            made.append((ns, token))
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            return ns

        saved = {k: os.environ.get(k) for k in ENV_KEYS}
        try:
            if p.mode == "private":
                ns = new_ns("local")
                # a fresh namespace has no multicast route: send it through loopback
                _ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", "lo")
                state: dict[str, Any] = {
                    "mode": "private",
                    "netns": ns,
                    "peer_netns": ns,
                    "local_addr": "127.0.0.1",
                    "peer_addr": "127.0.0.1",
                    "mcast_iface_addr": "127.0.0.1",
                }
            elif p.mode == "veth":
                ns, peer = new_ns("local"), new_ns("peer")
                a, b = f"bl{os.getpid() % 100000}a{len(made)}", f"bl{os.getpid() % 100000}b{len(made)}"
                _ip("-n", ns, "link", "add", a, "type", "veth", "peer", "name", b, "netns", peer)
                _ip("-n", ns, "addr", "add", f"{LOCAL_VETH}/30", "dev", a)
                _ip("-n", peer, "addr", "add", f"{PEER_VETH}/30", "dev", b)
                _ip("-n", ns, "link", "set", a, "up")
                _ip("-n", peer, "link", "set", b, "up")
                _ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", a)
                _ip("-n", peer, "route", "add", "224.0.0.0/4", "dev", b)
                shaping = {}
                for side, dev in ((ns, a), (peer, b)):
                    if p.delay_ms is not None or p.loss_pct is not None:
                        args = ["qdisc", "add", "dev", dev, "root", "handle", "1:", "netem"]
                        if p.delay_ms is not None:
                            args += ["delay", f"{plain_number(p.delay_ms)}ms"]
                        if p.loss_pct is not None:
                            args += ["loss", f"{plain_number(p.loss_pct)}%"]
                        if p.rate_mbit is not None:
                            args += ["rate", f"{plain_number(p.rate_mbit)}mbit"]
                        r = _tc(side, *args)
                    elif p.rate_mbit is not None:
                        # burst: at least one 1514 B frame and 1 ms of the rate; queue up to 50 ms
                        burst = max(1600, int(p.rate_mbit * 1e6 / 8 / 1000))
                        r = _tc(
                            side,
                            "qdisc",
                            "add",
                            "dev",
                            dev,
                            "root",
                            "tbf",
                            "rate",
                            f"{plain_number(p.rate_mbit)}mbit",
                            "burst",
                            str(burst),
                            "latency",
                            "50ms",
                        )
                    else:
                        continue
                    if r.returncode != 0:
                        raise RuntimeError(f"tc on {dev}: {r.stderr.strip()}")
                    shaping[dev] = " ".join(r.args[4:])
                state = {
                    "mode": "veth",
                    "netns": ns,
                    "peer_netns": peer,
                    "local_addr": LOCAL_VETH,
                    "peer_addr": PEER_VETH,
                    "mcast_iface_addr": LOCAL_VETH,
                    "rate_mbit": p.rate_mbit,
                    "delay_ms": p.delay_ms,
                    "loss_pct": p.loss_pct,
                    "qdiscs": shaping,
                }
            else:
                addr = _iface_addr(p.iface or "")
                state = {
                    "mode": "iface",
                    "netns": "",
                    "peer_netns": "",
                    "iface": p.iface,
                    "local_addr": addr,
                    "peer_addr": p.peer_addr,
                    "mcast_iface_addr": addr,
                }
            os.environ.update(
                {
                    "BOARDLAB_NETNS": state["netns"],
                    "BOARDLAB_PEER_NETNS": state["peer_netns"],
                    "BOARDLAB_LOCAL_ADDR": state["local_addr"] or "",
                    "BOARDLAB_PEER_ADDR": state["peer_addr"] or "",
                    "BOARDLAB_MCAST_IFACE_ADDR": state["mcast_iface_addr"] or "",
                }
            )
            ctx.extra["netns"] = state
            yield state
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            ctx.extra.pop("netns", None)
            for _, token in reversed(made):
                ctx.journal.undo(token)


def _iface_addr(iface: str) -> str | None:
    out = _ip("-4", "-o", "addr", "show", "dev", iface, check=False).stdout.split()
    return out[out.index("inet") + 1].split("/")[0] if "inet" in out else None


def exec_prefix(netns: str | None) -> list[str]:
    """The argv prefix that runs a program in a placement's namespace (nothing for the host's)."""
    return ["ip", "netns", "exec", netns] if netns else []


KIND = Netns()
