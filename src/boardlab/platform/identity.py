"""Which board this is: device-tree model and compatible, DMI product, cpuinfo Hardware, hostname."""

from __future__ import annotations

from boardlab.platform.cpu import read_cpuinfo
from boardlab.platform.sysroot import RootLike, SysRoot

DT_DIRS = ("proc/device-tree", "sys/firmware/devicetree/base")


def compatible(root: RootLike) -> tuple[str, ...]:
    """Device-tree compatible strings, most specific first ("hardkernel,odroid-xu3", ...); () without DT."""
    sr = SysRoot.of(root)
    for d in DT_DIRS:
        raw = sr.read_bytes(f"{d}/compatible")
        if raw is not None:
            return tuple(s for s in raw.decode("utf-8", "replace").split("\0") if s)
    return ()


def model(root: RootLike) -> str | None:
    sr = SysRoot.of(root)
    for d in DT_DIRS:
        name = sr.read_str(f"{d}/model")
        if name:
            return name
    vendor = sr.read_str("sys/class/dmi/id/sys_vendor")
    product = sr.read_str("sys/class/dmi/id/product_name")
    if vendor or product:
        return " ".join(p for p in (vendor, product) if p)
    _, common = read_cpuinfo(sr)
    return common.get("Model") or common.get("Hardware")


def hardware(root: RootLike) -> str | None:
    return read_cpuinfo(root)[1].get("Hardware")


def hostname(root: RootLike) -> str | None:
    return SysRoot.of(root).read_str("proc/sys/kernel/hostname")
