"""UM24C / UM25C / UM34C USB meters: the 130-byte big-endian record the meter sends after a 0xF0 request.

Layout as documented by rdserialtool (rfinnie/rdserialtool, rdserial/um/__init__.py): start marker, volts,
amps, watts (mW), temperatures, the selected data group, ten data groups (mAh, mWh), data-line volts,
charging mode, the recording (mAh, mWh, threshold, seconds, active), screen settings, load resistance,
the selected screen and the end marker 0xFFF1. The UM25C reports volts in mV and amps in 0.1 mA; the UM24C
and UM34C in 10 mV and mA.

Decoding keeps the raw integers, so `encode(decode(b)) == b` for every well-formed record (byte-exact).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, fields
from typing import Any

REQUEST = b"\xf0"  # "send one record"
RECORD_BYTES = 130
END_MARKER = 0xFFF1
START_MARKERS = {0x0963: "UM24C", 0x09C9: "UM25C", 0x0D4C: "UM34C"}
_HEAD = struct.Struct(">HHHIHHH")  # start, volts, amps, watts, temp C, temp F, data group
_GROUPS = struct.Struct(">" + "II" * 10)
_TAIL = struct.Struct(
    ">HHHIIHIHHHIHH"
)  # d+, d-, mode, rec mAh, rec mWh, thr, rec s, active, timeout, bright, res, screen, end


@dataclass(frozen=True)
class Record:
    """One meter record, raw integers as sent; properties give SI values."""

    start: int
    volts_raw: int
    amps_raw: int
    power_mw: int
    temp_c: int
    temp_f: int
    data_group: int
    groups: tuple[tuple[int, int], ...]  # ten (mAh, mWh)
    data_plus_cv: int  # centivolts
    data_minus_cv: int
    charging_mode: int
    record_mah: int
    record_mwh: int
    record_threshold_ca: int  # centiamps
    record_s: int
    recording: int
    screen_timeout_min: int
    brightness: int
    resistance_dohm: int  # 0.1 ohm
    screen: int
    end: int

    @property
    def model(self) -> str:
        return START_MARKERS.get(self.start, f"unknown (start 0x{self.start:04x})")

    @property
    def _mult(self) -> int:
        return 10 if self.start == 0x09C9 else 1  # UM25C: one more decimal on volts and amps

    @property
    def voltage_v(self) -> float:
        return self.volts_raw / (100 * self._mult)

    @property
    def current_a(self) -> float:
        return self.amps_raw / (1000 * self._mult)

    @property
    def power_w(self) -> float:
        return self.power_mw / 1000

    @property
    def power_resolution_w(self) -> float:
        return 0.001


def decode(data: bytes) -> Record:
    if len(data) != RECORD_BYTES:
        raise ValueError(f"a UM meter record has {RECORD_BYTES} bytes, got {len(data)}")
    head = _HEAD.unpack_from(data, 0)
    g = _GROUPS.unpack_from(data, 16)
    t = _TAIL.unpack_from(data, 96)
    if t[-1] != END_MARKER:
        raise ValueError(f"record end marker 0x{t[-1]:04x}, expected 0x{END_MARKER:04x}: out of step")
    wire = (*head, tuple((g[i], g[i + 1]) for i in range(0, 20, 2)), *t)
    return Record(*wire)  # Record declares its fields in the record's byte order


def encode(r: Record) -> bytes:
    """The bytes a meter sends for `r` (the meter simulator in the tests speaks through this)."""
    wire = [getattr(r, f.name) for f in fields(Record)]  # in the record's byte order
    head, groups, tail = wire[:7], wire[7], wire[8:]
    out = _HEAD.pack(*head) + _GROUPS.pack(*(x for pair in groups for x in pair)) + _TAIL.pack(*tail)
    assert len(out) == RECORD_BYTES
    return out


def um25c_record(voltage_v: float, current_a: float, **fields) -> Record:
    """A UM25C record for a reading (volts in mV, amps in 0.1 mA, watts in mW, as the meter rounds)."""
    base: dict[str, Any] = dict(
        start=0x09C9,
        volts_raw=round(voltage_v * 1000),
        amps_raw=round(current_a * 10000),
        power_mw=round(voltage_v * current_a * 1000),
        temp_c=25,
        temp_f=77,
        data_group=0,
        groups=((0, 0),) * 10,
        data_plus_cv=0,
        data_minus_cv=0,
        charging_mode=0,
        record_mah=0,
        record_mwh=0,
        record_threshold_ca=10,
        record_s=0,
        recording=0,
        screen_timeout_min=0,
        brightness=5,
        resistance_dohm=0,
        screen=0,
        end=END_MARKER,
    )
    base.update(fields)
    return Record(**base)
