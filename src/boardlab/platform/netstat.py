"""Network protocol counters from /proc/net/snmp: why UDP datagrams were lost (io.net, stream.pipeline).

A datagram the sender counted but the receiver never saw was dropped somewhere the kernel counts:
RcvbufErrors (the receiving socket's buffer was full), SndbufErrors (the sender's), InErrors (all receive
errors, RcvbufErrors included), InCsumErrors, NoPorts (nothing listening), MemErrors.
"""

from __future__ import annotations

from dataclasses import dataclass

from boardlab.errors import InputError
from boardlab.platform.sysroot import RootLike, SysRoot

SNMP = "proc/net/snmp"
# Counters that explain a loss, in the order a report names them.
UDP_LOSS_COUNTERS = ("RcvbufErrors", "SndbufErrors", "InCsumErrors", "NoPorts", "MemErrors", "InErrors")


def read_snmp(root: RootLike, protocol: str = "Udp") -> dict[str, int] | None:
    """{counter: value} of one protocol's lines ("Udp: InDatagrams ..." then "Udp: 102000 ..."); None when
    /proc/net/snmp is absent."""
    sr = SysRoot.of(root)
    text = sr.read_text(SNMP)
    if text is None:
        return None
    rows = [line.split() for line in text.splitlines() if line.startswith(f"{protocol}:")]
    if len(rows) < 2:
        return None
    names, values = rows[0][1:], rows[1][1:]
    try:
        return dict(zip(names, (int(v) for v in values), strict=True))
    except ValueError:
        raise InputError(f"{sr.show(SNMP)}: the {protocol} lines are not a header and integers") from None


@dataclass(frozen=True)
class UdpLossExplanation:
    """What the kernel counted between two reads of /proc/net/snmp (deltas, datagrams)."""

    deltas: dict[str, int]

    @property
    def rcvbuf_errors(self) -> int:
        return self.deltas.get("RcvbufErrors", 0)

    def text(self, lost_datagrams: int) -> str:
        causes = [
            f"{name} +{self.deltas[name]}" for name in UDP_LOSS_COUNTERS if self.deltas.get(name, 0) > 0
        ]
        if lost_datagrams <= 0:
            return "no loss"
        if not causes:
            return (
                f"{lost_datagrams} lost, none counted by the kernel (dropped on the wire or by the peer host)"
            )
        hint = ""
        if self.rcvbuf_errors:
            hint = (
                "; the receiving socket's buffer overflowed: raise sockbuf_bytes (net.core.rmem_max) or "
                "pin the sink"
            )
        return f"{lost_datagrams} lost; kernel counted " + ", ".join(causes) + hint


def udp_loss_between(
    before: dict[str, int] | None, after: dict[str, int] | None
) -> UdpLossExplanation | None:
    if before is None or after is None:
        return None
    return UdpLossExplanation({k: after[k] - before.get(k, 0) for k in after if k in before})
