"""Operating points of the simulated SoCs and the kernel's Energy Model (research notes 3.7, 4).

Power per core at an OPP follows drivers/opp/of.c: P_uW = C * mV^2 * MHz / 1e6 with C the DT
dynamic-power-coefficient. Static (leakage) power is not in the kernel's model; the simulator adds
`leak_w_per_v` per cluster (an assumption, stated in docs/governor.md), so that racing to idle is not free.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Opp:
    khz: int
    microvolt: int


@dataclass(frozen=True)
class ClusterSpec:
    name: str  # "a7", "a15", "a8"
    policy: str  # "policy0"
    cpus: tuple[int, ...]
    opps: tuple[Opp, ...]  # ascending
    dyn_coeff_uw_per_mhz_v2: int  # DT dynamic-power-coefficient
    leak_w_per_v: float
    # Memory model (cycles at this core's clock; research notes 2.2): L1 hit, L2 hit, L2 size.
    l1_cycles: float
    l2_cycles: float
    l1_bytes: int
    l2_bytes: int
    pmu: str  # perf PMU name in event_source/devices
    cci_source: int | None  # CCI-400 slave interface of this cluster (S3 = A7, S4 = A15 on Exynos 5422)

    @property
    def khz(self) -> tuple[int, ...]:
        return tuple(o.khz for o in self.opps)

    def volts(self, khz: int) -> float:
        for o in self.opps:
            if o.khz == khz:
                return o.microvolt / 1e6
        raise KeyError(f"{self.name}: no OPP at {khz} kHz")

    def core_power_w(self, khz: int) -> float:
        """Energy Model power of one fully busy core at this OPP."""
        mv = self.volts(khz) * 1000
        return self.dyn_coeff_uw_per_mhz_v2 * mv * mv * (khz / 1000) / 1e6 / 1e6

    def cluster_power_w(self, khz: int, busy_cores: float) -> float:
        return busy_cores * self.core_power_w(khz) + self.leak_w_per_v * self.volts(khz)


def _opps(rows: list[tuple[int, float]]) -> tuple[Opp, ...]:
    return tuple(Opp(mhz * 1000, round(v * 1e6)) for mhz, v in sorted(rows))


# Exynos 5422 as on the Odroid-XU3 (exynos5800 voltages; research notes 4.1).
A15_OPPS = _opps(
    [
        (2000, 1.3125), (1900, 1.2625), (1800, 1.2375), (1700, 1.25), (1600, 1.25), (1500, 1.1),
        (1400, 1.1), (1300, 1.1), (1200, 1.0), (1100, 1.0), (1000, 1.0), (900, 1.0), (800, 0.9),
        (700, 0.9), (600, 0.9), (500, 0.9), (400, 0.9), (300, 0.9), (200, 0.9),
    ]
)  # fmt: skip
A7_OPPS = _opps(
    [
        (1400, 1.275), (1300, 1.25), (1200, 1.25), (1100, 1.25), (1000, 1.1), (900, 1.1), (800, 1.1),
        (700, 1.0), (600, 1.0), (500, 1.0), (400, 1.0), (300, 0.9), (200, 0.9),
    ]
)  # fmt: skip
# BeagleBone Black (AM3358/9 rev 2.x; research notes 4.2).
AM335X_OPPS = _opps([(300, 0.95), (600, 1.10), (720, 1.20), (800, 1.26), (1000, 1.325)])


@dataclass(frozen=True)
class SocSpec:
    name: str
    model: str
    clusters: tuple[ClusterSpec, ...]
    dram_ns: float  # DRAM access beyond the last-level cache at the reference bus frequency
    transition_latency_ns: int
    devfreq: str | None  # memory controller devfreq name
    devfreq_hz: tuple[int, ...]
    cci: bool  # a CCI-400 joins the clusters (snoops cross it)

    def cluster(self, policy: str) -> ClusterSpec:
        for c in self.clusters:
            if c.policy == policy:
                return c
        raise KeyError(policy)


EXYNOS5422 = SocSpec(
    name="exynos5422",
    model="Hardkernel Odroid-XU3 (simulated Exynos 5422)",
    clusters=(
        ClusterSpec(
            "a7", "policy0", (0, 1, 2, 3), A7_OPPS, 90, 0.05, 3, 13, 32768, 524288, "armv7_cortex_a7", 3
        ),
        ClusterSpec(
            "a15", "policy4", (4, 5, 6, 7), A15_OPPS, 310, 0.25, 4, 21, 32768, 2097152, "armv7_cortex_a15", 4
        ),
    ),
    dram_ns=95.0,
    transition_latency_ns=140000,
    devfreq="10c20000.memory-controller",
    devfreq_hz=(165000000, 206000000, 275000000, 413000000, 543000000, 633000000, 728000000, 825000000),
    cci=True,
)
AM335X = SocSpec(
    name="am335x",
    model="BeagleBone Black (simulated AM335x)",
    clusters=(
        ClusterSpec(
            "a8", "policy0", (0,), AM335X_OPPS, 120, 0.05, 4, 20, 32768, 262144, "armv7_cortex_a8", None
        ),
    ),
    dram_ns=110.0,
    transition_latency_ns=300000,
    devfreq=None,
    devfreq_hz=(),
    cci=False,
)
SOCS = {s.name: s for s in (EXYNOS5422, AM335X)}
