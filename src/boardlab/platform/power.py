"""Power and energy sensors: hwmon (INA2xx and friends) and powercap (RAPL).

Units are those the hwmon ABI defines (Documentation/hwmon/sysfs-interface): in*_input mV,
curr*_input mA, power*_input uW, energy*_input uJ; powercap energy_uj in uJ.
"""

from __future__ import annotations

import re

from boardlab.model.board import PowercapZone, PowerSensor, SensorInput
from boardlab.platform.sysroot import RootLike, SysRoot

HWMON_DIR = "sys/class/hwmon"
POWERCAP_DIR = "sys/class/powercap"

_INPUT = re.compile(r"(in|curr|power|energy)(\d+)_input")
_KIND_UNIT = {
    "in": ("voltage", "mV"),
    "curr": ("current", "mA"),
    "power": ("power", "uW"),
    "energy": ("energy", "uJ"),
}

# Rails of boards whose kernels give the monitors no label, keyed by device-tree compatible and the i2c
# device ("<bus>-<address>"). Odroid-XU3: arch/arm/boot/dts/exynos5422-odroidxu3.dts, i2c_0.
BOARD_RAILS: dict[str, dict[str, str]] = {
    "hardkernel,odroid-xu3": {
        "0-0040": "A15 cluster (VDD_ARM)",
        "0-0041": "memory (VDD_MEM)",
        "0-0044": "GPU (VDD_G3D)",
        "0-0045": "A7 cluster (VDD_KFC)",
    },
}


def list_hwmon(root: RootLike) -> tuple[str, ...]:
    return tuple(SysRoot.of(root).listdir(HWMON_DIR, r"hwmon\d+"))


def read_power_uw(root: RootLike, hwmon: str, channel: int = 1) -> int | None:
    """power<channel>_input of one hwmon device, in uW: the monitor's per-sample read."""
    return SysRoot.of(root).read_int(f"{HWMON_DIR}/{hwmon}/power{channel}_input", "a power in uW")


def read_energy_uj(root: RootLike, zone: str) -> int | None:
    """A powercap zone's cumulative energy in uJ; it wraps at max_energy_range_uj."""
    return SysRoot.of(root).read_int(f"{POWERCAP_DIR}/{zone}/energy_uj", "an energy in uJ")


def read_sensor(root: RootLike, hwmon: str, compatible: tuple[str, ...] = ()) -> PowerSensor:
    sr = SysRoot.of(root)
    d = f"{HWMON_DIR}/{hwmon}"
    inputs = []
    for attr in sr.listdir(d, _INPUT.pattern):
        m = _INPUT.fullmatch(attr)
        assert m is not None
        kind, unit = _KIND_UNIT[m[1]]
        inputs.append(
            SensorInput(
                attribute=attr,
                kind=kind,
                value=sr.read_int(f"{d}/{attr}", f"a {kind} in {unit} (an integer)"),
                unit=unit,
                label=sr.read_str(f"{d}/{m[1]}{m[2]}_label"),
            )
        )
    device = sr.link_name(f"{d}/device")
    label = sr.read_str(f"{d}/label")  # device-level label: Linux >= 5.18 with a DT label
    if label is None and device is not None:
        label = next((BOARD_RAILS[c][device] for c in compatible if device in BOARD_RAILS.get(c, {})), None)
    power = next((i.value for i in inputs if i.attribute == "power1_input"), None)
    return PowerSensor(
        name=hwmon,
        chip=sr.read_str(f"{d}/name"),
        device=device,
        label=label,
        power_uw=power,
        inputs=tuple(inputs),
    )


def read_power_sensors(root: RootLike, compatible: tuple[str, ...] = ()) -> tuple[PowerSensor, ...]:
    """hwmon devices that measure voltage, current, power or energy (temperature-only ones are left out)."""
    sr = SysRoot.of(root)
    sensors = (read_sensor(sr, h, compatible) for h in list_hwmon(sr))
    return tuple(s for s in sensors if s.inputs)


def read_powercap(root: RootLike) -> tuple[PowercapZone, ...]:
    sr = SysRoot.of(root)
    zones = []
    for name in sr.listdir(POWERCAP_DIR):
        d = f"{POWERCAP_DIR}/{name}"
        if not sr.exists(f"{d}/energy_uj"):
            continue  # control-type directories ("intel-rapl") carry no counter
        enabled = sr.read_int(f"{d}/enabled", "0 or 1")
        zones.append(
            PowercapZone(
                name=name,
                zone=sr.read_str(f"{d}/name"),
                energy_uj=read_energy_uj(sr, name),
                max_energy_range_uj=sr.read_int(f"{d}/max_energy_range_uj", "an energy in uJ"),
                enabled=None if enabled is None else bool(enabled),
            )
        )
    return tuple(zones)
