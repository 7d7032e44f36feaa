"""Power and energy sensors: hwmon (INA2xx and friends) and powercap (RAPL).

Units are those the hwmon ABI defines (Documentation/hwmon/sysfs-interface): in*_input mV,
curr*_input mA, power*_input uW, energy*_input uJ; powercap energy_uj in uJ.
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass

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


def _counter_zones(sr: SysRoot) -> list[str]:
    """The powercap zones that carry an energy counter, by directory name (control-type directories such as
    "intel-rapl" carry none)."""
    return [name for name in sr.listdir(POWERCAP_DIR) if sr.exists(f"{POWERCAP_DIR}/{name}/energy_uj")]


def read_powercap(root: RootLike) -> tuple[PowercapZone, ...]:
    sr = SysRoot.of(root)
    zones = []
    for name in _counter_zones(sr):
        d = f"{POWERCAP_DIR}/{name}"
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


# ---- power sources for per-run energy (boardlab.energy) ----------------------------------------------------
# Everything the energy sampler reads goes through here: the channel files are resolved once (paths), then
# read raw at each tick by `read_raw_int`, as platform/sampling.py does for the monitor.

# Known hwmon chips: per-bit resolution of the shunt and bus ADCs (datasheets, via the kernel docs
# Documentation/hwmon/ina2xx.rst and ina3221.rst): (shunt LSB in V, bus LSB in V).
CHIP_LSB: dict[str, tuple[float, float]] = {
    "ina219": (10e-6, 4e-3),
    "ina220": (10e-6, 4e-3),
    "ina226": (2.5e-6, 1.25e-3),
    "ina230": (2.5e-6, 1.25e-3),
    "ina231": (2.5e-6, 1.25e-3),
    "ina3221": (40e-6, 8e-3),
}
# Channel labels that name a board's input rail (the whole board's consumption): Jetson VDD_IN (JetPack 5),
# POM_5V_IN (JetPack 4). jetson_stats (rbonghi/jetson_stats, jtop/core/power.py) uses the same rule.
INPUT_RAIL_LABELS = frozenset({"VDD_IN", "POM_5V_IN", "VIN_SYS_5V0", "VDD_5V0_IN"})
UNUSED_LABELS = frozenset({"NC", "nc", "unused"})
RAPL_ROOT_ONLY = (
    "needs root (energy_uj is readable by root only since Linux 5.10, commit 949dd0104c49; "
    "a udev rule or sysfs.conf can give a group read access)"
)
PMIC_EXCLUDES = "excludes the 5 V input: USB devices, HATs, NVMe and fan on the 5 V rail are not measured"


def _open_read(path: str) -> bytes:
    """The one raw read of a sensor file. A seam for tests: root ignores file modes, so EACCES and ENODATA
    are simulated by replacing this function, not by chmod."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 64)
    finally:
        os.close(fd)


def read_raw_int(path: str) -> int | None:
    """A sensor value read raw (integer text); None when the file is gone or the kernel refuses the read."""
    try:
        raw = _open_read(path)
    except OSError:
        return None
    try:
        return int(raw.split()[0])
    except (ValueError, IndexError):
        return None


def read_errno(path: str) -> int | None:
    """errno of a read of `path` (EACCES, ENODATA, ...), or None when it reads fine."""
    try:
        _open_read(path)
    except OSError as exc:
        return exc.errno
    return None


@dataclass(frozen=True)
class HwmonChannel:
    """One measuring channel of a hwmon device, with the files that give its power or energy."""

    hwmon: str
    chip: str | None
    device: str | None  # i2c device ("0-0040"), from the device link
    channel: int
    label: str | None
    method: str  # energy (energyN_input, uJ) | power (powerN_input, uW) | vi (inN mV x currN mA)
    paths: tuple[str, ...]  # absolute paths: (energy,) | (power,) | (in, curr)
    power_method: str | None  # how to read it as a power when a sum mixes it with power-only channels
    power_paths: tuple[str, ...]
    update_interval_ms: int | None
    shunt_resistor_uohm: int | None
    bus_mv: int | None  # a bus voltage reading, for the power resolution


def hwmon_channels(root: RootLike, compatible: tuple[str, ...] = ()) -> tuple[HwmonChannel, ...]:
    """Every hwmon channel that measures power or energy: energy*_input when present, else power*_input,
    else inN_input x currN_input (INA3221 has no power attribute). INA3221's in4-6 (shunt voltages), in7 and
    curr4 (sums) and channels labelled NC are left out."""
    sr = SysRoot.of(root)
    out = []
    for h in list_hwmon(sr):
        d = f"{HWMON_DIR}/{h}"
        attrs = set(sr.listdir(d, _INPUT.pattern))
        if not attrs:
            continue
        chip = sr.read_str(f"{d}/name")
        device = sr.link_name(f"{d}/device")
        dev_label = sr.read_str(f"{d}/label")
        if dev_label is None and device is not None:
            dev_label = next(
                (BOARD_RAILS[c][device] for c in compatible if device in BOARD_RAILS.get(c, {})), None
            )
        interval = sr.read_int(f"{d}/update_interval", "an interval in ms")
        dev_shunt = sr.read_int(f"{d}/shunt_resistor", "a resistance in uOhm")  # ina2xx
        chans = sorted({int(m[2]) for a in attrs if (m := _INPUT.fullmatch(a)) and m[1] != "in"})
        for n in chans:
            label = (
                sr.read_str(f"{d}/in{n}_label")
                or sr.read_str(f"{d}/power{n}_label")
                or sr.read_str(f"{d}/curr{n}_label")
            )
            if label in UNUSED_LABELS:
                continue
            rel: tuple[str, ...]
            prel: tuple[str, ...]
            if f"energy{n}_input" in attrs:
                method, rel = "energy", (f"{d}/energy{n}_input",)
            elif f"power{n}_input" in attrs:
                method, rel = "power", (f"{d}/power{n}_input",)
            elif f"curr{n}_input" in attrs and f"in{n}_input" in attrs and (chip != "ina3221" or n <= 3):
                method, rel = "vi", (f"{d}/in{n}_input", f"{d}/curr{n}_input")
            else:
                continue  # a current without its bus voltage (ina3221 curr4 = sum of shunt currents)
            if f"power{n}_input" in attrs:
                pm, prel = "power", (f"{d}/power{n}_input",)
            elif f"curr{n}_input" in attrs and f"in{n}_input" in attrs and (chip != "ina3221" or n <= 3):
                pm, prel = "vi", (f"{d}/in{n}_input", f"{d}/curr{n}_input")
            else:
                pm, prel = None, ()
            # ina2xx: in0 = shunt, in1 = bus; ina3221: inN = bus of channel N
            bus = sr.read_int(f"{d}/in{n if chip == 'ina3221' else 1}_input", "a voltage in mV")
            shunt = sr.read_int(f"{d}/shunt{n}_resistor", "a resistance in uOhm") or dev_shunt  # ina3221
            if label is None:
                label = dev_label if len(chans) == 1 else (f"{dev_label} ch{n}" if dev_label else None)
            out.append(
                HwmonChannel(
                    hwmon=h,
                    chip=chip,
                    device=device,
                    channel=n,
                    label=label,
                    method=method,
                    paths=tuple(str(sr.path(r)) for r in rel),
                    power_method=pm,
                    power_paths=tuple(str(sr.path(r)) for r in prel),
                    update_interval_ms=interval,
                    shunt_resistor_uohm=shunt,
                    bus_mv=bus,
                )
            )
    return tuple(out)


@dataclass(frozen=True)
class RaplZone:
    name: str  # intel-rapl:0, intel-rapl:0:1
    label: str | None  # package-0, core, uncore, dram, psys
    path: str  # energy_uj, absolute
    max_energy_range_uj: int | None
    unreadable: str | None  # why energy_uj cannot be read (root-only since 5.10), None when it reads


def rapl_zones(root: RootLike) -> tuple[RaplZone, ...]:
    sr = SysRoot.of(root)
    out = []
    for name in _counter_zones(sr):
        d = f"{POWERCAP_DIR}/{name}"
        path = str(sr.path(f"{d}/energy_uj"))
        err = read_errno(path)
        reason = None
        if err in (errno.EACCES, errno.EPERM):
            reason = RAPL_ROOT_ONLY
        elif err is not None:
            reason = f"energy_uj read fails: {os.strerror(err)}"
        out.append(
            RaplZone(
                name=name,
                label=sr.read_str(f"{d}/name"),
                path=path,
                max_energy_range_uj=sr.read_int(f"{d}/max_energy_range_uj", "an energy in uJ"),
                unreadable=reason,
            )
        )
    return tuple(out)


_PMIC_LINE = re.compile(
    r"^\s*(?P<rail>\S+?)_(?P<kind>[AV])\s+(?:current|volt)\(\d+\)=(?P<value>[-+0-9.eE]+|nan)[AV]\s*$"
)


def parse_pmic_adc(text: str) -> dict[str, dict[str, float]]:
    """`vcgencmd pmic_read_adc` (Raspberry Pi 5) -> {rail: {"A": amps, "V": volts}}. Lines that are not
    "<RAIL>_A current(n)=<x>A" or "<RAIL>_V volt(n)=<x>V" are ignored (EXT5V_V and BATT_V have no current)."""
    rails: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        m = _PMIC_LINE.match(line)
        if m is None or m["value"] == "nan":
            continue
        rails.setdefault(m["rail"], {})[m["kind"]] = float(m["value"])
    return rails


def pmic_rails_power_w(rails: dict[str, dict[str, float]]) -> dict[str, float]:
    """Per-rail power V x A of the rails that have both (as sbc-bench's Parse_ADC_Readouts does)."""
    return {r: v["A"] * v["V"] for r, v in rails.items() if "A" in v and "V" in v}


def vcgencmd_path(root: RootLike) -> str | None:
    """The vcgencmd binary of a live Raspberry Pi; None on a fixture tree (it talks to /dev/vcio)."""
    sr = SysRoot.of(root)
    if not sr.live:
        return None
    import shutil

    return shutil.which("vcgencmd")


def read_pmic_adc(vcgencmd: str, timeout_s: float = 2.0) -> str | None:
    """One `vcgencmd pmic_read_adc` (a process spawn per sample); None when it fails."""
    import subprocess

    try:
        p = subprocess.run([vcgencmd, "pmic_read_adc"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


IIO_DIR = "sys/bus/iio/devices"


def iio_channels(root: RootLike) -> tuple[HwmonChannel, ...]:
    """Jetson INA3221 through the iio driver of JetPack 4 and older (`ina3221x`): rail_name_N and
    in_power N _input in mW (rbonghi/jetson_stats, jtop/core/power.py). JetPack 5 uses hwmon instead."""
    sr = SysRoot.of(root)
    out = []
    for dev in sr.listdir(IIO_DIR, r"iio:device\d+"):
        d = f"{IIO_DIR}/{dev}"
        name = sr.read_str(f"{d}/name")
        if name is None or not name.startswith("ina3221"):
            continue
        for rail in sr.listdir(d, r"rail_name_\d+"):
            n = int(rail.rsplit("_", 1)[1])
            label = sr.read_str(f"{d}/{rail}")
            if label in UNUSED_LABELS or not sr.exists(f"{d}/in_power{n}_input"):
                continue
            path = (str(sr.path(f"{d}/in_power{n}_input")),)
            out.append(
                HwmonChannel(
                    hwmon=dev,
                    chip=name,
                    device=sr.link_name(d),
                    channel=n,
                    label=label,
                    method="power_mw",
                    paths=path,
                    power_method="power_mw",
                    power_paths=path,
                    update_interval_ms=None,
                    shunt_resistor_uohm=None,
                    bus_mv=sr.read_int(f"{d}/in_voltage{n}_input", "a voltage in mV"),
                )
            )
    return tuple(out)
