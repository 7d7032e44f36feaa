"""The simulator's memory-latency model: ns per access of a pointer chase, and the counters it would show.

Shape (the governor study, section 3.1): an access that misses the last-level cache crosses the CCI, which
snoops the other cluster; the snoop completes at the other cluster's clock, so below a knee frequency
(0.7 GHz for an idle A15 seen from the A7, 0.4 GHz for an idle A7 seen from the A15) every such access
waits longer, growing as 1/f_other. Accesses served by L1/L2 do not cross the CCI and do not pay it. The
constants are calibrated to the study's reported shape (up to ~80% slowdown of a DRAM-bound chase at the
lowest other-cluster OPP), not measured: the simulator exists to test the pipeline, not to predict a board.
"""

from __future__ import annotations

from dataclasses import dataclass

from boardlab.governor.opp import ClusterSpec, SocSpec

# (knee kHz, ns per access at twice below the knee) of the snoop penalty, by the *snooped* cluster.
SNOOP = {"a15": (700_000, 30.0), "a7": (400_000, 60.0)}
# A sequential chase is served mostly by the prefetcher: this share of its line misses is exposed.
SEQ_EXPOSED = 0.12
# A stride of one cache line (the study's 16 x 4-byte elements) in address order: a stride prefetcher follows
# it, but each access needs a new line and the prefetcher runs fewer lines ahead than the chase consumes, so
# more of its misses are exposed than a sequential chase's. An assumption of the model (the study reports the
# stride sweep's shape, not this share).
STRIDE_EXPOSED = 0.35
EXPOSED = {"seq": SEQ_EXPOSED, "stride": STRIDE_EXPOSED}
CCI_CLOCK_GHZ = 0.532  # bus_wcore top OPP: CCI stall cycles are counted at this clock
CCI_BASE_STALL = 0.6  # stall cycles per read with no snoop wait


def snoop_ns(other: ClusterSpec | None, other_khz: int | None) -> float:
    """Extra ns a CCI transaction waits for the snoop of `other` at `other_khz` (0 without a CCI peer)."""
    if other is None or other_khz is None or other.name not in SNOOP:
        return 0.0
    knee, scale = SNOOP[other.name]
    return scale * max(0.0, knee / other_khz - 1.0)


@dataclass(frozen=True)
class Access:
    ns_per_access: float
    mem_share: float  # share of accesses that go past the last-level cache (cross the CCI)
    snoop_ns: float  # the snoop wait each of those pays
    cycles_per_access: float  # at this cluster's clock

    @property
    def memory_access(self) -> float:
        """BUS_ACCESS / CPU_CYCLES: bus accesses per cycle, which falls when snoops stall the core."""
        return self.mem_share / self.cycles_per_access

    @property
    def cci_congestion(self) -> float:
        """CCI read-request stall cycles per read on this cluster's slave port."""
        return CCI_BASE_STALL + self.snoop_ns * CCI_CLOCK_GHZ


def chase(
    soc: SocSpec,
    this: ClusterSpec,
    this_khz: int,
    other_khz: int | None,
    pattern: str,
    size_bytes: int,
    bus_hz: int | None = None,
) -> Access:
    """One pointer-chasing access (random: a line per access; seq, stride: prefetched lines)."""
    ghz = this_khz / 1e6
    p_l1 = min(1.0, this.l1_bytes / size_bytes)
    p_l2 = max(0.0, min(1.0, this.l2_bytes / size_bytes) - p_l1)
    p_mem = max(0.0, 1.0 - p_l1 - p_l2)
    if pattern in EXPOSED:
        p_mem *= EXPOSED[pattern]
        p_l2 *= EXPOSED[pattern]
    dram = soc.dram_ns
    if bus_hz and soc.devfreq_hz:
        dram *= (max(soc.devfreq_hz) / bus_hz) ** 0.5  # slower bus: longer DRAM access
    others = [c for c in soc.clusters if c is not this]
    wait = snoop_ns(others[0] if others and soc.cci else None, other_khz)
    hit_ns = (1 - p_l2 - p_mem) * this.l1_cycles / ghz + p_l2 * this.l2_cycles / ghz
    ns = hit_ns + p_mem * (this.l2_cycles / ghz + dram + wait)
    return Access(ns, p_mem, wait, ns * ghz)
