"""PCIe links: each PCI device's negotiated and maximum link speed and width, from
/sys/bus/pci/devices/*/{current,max}_link_{speed,width} (present for PCIe devices only).

The data-stream study reports a board's PCIe links by generation and width: a link trained below what both
ends can do (an RK3399 held at 2.5 GT/s by its device tree, a card in a narrower slot) caps what storage or a
network card can stream, whatever the device's own rating.
"""

from __future__ import annotations

import re

from boardlab.model.board import PcieLink
from boardlab.platform.sysroot import RootLike, SysRoot

PCI_DEVICES = "sys/bus/pci/devices"
_SPEED = re.compile(r"(\d+(?:\.\d+)?)\s*GT/s")


def _speed_gts(text: str | None) -> float | None:
    """'5.0 GT/s PCIe' (or '5 GT/s', older kernels) -> 5.0; 'Unknown' (a link that is down) -> None."""
    m = _SPEED.search(text or "")
    return float(m[1]) if m else None


def _width(sr: SysRoot, rel: str) -> int | None:
    text = sr.read_str(rel)
    return int(text) if text and text.isdigit() and int(text) > 0 else None


def read_links(root: RootLike) -> tuple[PcieLink, ...]:
    """Every PCI device that reports a link, in address order; () where there is no PCI bus."""
    sr = SysRoot.of(root)
    links = []
    for addr in sorted(sr.listdir(PCI_DEVICES)):
        d = f"{PCI_DEVICES}/{addr}"
        if not sr.exists(f"{d}/current_link_speed"):
            continue  # conventional PCI, or a kernel that does not expose the link
        links.append(
            PcieLink(
                address=addr,
                vendor=sr.read_str(f"{d}/vendor"),
                device=sr.read_str(f"{d}/device"),
                class_code=sr.read_str(f"{d}/class"),
                driver=sr.link_name(f"{d}/driver"),
                current_speed_gts=_speed_gts(sr.read_str(f"{d}/current_link_speed")),
                current_width=_width(sr, f"{d}/current_link_width"),
                max_speed_gts=_speed_gts(sr.read_str(f"{d}/max_link_speed")),
                max_width=_width(sr, f"{d}/max_link_width"),
            )
        )
    return tuple(links)
