"""Thermal zones (temperatures in millidegrees Celsius, `temp_mc`), trip points and cooling devices."""

from __future__ import annotations

from boardlab.model.board import CoolingDevice, ThermalZone, TripPoint
from boardlab.platform.sysroot import RootLike, SysRoot

THERMAL_DIR = "sys/class/thermal"
MC = "a temperature in millidegrees Celsius (an integer)"


def list_zones(root: RootLike) -> tuple[str, ...]:
    return tuple(SysRoot.of(root).listdir(THERMAL_DIR, r"thermal_zone\d+"))


def zone_temp_mc(root: RootLike, zone: str) -> int | None:
    """One zone's temperature; None when absent or when the sensor refuses the read (EAGAIN, ENODATA)."""
    return SysRoot.of(root).read_int(f"{THERMAL_DIR}/{zone}/temp", MC)


def read_temperatures_mc(root: RootLike) -> dict[str, int | None]:
    """{zone type or name: temp_mc} for every zone, the monitor's per-sample read."""
    sr = SysRoot.of(root)
    return {(sr.read_str(f"{THERMAL_DIR}/{z}/type") or z): zone_temp_mc(sr, z) for z in list_zones(sr)}


def read_zone(root: RootLike, zone: str) -> ThermalZone:
    sr = SysRoot.of(root)
    d = f"{THERMAL_DIR}/{zone}"
    trips = []
    indices = sorted({int(n.split("_")[2]) for n in sr.listdir(d, r"trip_point_\d+_type")})
    for i in indices:
        trips.append(
            TripPoint(
                index=i,
                type=sr.read_str(f"{d}/trip_point_{i}_type") or "unknown",
                temp_mc=sr.read_int(f"{d}/trip_point_{i}_temp", MC),
                hyst_mc=sr.read_int(f"{d}/trip_point_{i}_hyst", MC),
            )
        )
    return ThermalZone(
        name=zone,
        type=sr.read_str(f"{d}/type"),
        temp_mc=zone_temp_mc(sr, zone),
        mode=sr.read_str(f"{d}/mode"),
        policy=sr.read_str(f"{d}/policy"),
        trips=tuple(trips),
    )


def read_zones(root: RootLike) -> tuple[ThermalZone, ...]:
    sr = SysRoot.of(root)
    return tuple(read_zone(sr, z) for z in list_zones(sr))


def read_cooling_devices(root: RootLike) -> tuple[CoolingDevice, ...]:
    """Cooling devices; a cpufreq one ("thermal-cpufreq-N", "cpufreq-cpuN") above state 0 caps frequency."""
    sr = SysRoot.of(root)
    return tuple(
        CoolingDevice(
            name=name,
            type=sr.read_str(f"{THERMAL_DIR}/{name}/type"),
            cur_state=sr.read_int(f"{THERMAL_DIR}/{name}/cur_state"),
            max_state=sr.read_int(f"{THERMAL_DIR}/{name}/max_state"),
        )
        for name in sr.listdir(THERMAL_DIR, r"cooling_device\d+")
    )


def is_cpufreq_cooling(device: CoolingDevice) -> bool:
    kind = (device.type or "").lower()
    return "cpufreq" in kind or kind == "processor"
