"""Kernel drivers on a bus and the devices bound to them:
/sys/bus/<bus>/drivers/<driver>/{bind,unbind,<device>}.

A device bound to a driver appears as a symlink named after it in the driver's directory (to the device under
/sys/devices); writing the device's name to `unbind` detaches it, to `bind` attaches it again. The driver
condition uses this to run a workload with a hardware engine's driver off (the crypto accelerator).
"""

from __future__ import annotations

from boardlab.platform.sysroot import SysRoot

BUS_DIR = "sys/bus"


def driver_dir(bus: str, driver: str) -> str:
    return f"{BUS_DIR}/{bus}/drivers/{driver}"


def list_drivers(root: SysRoot, bus: str) -> list[str]:
    return root.listdir(f"{BUS_DIR}/{bus}/drivers")


def bound_devices(root: SysRoot, bus: str, driver: str) -> list[str]:
    """The devices bound to `driver` now: the links to directories in its directory (not `module`, its
    kernel module; bind, unbind and uevent are files)."""
    d = driver_dir(bus, driver)
    return [name for name in root.listdir(d) if name != "module" and root.is_dir(f"{d}/{name}")]


def unbind(root: SysRoot, bus: str, driver: str, device: str) -> None:
    root.write_text(f"{driver_dir(bus, driver)}/unbind", device)


def bind(root: SysRoot, bus: str, driver: str, device: str) -> None:
    root.write_text(f"{driver_dir(bus, driver)}/bind", device)
