"""Power sources: what this board (or a meter beside it) can measure, each declaring what it measures.

A source is either an energy counter (cumulative uJ: RAPL, hwmon energy*_input) or a power reading (W: hwmon
power*_input or V x I, the Raspberry Pi 5 PMIC, a meter). Its scope says what it covers: `wall` (the supply,
conversion losses included), `board` (the board's input), `package` (the SoC package, RAPL) or `rail` (one
rail, or a sum of rails that is not the whole board). `measured` is False for a model's estimate; every
source here measures.

Every file read goes through `boardlab.platform.power`; `discover` only resolves paths and the platform
layer reads them raw at each tick.
"""

from __future__ import annotations

import collections
import dataclasses
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from boardlab.platform import power
from boardlab.platform.sysroot import RootLike, SysRoot

KINDS = ("energy-counter", "power-reading")
SCOPES = ("wall", "board", "package", "rail")
SCOPE_RANK = {s: i for i, s in enumerate(SCOPES)}  # the widest scope is the primary source
RAPL_UPDATE_S = 0.001  # RAPL updates its counters about every millisecond (Intel SDM; codecarbon#322)


@dataclass(frozen=True)
class PowerSourceSpec:
    name: str
    kind: str  # energy-counter | power-reading
    scope: str  # wall | board | package | rail
    unit: str  # what the raw reading is in: uJ, uW, mV*mA, W
    update_interval_s: float | None  # how often the sensor produces a new value; None = unknown
    resolution: float | None  # the smallest step, in resolution_unit; None = unknown
    resolution_unit: str  # W or J
    measured: bool  # False = a model's estimate
    label: str | None = None
    rails: tuple[str, ...] = ()  # the rails a sum covers
    note: str | None = None  # what it leaves out (the Pi 5 PMIC: the 5 V input)
    max_range: int | None = None  # a counter's wrap, in unit

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rails"] = list(self.rails)
        return d


@dataclass(frozen=True)
class Unavailable:
    name: str
    reason: str  # "unsupported: ..."

    def to_dict(self) -> dict:
        return {"name": self.name, "reason": self.reason}


class Source:
    """Pull source: `read()` returns the current raw value (counter uJ as int, or power in W)."""

    spec: PowerSourceSpec
    push = False

    def read(self) -> float | None:  # pragma: no cover - interface
        raise NotImplementedError

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass


class HwmonSource(Source):
    """One or more hwmon channels read together: a counter sum (all energy*_input) or a power sum in W."""

    def __init__(self, spec: PowerSourceSpec, channels: tuple[power.HwmonChannel, ...]):
        self.spec = spec
        self.channels = channels

    def read(self) -> float | None:
        total = 0.0
        for ch in self.channels:
            if ch.method == "vi":
                mv = power.read_raw_int(ch.paths[0])
                ma = power.read_raw_int(ch.paths[1])
                if mv is None or ma is None:
                    return None
                total += mv * ma / 1e6
            else:
                v = power.read_raw_int(ch.paths[0])
                if v is None:
                    return None
                total += v if ch.method == "energy" else v / 1e3 if ch.method == "power_mw" else v / 1e6
        return total


class RaplSource(Source):
    def __init__(self, spec: PowerSourceSpec, path: str):
        self.spec = spec
        self.path = path

    def read(self) -> int | None:
        return power.read_raw_int(self.path)


class PmicSource(Source):
    """Raspberry Pi 5: `vcgencmd pmic_read_adc`, V x A summed over the rails (one process per sample)."""

    def __init__(self, spec: PowerSourceSpec, reader: Callable[[], str | None]):
        self.spec = spec
        self.reader = reader

    def read(self) -> float | None:
        text = self.reader()
        if not text:
            return None
        rails = power.pmic_rails_power_w(power.parse_pmic_adc(text))
        return sum(rails.values()) if rails else None


def parse_meter_line(line: str) -> tuple[float | None, float] | None:
    """The meter-command line protocol: "<unix_time_s> <watts>" (tab or spaces), or "<watts>" alone (stamped
    on arrival). Anything else (headers, blank lines) -> None."""
    fields = line.replace(",", " ").split()
    try:
        if len(fields) == 2:
            return float(fields[0]), float(fields[1])
        if len(fields) == 1:
            return None, float(fields[0])
    except ValueError:
        return None
    return None


class CommandMeter(Source):
    """Any meter with a CLI: a command that prints one "<unix_time_s> <watts>" line per reading. The command
    is started once, in its own process group, and stopped by its PID at the end."""

    push = True

    def __init__(self, spec: PowerSourceSpec, argv: list[str]):
        self.spec = spec
        self.argv = argv
        self.proc: subprocess.Popen | None = None
        self._q: collections.deque = collections.deque()
        self._thread: threading.Thread | None = None
        self.skipped_lines = 0

    def open(self) -> None:
        from boardlab.platform.spawn import spawn

        # its own process group, killed with boardlab (PR_SET_PDEATHSIG), stopped by its PID in close()
        self.proc = spawn(self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._thread = threading.Thread(target=self._pump, name="boardlab-meter-cmd", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            now_ns = time.monotonic_ns()
            parsed = parse_meter_line(raw.decode(errors="replace"))
            if parsed is None:
                self.skipped_lines += 1
                continue
            unix_s, watts = parsed
            if unix_s is None:
                t_ns = now_ns
            else:  # the meter's wall clock onto CLOCK_MONOTONIC
                t_ns = now_ns - round((time.time() - unix_s) * 1e9)
            self._q.append((t_ns, watts))

    def drain(self) -> list[tuple[int, float]]:
        out = []
        while self._q:
            out.append(self._q.popleft())
        return out

    def close(self) -> None:
        if self.proc is None:
            return
        from boardlab.platform.spawn import stop_group

        if self.proc.poll() is None:
            stop_group(self.proc, first=signal.SIGTERM)
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SerialMeter(Source):
    """UM24C/UM25C/UM34C-class USB meter on a serial port (USB serial, Bluetooth rfcomm, or a pty): 0xF0 ->
    one 130-byte record. Needs pyserial (the `meter` extra)."""

    def __init__(self, spec: PowerSourceSpec, port: str, baud: int = 9600):
        self.spec = spec
        self.port = port
        self.baud = baud
        self.ser: Any = None  # a serial.Serial once open (pyserial is imported only then)
        self.last_record: Any = None  # the meter's last um25c.Record

    def open(self) -> None:
        import serial  # pyserial

        self.ser = serial.Serial(self.port, self.baud, timeout=1.0)
        self.ser.reset_input_buffer()

    def read(self) -> float | None:
        from boardlab.energy import um25c

        assert self.ser is not None
        self.ser.write(um25c.REQUEST)
        data = self.ser.read(um25c.RECORD_BYTES)
        if len(data) != um25c.RECORD_BYTES:
            return None
        try:
            self.last_record = um25c.decode(data)
        except ValueError:
            self.ser.reset_input_buffer()  # out of step: resynchronise on the next request
            return None
        return self.last_record.power_w

    def close(self) -> None:
        if self.ser is not None:
            self.ser.close()


@dataclass(frozen=True)
class MeterConfig:
    """External meters from a plan's [energy] table (or `boardlab info --meter-*`)."""

    command: tuple[str, ...] = ()
    command_scope: str = "wall"
    command_interval_s: float = 1.0
    serial: str | None = None
    serial_scope: str = "board"
    serial_interval_s: float = 0.5
    serial_baud: int = 9600


@dataclass
class Discovery:
    sources: list[Source] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)
    rails: list[PowerSourceSpec] = field(default_factory=list)  # single channels, listed, not sampled

    @property
    def specs(self) -> list[PowerSourceSpec]:
        return [s.spec for s in self.sources]

    @property
    def reason(self) -> str:
        """Why there is no energy here (when `sources` is empty)."""
        why = "; ".join(f"{u.name}: {u.reason}" for u in self.unavailable)
        return "unsupported: no power source" + (f" ({why})" if why else "")

    def primary(self, name: str | None = None) -> Source | None:
        if name:
            return next((s for s in self.sources if s.spec.name == name), None)
        if not self.sources:
            return None
        return min(
            self.sources,
            key=lambda s: (SCOPE_RANK[s.spec.scope], not s.spec.measured, s.spec.kind != "energy-counter"),
        )


def _hwmon_resolution_w(ch: power.HwmonChannel) -> float | None:
    lsb = power.CHIP_LSB.get(ch.chip or "")
    if lsb is None or not ch.shunt_resistor_uohm or ch.bus_mv is None:
        return None
    return (lsb[0] / (ch.shunt_resistor_uohm * 1e-6)) * (ch.bus_mv / 1000)  # current LSB x bus voltage


def _hwmon_interval(chs) -> float | None:
    vals = [c.update_interval_ms for c in chs if c.update_interval_ms]
    return max(vals) / 1000 if vals else None


def _kind(c: power.HwmonChannel) -> str:
    return "iio" if c.method == "power_mw" else "hwmon"


def _hwmon_spec(name: str, chs, scope: str, label: str | None, note: str | None = None) -> PowerSourceSpec:
    counter = all(c.method == "energy" for c in chs)
    res = [_hwmon_resolution_w(c) for c in chs]
    units = {"energy": "uJ", "power": "uW", "vi": "mV*mA", "power_mw": "mW"}
    return PowerSourceSpec(
        name=name,
        kind="energy-counter" if counter else "power-reading",
        scope=scope,
        unit="+".join(sorted({units[c.method] for c in chs})),
        update_interval_s=_hwmon_interval(chs),
        resolution=(1e-6 if counter else _sum_or_none(res)),
        resolution_unit="J" if counter else "W",
        measured=True,
        label=label,
        rails=tuple(c.label or f"{c.hwmon}/{c.channel}" for c in chs),
        note=note,
    )


def discover(
    root: RootLike,
    compatible: tuple[str, ...] = (),
    meters: MeterConfig | None = None,
    *,
    pmic_reader: Callable[[], str | None] | None = None,
) -> Discovery:
    """Every power source of the board under `root`, plus configured meters; what is missing, with why."""
    sr = SysRoot.of(root)
    if not compatible:
        compat = sr.read_text("proc/device-tree/compatible")
        compatible = tuple(c for c in (compat or "").split("\0") if c)
    d = Discovery()

    _hwmon_sources(sr, compatible, d)
    _rapl_sources(sr, d)
    _pmic_source(sr, pmic_reader, d)
    _meter_sources(meters or MeterConfig(), d)
    return d


def _hwmon_sources(sr: SysRoot, compatible: tuple[str, ...], d: Discovery) -> None:
    """hwmon and INA3221 iio channels: each board input a source, the rails one summed source, every channel
    a rail of its own in `d.rails`."""
    chans = power.hwmon_channels(sr, compatible) + power.iio_channels(sr)
    inputs = [c for c in chans if (c.label or "") in power.INPUT_RAIL_LABELS]
    rails = [c for c in chans if c not in inputs]
    if rails and not all(c.method == "energy" for c in rails):
        # a sum is one kind: counters that can also be read as a power join the power sum, the others
        # (energy-only channels) become counter sources of their own
        for c in [c for c in rails if c.method == "energy" and c.power_method is None]:
            rails.remove(c)
            d.sources.append(
                HwmonSource(_hwmon_spec(f"hwmon:{c.label or c.hwmon}", (c,), "rail", c.label), (c,))
            )
        rails = [
            dataclasses.replace(c, method=c.power_method or c.method, paths=c.power_paths)
            if c.method == "energy"
            else c
            for c in rails
        ]
    for c in chans:
        d.rails.append(
            _hwmon_spec(
                f"{_kind(c)}:{c.hwmon}/{c.channel}", (c,), "board" if c in inputs else "rail", c.label
            )
        )
    for c in inputs:
        d.sources.append(HwmonSource(_hwmon_spec(f"{_kind(c)}:{c.label}", (c,), "board", c.label), (c,)))
    if rails:
        kind = _kind(rails[0])
        name = f"{kind}:rails" if len(rails) > 1 else f"{kind}:{rails[0].label or rails[0].hwmon}"
        label = f"sum of {len(rails)} rails" if len(rails) > 1 else rails[0].label
        note = "rails only: the rest of the board is not measured" + (
            "; the board input is measured by " + ", ".join(f"{_kind(c)}:{c.label}" for c in inputs)
            if inputs
            else ""
        )
        d.sources.append(HwmonSource(_hwmon_spec(name, tuple(rails), "rail", label, note), tuple(rails)))
    if not chans:
        d.unavailable.append(
            Unavailable(
                "hwmon",
                f"unsupported: no hwmon power, energy or V x I channel under {sr.show(power.HWMON_DIR)} "
                f"and no INA3221 iio device under {sr.show(power.IIO_DIR)}",
            )
        )


def _rapl_sources(sr: SysRoot, d: Discovery) -> None:
    """One energy-counter source per readable powercap (RAPL) zone."""
    zones = power.rapl_zones(sr)
    for z in zones:
        if z.unreadable:
            d.unavailable.append(Unavailable(f"rapl:{z.name}", f"unsupported: {z.unreadable}"))
            continue
        top = z.name.count(":") == 1
        scope = "board" if z.label == "psys" else ("package" if top else "rail")
        d.sources.append(
            RaplSource(
                PowerSourceSpec(
                    name=f"rapl:{z.label or z.name}" + ("" if top else f"@{z.name}"),
                    kind="energy-counter",
                    scope=scope,
                    unit="uJ",
                    update_interval_s=RAPL_UPDATE_S,
                    resolution=1e-6,
                    resolution_unit="J",
                    measured=True,
                    label=z.label,
                    max_range=z.max_energy_range_uj,
                ),
                z.path,
            )
        )
    if not zones:
        d.unavailable.append(
            Unavailable("rapl", f"unsupported: no powercap zone under {sr.show(power.POWERCAP_DIR)}")
        )


def _pmic_source(sr: SysRoot, pmic_reader: Callable[[], str | None] | None, d: Discovery) -> None:
    """A Raspberry Pi 5's PMIC rails through vcgencmd (or the reader a test gives)."""
    vcgencmd = power.vcgencmd_path(sr)
    reader = pmic_reader
    if reader is None and vcgencmd:
        first = power.read_pmic_adc(vcgencmd)
        if first and power.pmic_rails_power_w(power.parse_pmic_adc(first)):
            reader = lambda: power.read_pmic_adc(vcgencmd)  # noqa: E731
        else:
            d.unavailable.append(
                Unavailable("rpi-pmic", "unsupported: vcgencmd pmic_read_adc gives no rail (not a Pi 5)")
            )
    if reader is not None:
        sample = reader() or ""
        rails_w = power.pmic_rails_power_w(power.parse_pmic_adc(sample))
        d.sources.append(
            PmicSource(
                _watts(
                    "rpi-pmic",
                    "rail",
                    None,  # converts on request; a sample costs a process spawn
                    None,
                    f"sum of {len(rails_w)} PMIC rails",
                    rails=tuple(rails_w),
                    note=power.PMIC_EXCLUDES,
                ),
                reader,
            )
        )
    elif vcgencmd is None and sr.live:
        d.unavailable.append(Unavailable("rpi-pmic", "unsupported: no vcgencmd (not a Raspberry Pi)"))


def _meter_sources(m: MeterConfig, d: Discovery) -> None:
    """The configured external meters: a command that prints watts, a USB meter on a serial port."""
    if m.command:
        spec = _watts("meter-cmd", m.command_scope, m.command_interval_s, None, " ".join(m.command))
        d.sources.append(CommandMeter(spec, list(m.command)))
    if m.serial:
        try:
            import serial  # noqa: F401
        except ImportError:
            d.unavailable.append(
                Unavailable(
                    "meter-serial", "unsupported: pyserial is not installed: pip install 'boardlab[meter]'"
                )
            )
        else:
            label = f"UM-class USB meter on {m.serial}"
            spec = _watts("meter-serial", m.serial_scope, m.serial_interval_s, 0.001, label)
            d.sources.append(SerialMeter(spec, m.serial, m.serial_baud))


def _watts(
    name: str,
    scope: str,
    update_interval_s: float | None,
    resolution_w: float | None,
    label: str,
    *,
    rails: tuple[str, ...] = (),
    note: str | None = None,
) -> PowerSourceSpec:
    """A measured power reading that comes in watts: the Pi's PMIC sum, an external meter."""
    return PowerSourceSpec(
        name=name,
        kind="power-reading",
        scope=scope,
        unit="W",
        update_interval_s=update_interval_s,
        resolution=resolution_w,
        resolution_unit="W",
        measured=True,
        label=label,
        rails=rails,
        note=note,
    )


def _sum_or_none(values: list[float | None]) -> float | None:
    """The sum of the channels' resolutions, None when any is unknown."""
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)
