"""Where the workload runs and what may disturb that CPU: isolation guarantees, PM QoS, and the IRQs.

```toml
[[conditions]]
name = "isolated"
kind = "isolation"
params = { mode = "isolated", cpu_dma_latency_us = 0 }
```

The runner already pins every worker to `runs.cpu` and conditions put their loads on the other CPUs; this
kind adds no second pinning. `mode = "shared"` is the one exception: the worker is NOT pinned (it and the
loads share every CPU, as on an unconfigured system; the runner asks `worker_cpus`). `mode = "pinned"` states
that default; `mode = "isolated"` also requires the
worker's CPU to be one the kernel isolates (isolcpus, /sys/devices/system/cpu/isolated), and refuses to
start otherwise with the boot parameters that would provide it. `cpu_dma_latency_us` holds
/dev/cpu_dma_latency open with that value for the run (0: no C-state exits); the kernel drops the request
when the file closes, also when boardlab dies, so nothing is journaled. Each run records the isolation of
the worker's CPU, which IRQs may be delivered to it, and how many interrupts it took during the run.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.model.campaign import DEFAULT_ISOLATION_MODE
from boardlab.platform import cpuidle, irq
from boardlab.platform.sysroot import format_cpulist

MODES = ("shared", "pinned", "isolated")
_MAX_LATENCY_US = cpuidle.NO_LATENCY_CONSTRAINT_US


@dataclass(frozen=True)
class IsolationSetting:
    mode: str = param(
        "enum",
        DEFAULT_ISOLATION_MODE,
        choices=MODES,
        help="shared (the worker may run on any CPU), pinned (on its CPU), isolated (on a CPU the kernel "
        "isolates: isolcpus)",
    )
    cpu_dma_latency_us: int | None = param(
        "int",
        None,
        min=0,
        max=_MAX_LATENCY_US,
        unit="us",
        help="hold /dev/cpu_dma_latency at this bound during the run, as root (0: no C-state exits)",
    )


def boot_parameters(cpu: int) -> str:
    """The kernel command line that isolates `cpu` from the scheduler, the tick and RCU callbacks."""
    return f"isolcpus={cpu} nohz_full={cpu} rcu_nocbs={cpu}"


class Isolation(DeclaredKind[IsolationSetting]):
    name = "isolation"
    summary = "the worker's CPU isolated (isolcpus) or just pinned; optional cpu_dma_latency; IRQs recorded"

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        limits = []
        iso = info.capabilities.get("isolation")
        if iso is not None and not iso.supported:
            limits.append(f"mode isolated: {iso.reason}")
        lat = info.capabilities.get("cpu_dma_latency")
        if lat is not None and not lat.supported:
            limits.append(f"cpu_dma_latency_us: {lat.reason}")
        return None, tuple(limits)  # pinned and shared run everywhere

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        setting = self.typed(params)
        cpu = ctx.worker_cpu
        if cpu is None:
            return (
                "the worker is not pinned (runs.cpu = 'none'), so no CPU can be isolated or recorded: "
                "set runs.cpu to a CPU number or 'auto'"
            )
        iso = ctx.info.isolation.isolated_cpus
        if setting.mode == "isolated":
            if not iso:
                if len(ctx.online_cpus) < 2:
                    return "unsupported: only one CPU is online, and isolating a CPU needs at least two"
                return (
                    "unsupported: the kernel isolates no CPU (no isolcpus in "
                    f"{ctx.root.show('proc/cmdline')}, {ctx.root.show('sys/devices/system/cpu/isolated')} "
                    f"empty): boot with `{boot_parameters(cpu)}` to isolate the worker's CPU {cpu}, or use "
                    "mode = 'pinned'"
                )
            if cpu not in iso:
                return (
                    f"the worker's CPU {cpu} is not isolated (isolated CPUs: {format_cpulist(iso)}): "
                    f"set runs.cpu = {iso[-1]}, or boot with `{boot_parameters(cpu)}`"
                )
        if setting.cpu_dma_latency_us is not None:
            cap = ctx.info.capabilities.get("cpu_dma_latency")
            if cap is not None and not cap.supported:
                return f"cpu_dma_latency_us: unsupported: {cap.reason}"
            if not ctx.root.writable(cpuidle.CPU_DMA_LATENCY):
                return f"cpu_dma_latency_us: {ctx.not_writable(cpuidle.CPU_DMA_LATENCY)}"
        return None

    def worker_cpus(self, params: dict, ctx: ApplyContext) -> set[int] | None:
        """The worker's affinity under this mode: every online CPU for "shared"; None keeps the runner's
        pin."""
        return set(ctx.online_cpus) if self.typed(params).mode == "shared" else None

    @contextlib.contextmanager
    def applied(self, setting: IsolationSetting, ctx: ApplyContext):
        sr, cpu, iso = ctx.root, ctx.worker_cpu, ctx.info.isolation
        state: dict = {
            "mode": setting.mode,
            "worker_cpu": cpu,
            "isolated": cpu in iso.isolated_cpus,
            "isolcpus_flags": list(iso.isolcpus_flags),
            "nohz_full": cpu in iso.nohz_full,
            "rcu_nocbs": cpu in iso.rcu_nocbs,
            "irqs": _irq_placement(sr, cpu),
        }
        fd = None
        try:
            if setting.cpu_dma_latency_us is not None:
                before = cpuidle.read_cpu_dma_latency_us(sr)
                fd = cpuidle.hold_cpu_dma_latency(sr, setting.cpu_dma_latency_us)
                state["cpu_dma_latency_us"] = {
                    "requested": setting.cpu_dma_latency_us,
                    "before": before,
                    "in_force": cpuidle.read_cpu_dma_latency_us(sr),
                }
            lines0 = irq.read_interrupts(sr)
            yield state
            lines1 = irq.read_interrupts(sr)
            if lines0 is not None and lines1 is not None and cpu is not None:
                state["interrupts_on_worker_cpu"] = _interrupt_delta(lines0, lines1, cpu)
            else:
                state["interrupts_on_worker_cpu"] = f"unsupported: no {sr.show(irq.INTERRUPTS)}"
        finally:
            if fd is not None:
                os.close(fd)  # ends the PM QoS request


def _irq_placement(sr, cpu: int | None) -> dict | str:
    """Which IRQs may be (and, where the kernel says, are) delivered to the worker's CPU."""
    affinities = irq.read_affinities(sr)
    if not affinities:
        return f"unsupported: no {sr.show(irq.IRQ_DIR)}/*/smp_affinity_list"
    names = {line.irq: line.name for line in irq.read_interrupts(sr) or ()}
    default = irq.default_affinity(sr)
    allowed = [a for a in affinities if cpu in a.cpus]
    return {
        "default_affinity": None if default is None else format_cpulist(default),
        "count": len(affinities),
        "allowed_on_worker_cpu": [
            {
                "irq": a.irq,
                "cpus": format_cpulist(a.cpus),
                "effective": None if a.effective_cpus is None else format_cpulist(a.effective_cpus),
                "name": names.get(str(a.irq), ""),
            }
            for a in allowed
        ],
        "effective_on_worker_cpu": (
            None
            if all(a.effective_cpus is None for a in affinities)
            else [a.irq for a in affinities if a.effective_cpus and cpu in a.effective_cpus]
        ),
    }


def _interrupt_delta(
    lines0: tuple[irq.InterruptLine, ...], lines1: tuple[irq.InterruptLine, ...], cpu: int
) -> dict:
    c0, c1 = irq.counts_on_cpu(lines0, cpu), irq.counts_on_cpu(lines1, cpu)
    names = {line.irq: line.name for line in lines1}
    by_irq = {k: c1[k] - c0.get(k, 0) for k in c1 if c1[k] - c0.get(k, 0)}
    return {
        "total": sum(by_irq.values()),
        "by_irq": [
            {"irq": k, "count": n, "name": names.get(k, "")}
            for k, n in sorted(by_irq.items(), key=lambda kv: -kv[1])
        ],
    }


KIND = Isolation()
