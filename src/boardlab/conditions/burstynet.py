"""Bursty loopback traffic, after the satellite study's Tor relay: the network load a relay daemon puts on a
board.

Plan syntax:

    [[conditions]]
    name = "tor-like"
    kind = "burstynet"
    params = { protocol = "tcp", cpu_share = 0.25, seed = 1, burst_ms = 50, placement = "other" }

Two child processes exchange fixed-size messages (`message_bytes`, default 514: a Tor cell) over a TCP
connection or a UDP socket on 127.0.0.1 only. The sender alternates bursts, sent as fast as the loopback
path takes them, and pauses; both are exponentially distributed (means `burst_ms` and whatever `cpu_share`
needs), from `random.Random(seed)`. After each burst the sender measures what a second of burst costs the
two processes in CPU and sets the mean pause so that their long-run CPU use is `cpu_share` of one core
(0 < cpu_share <= 1; a share they cannot reach means no pauses). It ends by itself after an hour. The state
records bursts, bytes and messages sent and received, time in bursts and pauses, and the share the program
measured for itself besides the CPU use boardlab measures from /proc (`load_cpu_pct`).
"""

from __future__ import annotations

import socket
from contextlib import contextmanager
from dataclasses import dataclass

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, DeclaredKind, param

PROTOCOLS = ("tcp", "udp")
MAX_UDP_PAYLOAD = 65507


@dataclass(frozen=True)
class BurstynetParams(background.BackgroundParams):
    protocol: str = param("enum", "tcp", choices=PROTOCOLS, help="the loopback traffic's transport")
    cpu_share: float = param(
        "float", 0.25, min=0, max=1, help="the sender's mean share of one core, in (0, 1]"
    )
    seed: int = param("int", 1, help="seed of the burst and gap lengths (the same seed, the same traffic)")
    burst_ms: float = param("float", 50.0, min=1, max=10000, unit="ms", help="mean length of a burst")
    message_bytes: int = param("int", 514, min=1, max=MAX_UDP_PAYLOAD, unit="bytes", help="bytes per send")


class Burstynet(DeclaredKind[BurstynetParams]):
    name = "burstynet"
    summary = "bursty loopback TCP/UDP traffic between two processes, like a Tor relay, at a mean CPU share"

    def refuse(self, p: BurstynetParams, params: dict) -> tuple[str | None, str] | None:
        if p.cpu_share <= 0:  # the declaration's range includes 0
            return "cpu_share", f"expected a share of one core in (0, 1], found {params['cpu_share']!r}"
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        p = self.typed(params)
        kind = socket.SOCK_STREAM if p.protocol == "tcp" else socket.SOCK_DGRAM
        try:
            with socket.socket(socket.AF_INET, kind) as s:
                s.bind(("127.0.0.1", 0))
        except OSError as exc:
            return f"unsupported: no {p.protocol} socket on 127.0.0.1 ({exc}): is the loopback interface up?"
        return background.placement_reason(p.placement, ctx)

    @contextmanager
    def applied(self, p: BurstynetParams, ctx: ApplyContext):
        config = {
            "protocol": p.protocol,
            "cpu_share": p.cpu_share,
            "seed": p.seed,
            "burst_ms": p.burst_ms,
            "message_bytes": p.message_bytes,
        }
        state = {**config, "target_cpu_pct": round(100.0 * p.cpu_share, 2)}
        with background.program_load(
            "burstynet",
            config,
            p,
            ctx=ctx,
            what=f"burstynet ({p.protocol} on 127.0.0.1)",
            state=state,
            health=burstynet_health,
        ):
            yield state


def burstynet_health(state: dict) -> str | None:
    """Why the traffic did not load the run: nothing was sent, or (TCP, lossless) nothing arrived."""
    if state.get("bytes_sent") == 0:
        return "sent no message (the sender failed to connect or to send)"
    if state.get("protocol") == "tcp" and state.get("bytes_sent") and state.get("bytes_received") == 0:
        return f"sent {state['bytes_sent']} bytes over TCP, but none arrived"
    return None


KIND = Burstynet()
