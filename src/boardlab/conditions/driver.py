"""A kernel driver off for a run: every device bound to the named drivers unbound, and bound again after.

```toml
[[conditions]]
name = "crypto-engine-off"
kind = "driver"
params = { drivers = ["omap-aes", "omap-sham"] }   # bus = "platform" by default
workloads = ["crypto.afalg"]
```

The satellite-computer study compares crypto with the hardware engine's driver on and off: with omap-aes and
omap-sham unbound, the kernel crypto API serves the same algorithms in software. Each unbind is written to
the restore journal first (`boardlab restore` binds the device again after a crash). A board without such a
driver, or a user who may not write `unbind` (root only), gets "unsupported" with the reason.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.errors import BoardlabError
from boardlab.platform import drivers


@dataclass(frozen=True)
class DriverParams:
    drivers: tuple[str, ...] = param(
        "list",
        None,
        required=True,
        help="kernel drivers whose devices are unbound for the run (e.g. omap-aes, omap-sham)",
    )
    bus: str = param("str", "platform", help="the bus the drivers are on (/sys/bus/BUS/drivers)")


class Driver(DeclaredKind[DriverParams]):
    name = "driver"
    summary = "the devices of kernel drivers unbound for the run (a hardware engine off), bound again after"

    def refuse(self, p: DriverParams, params: dict) -> tuple[str | None, str] | None:
        return None if p.drivers else ("drivers", "an empty list: name at least one driver")

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        p = self.typed(params)
        bus = p.bus
        present = drivers.list_drivers(ctx.root, bus)
        for name in p.drivers:
            d = drivers.driver_dir(bus, name)
            if name not in present:
                return (f"unsupported: no kernel driver {name!r} on the {bus} bus ({ctx.root.show(d)}): "
                        "this board has no such engine, or its driver is not loaded")  # fmt: skip
            if not drivers.bound_devices(ctx.root, bus, name):
                return f"unsupported: driver {name!r} has no device bound to it ({ctx.root.show(d)})"
            if not ctx.root.writable(f"{d}/unbind"):
                return f"unsupported: {ctx.not_writable(d + '/unbind')}"
        return None

    @contextlib.contextmanager
    def applied(self, p: DriverParams, ctx: ApplyContext):
        bus = p.bus
        tokens: list[str] = []
        state: dict = {"bus": bus, "unbound": []}
        try:
            for name in p.drivers:
                for device in drivers.bound_devices(ctx.root, bus, name):
                    tokens.append(ctx.journal.unbound(bus, name, device, what=f"{device} bound to {name}"))
                    state["unbound"].append({"driver": name, "device": device})
            yield state
        finally:
            failed: BoardlabError | OSError | None = None
            for token in reversed(tokens):  # every device is bound again, even past one that refuses
                try:
                    ctx.journal.undo(token)
                except (BoardlabError, OSError) as exc:  # its entry stays in the journal; raised below
                    failed = failed or exc
            if failed is not None:
                raise failed


KIND = Driver()
