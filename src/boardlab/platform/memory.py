"""Memory and swap from /proc/meminfo and /proc/swaps (the kernel's "kB" is KiB)."""

from __future__ import annotations

from boardlab.errors import InputError
from boardlab.model.board import Memory, SwapDevice
from boardlab.platform.sysroot import RootLike, SysRoot


def read_meminfo(root: RootLike) -> dict[str, int]:
    """/proc/meminfo as {field: value}; values in KiB except the HugePages_* counts."""
    sr = SysRoot.of(root)
    text = sr.read_text("proc/meminfo")
    values: dict[str, int] = {}
    for line in (text or "").splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        words = rest.split()
        try:
            values[key.strip()] = int(words[0])
        except (ValueError, IndexError):
            raise InputError(
                f"{sr.show('proc/meminfo')}: expected '<field>: <integer> kB', found {line!r}"
            ) from None
    return values


def read_swaps(root: RootLike) -> tuple[SwapDevice, ...]:
    sr = SysRoot.of(root)
    text = sr.read_text("proc/swaps")
    devices = []
    for line in (text or "").splitlines()[1:]:  # the first line is the header
        fields = line.split()
        if not fields:
            continue
        try:
            name, kind, size, used, prio = (
                fields[0],
                fields[1],
                int(fields[2]),
                int(fields[3]),
                int(fields[4]),
            )
        except (ValueError, IndexError):
            raise InputError(
                f"{sr.show('proc/swaps')}: expected 'Filename Type Size Used Priority', found {line!r}"
            ) from None
        devices.append(SwapDevice(name=name, type=kind, size_kib=size, used_kib=used, priority=prio))
    return tuple(devices)


def read_memory(root: RootLike) -> Memory:
    sr = SysRoot.of(root)
    info = read_meminfo(sr)
    return Memory(
        mem_total_kib=info.get("MemTotal"),
        mem_free_kib=info.get("MemFree"),
        mem_available_kib=info.get("MemAvailable"),
        swap_total_kib=info.get("SwapTotal"),
        swap_free_kib=info.get("SwapFree"),
        hugepage_size_kib=info.get("Hugepagesize"),
        hugepages_total=info.get("HugePages_Total"),
        swap_devices=read_swaps(sr),
    )
