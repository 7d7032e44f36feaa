"""Interrupts: where each IRQ may be delivered (/proc/irq/N/smp_affinity_list) and how many each CPU took
(/proc/interrupts), so a run can record what interrupted the CPU it measured on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from boardlab.errors import InputError
from boardlab.platform.sysroot import RootLike, SysRoot

IRQ_DIR = "proc/irq"
INTERRUPTS = "proc/interrupts"
_CPU_COLUMN = re.compile(r"CPU(\d+)")


@dataclass(frozen=True)
class IrqAffinity:
    irq: int
    cpus: tuple[int, ...]  # smp_affinity_list: where the IRQ may go
    effective_cpus: tuple[int, ...] | None  # effective_affinity_list (where it goes); None when absent


@dataclass(frozen=True)
class InterruptLine:
    """One line of /proc/interrupts: "24" or "LOC", its count per CPU, and the rest of the line."""

    irq: str
    counts: dict[int, int]  # cpu -> count; {} for the summary lines (ERR, MIS) that have one total
    total: int
    name: str  # chip, hwirq, trigger and action names ("GICv2  29 Level  arch_timer"), or the description


def default_affinity(root: RootLike) -> tuple[int, ...] | None:
    """/proc/irq/default_smp_affinity (a hex mask, 32-bit words separated by commas) as CPU numbers."""
    sr = SysRoot.of(root)
    rel = f"{IRQ_DIR}/default_smp_affinity"
    text = sr.read_str(rel)
    if text is None:
        return None
    try:
        mask = int(text.replace(",", ""), 16)
    except ValueError:
        raise InputError(
            f"{sr.show(rel)}: expected a hex CPU mask such as 3 or ff,ffffffff, found {text!r}"
        ) from None
    return tuple(cpu for cpu in range(mask.bit_length()) if mask >> cpu & 1)


def read_affinities(root: RootLike) -> tuple[IrqAffinity, ...]:
    """Every IRQ directory under /proc/irq with its affinity; () when the tree has no proc/irq."""
    sr = SysRoot.of(root)
    out = []
    for name in sr.listdir(IRQ_DIR, r"\d+"):
        cpus = sr.read_cpulist(f"{IRQ_DIR}/{name}/smp_affinity_list")
        if cpus is None:
            continue
        out.append(IrqAffinity(int(name), cpus, sr.read_cpulist(f"{IRQ_DIR}/{name}/effective_affinity_list")))
    return tuple(out)


def parse_interrupts(text: str) -> tuple[InterruptLine, ...]:
    """Parses /proc/interrupts. The header names the online CPUs ("CPU0 CPU2" when CPU1 is offline), and
    each line has one count per header column; ERR and MIS have a single total."""
    lines = text.splitlines()
    if not lines:
        return ()
    cpus = [int(m[1]) for m in _CPU_COLUMN.finditer(lines[0])]
    out = []
    for line in lines[1:]:
        label, sep, rest = line.partition(":")
        if not sep or not label.strip():
            continue
        fields = rest.split()
        counts: list[int] = []
        while fields and len(counts) < len(cpus) and fields[0].isdigit():
            counts.append(int(fields.pop(0)))
        if not counts:
            continue
        per_cpu = dict(zip(cpus, counts, strict=False)) if len(counts) == len(cpus) else {}
        out.append(InterruptLine(label.strip(), per_cpu, sum(counts), " ".join(fields)))
    return tuple(out)


def read_interrupts(root: RootLike) -> tuple[InterruptLine, ...] | None:
    """/proc/interrupts, None when absent."""
    text = SysRoot.of(root).read_text(INTERRUPTS)
    return None if text is None else parse_interrupts(text)


def counts_on_cpu(lines: tuple[InterruptLine, ...], cpu: int) -> dict[str, int]:
    """{irq: count on `cpu`} for the lines that count per CPU."""
    return {line.irq: line.counts[cpu] for line in lines if cpu in line.counts}
