"""A devfreq device (the memory controller, a bus) fixed at one frequency for a run, or only recorded.

```toml
[[conditions]]
name = "dmc-825"
kind = "devfreq"
params = { device = "10c20000.memory-controller", frequency_hz = 825000000 }   # or "max", "min", "record"
```

Fixing writes min_freq and max_freq to the frequency (through the restore journal, in the order that never
crosses them), which every devfreq governor obeys; "record" changes nothing. Either way the run records
the device's governor and cur_freq before and after: the memory bus frequency changes memory latency, and
the snoop sweep of the governor study keeps it fixed and reported.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.platform import devfreq


@dataclass(frozen=True)
class DevfreqParams:
    device: str = param(
        "str",
        None,
        required=True,
        help="a name under /sys/class/devfreq (see `boardlab info`)",
    )
    frequency_hz: int | str = param(  # Hz, or "max", "min", "record"
        "int",
        "record",
        min=1,
        unit="Hz",
        words=("max", "min", "record"),
        help="a frequency the device offers, its max or min, or record (only record it)",
    )


def _target(frequency, freqs: tuple[int, ...]) -> int | None:
    if frequency == "record":
        return None
    if frequency == "max":
        return max(freqs)
    if frequency == "min":
        return min(freqs)
    return int(frequency)


class Devfreq(DeclaredKind[DevfreqParams]):
    name = "devfreq"
    summary = "a devfreq device (memory controller, bus) fixed at one frequency, or its frequency recorded"

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        if not info.devfreq:
            return "the kernel exposes no devfreq device (/sys/class/devfreq is empty or missing)", ()
        limits = [f"devices here: {', '.join(d.name for d in info.devfreq)}"]
        if info.live and os.geteuid() != 0:
            limits.append("a frequency_hz other than record writes min_freq/max_freq: needs root")
        return None, tuple(limits)

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        p = self.typed(params)
        names = devfreq.list_devices(ctx.root)
        if p.device not in names:
            return (f"unsupported: no devfreq device {p.device!r}; devices here: "
                    f"{', '.join(names) or '(none: the kernel exposes no devfreq)'}")  # fmt: skip
        dev = devfreq.read_device(ctx.root, p.device)
        f = p.frequency_hz
        if f == "record":
            return None
        if not dev.frequencies_hz:
            return f"{dev.name} publishes no available_frequencies: its frequency cannot be chosen"
        target = _target(f, dev.frequencies_hz)
        if target not in dev.frequencies_hz:
            return f"{dev.name} does not offer {target} Hz; valid: {', '.join(map(str, dev.frequencies_hz))}"
        for attr in ("min_freq", "max_freq"):
            rel = f"{devfreq.DEVFREQ_DIR}/{dev.name}/{attr}"
            if not ctx.root.writable(rel):
                return ctx.not_writable(rel)
        return None

    @contextlib.contextmanager
    def applied(self, p: DevfreqParams, ctx: ApplyContext):
        dev = devfreq.read_device(ctx.root, p.device)
        d = f"{devfreq.DEVFREQ_DIR}/{dev.name}"
        state = {"device": dev.name, "governor": dev.governor, "cur_hz_before": dev.cur_hz}
        target = _target(p.frequency_hz, dev.frequencies_hz)
        tokens: list[str] = []
        try:
            if target is not None:
                # raise max first when going up, lower min first when going down: never min > max
                order = (
                    ("max_freq", "min_freq")
                    if dev.max_hz is None or target >= dev.max_hz
                    else ("min_freq", "max_freq")
                )
                for attr in order:
                    tokens.append(
                        ctx.journal.set(f"{d}/{attr}", str(target), what=f"{dev.name} devfreq {attr}")
                    )
                state["fixed_hz"] = target
            state["cur_hz"] = devfreq.current_frequency_hz(ctx.root, dev.name)
            yield state
            state["cur_hz_after"] = devfreq.current_frequency_hz(ctx.root, dev.name)
        finally:
            for token in reversed(tokens):
                ctx.journal.undo(token)


KIND = Devfreq()
