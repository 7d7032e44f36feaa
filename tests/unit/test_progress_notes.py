"""A campaign's notes on a terminal are wrapped to its width, whole words and paths kept; in a pipe or log
each stays one line (grep finds it whole)."""

from __future__ import annotations

import io

from boardlab.cli.progress import TerminalProgress

REASON = (
    "energy: unsupported: no power source (hwmon: unsupported: no hwmon power, energy or V x I channel under "
    "/sys/class/hwmon and no INA3221 iio device under /sys/bus/iio/devices; rapl: unsupported: no powercap "
    "zone under /sys/class/powercap; rpi-pmic: unsupported: no vcgencmd (not a Raspberry Pi))"
)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_note_on_a_terminal_is_wrapped_to_its_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = _Terminal()
    TerminalProgress(out).note(REASON)
    lines = out.getvalue().replace("\r\x1b[K", "").splitlines()  # each line clears the bar first
    assert len(lines) >= 5 and all(len(line) <= 59 for line in lines), lines
    assert all(line.startswith("  ") for line in lines[1:])  # continuation lines indented
    assert " ".join(line.strip() for line in lines) == REASON  # every word, none cut
    assert "/sys/bus/iio/devices;" in lines[2] + lines[3]  # a path stays whole on one line


def test_a_note_in_a_pipe_stays_one_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    out = io.StringIO()
    TerminalProgress(out).note(REASON)
    assert out.getvalue() == REASON + "\n"
