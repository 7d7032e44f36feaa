"""`boardlab info`: inventory this board, say what boardlab can do here and check the environment."""

from __future__ import annotations

import shutil
import sys
import textwrap

DESCRIPTION = (
    "Inventory the board (CPUs and clusters, cpufreq, memory, kernel and isolation, thermal, power sensors), "
    "list what boardlab can do here with the reason for anything it cannot, and run the environment checks "
    "(OK / WARN / FAIL with the fix). WARN and FAIL do not change the exit status."
)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--root",
        default="/",
        metavar="DIR",
        help="read /proc and /sys below DIR instead of / (a copied tree)",
    )
    parser.add_argument("--json", action="store_true", help="print a versioned JSON document")
    parser.add_argument(
        "--clocks",
        action="store_true",
        help="measure each online CPU's clock (boardlab-kern clock.chain pinned to it, about a second each) "
        "against the one the kernel claims (cpufreq's current frequency, else /proc/cpuinfo), flag a gap "
        "over 5%%, and list each policy's operating points; on a --root tree, the claimed points only",
    )


def _flavor(info, root: str) -> dict:
    """Whether the kernel looks like a vendor BSP or mainline, and why (platform.kernel.kernel_flavor)."""
    from boardlab.platform.kernel import kernel_config, kernel_flavor

    flavor, evidence = kernel_flavor(info.kernel, tuple(info.compatible), kernel_config(root))
    return {"flavor": flavor, "evidence": evidence}


def _clocks(root: str) -> dict:
    """The claimed operating points and, on this machine (not a --root tree), each CPU's measured clock."""
    from boardlab.campaign.clocks import GAP, clock_points, opps

    here = root in ("/", "")
    points = clock_points(root, measure=here)
    return {
        "measured": here,
        "reason": None if here else f"not measured here: {root} is another board's tree",
        "gap_flagged_above": GAP,
        "opps_khz": opps(root),
        "cpus": [p.to_dict() for p in points],
    }


def render_clocks(c: dict) -> str:
    out = [
        "",
        "Clocks: claimed against measured (boardlab-kern clock.chain, one-cycle dependent adds, pinned)",
    ]
    rows = []
    for p in c["cpus"]:
        claimed = (
            f"{p['claimed_mhz']:.0f} ({p['claimed_source']})" if p["claimed_mhz"] else p["claimed_source"]
        )
        if p["measured_mhz"] is None:
            measured, gap = "not measured here", "-"
        else:
            measured = f"{p['measured_mhz']:.0f} (median {p['median_mhz']:.0f})"
            gap = "-" if p["gap"] is None else f"{p['gap']:+.1%}" + (" GAP > 5%" if p["flagged"] else "")
        rows.append(
            [
                str(p["cpu"]),
                _dash(p["policy"]),
                claimed,
                measured,
                gap + (f"; {p['note']}" if p["note"] else ""),
            ]
        )
    out += _table(["cpu", "policy", "claimed MHz", "measured MHz", "gap"], rows)
    for policy, khz in c["opps_khz"].items():
        where = "the current one measured above" if c["measured"] else "not measured here"
        points = ", ".join(f"{k / 1000:g}" for k in khz) or "none listed"
        out.append(f"  {policy} operating points (MHz): {points} ({where})")
    if c["reason"]:
        out.append(f"  {c['reason']}")
    if any(p["flagged"] for p in c["cpus"]):
        out.append(
            "  a gap over 5%: firmware capping the clock below what the kernel claims, throttling it does "
            "not show, or (a virtual machine) a host boosting past its nominal rate"
        )
    return "\n".join(out)


def run(args) -> int:
    from boardlab.energy.sources import discover
    from boardlab.platform import inventory

    info = inventory(args.root)
    flavor = _flavor(info, args.root)
    clocks = _clocks(args.root) if args.clocks else None
    # sources are only described here: a meter command is not started, vcgencmd runs once on a Pi 5
    power = discover(args.root, tuple(info.compatible))
    kern = kern_binary()
    if args.json:
        import json

        from boardlab import __version__
        from boardlab.model import SCHEMA_VERSION

        doc = {"schema": SCHEMA_VERSION, "boardlab_version": __version__, **info.to_dict(), "kern": kern}
        primary = power.primary()
        doc["power_sources"] = [
            {**s.to_dict(), "primary": primary is not None and s.name == primary.spec.name}
            for s in power.specs
        ]
        doc["power_rails"] = [s.to_dict() for s in power.rails]
        doc["power_sources_unavailable"] = [u.to_dict() for u in power.unavailable]
        doc["energy"] = {"supported": primary is not None, "reason": None if primary else power.reason}
        doc["kernel_flavor"] = flavor
        if clocks is not None:
            doc["clocks"] = clocks
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        print(render(info, power, flavor))
        print(render_kern(kern))
        if clocks is not None:
            print(render_clocks(clocks))
    return 0


def _power_sources(power, width: int) -> list[str]:
    """Every power source with what it measures; the reason when there is none (wrapped: it names why each
    kind of source is missing)."""
    out = ["", "Power sources (energy per run)"]
    primary = power.primary()
    if not power.sources:
        return out + ["  " + line for line in textwrap.wrap(power.reason, max(40, width - 2))]
    rows = []
    for s in power.specs:
        interval = "unknown" if s.update_interval_s is None else f"{s.update_interval_s * 1000:g} ms"
        res = "unknown" if s.resolution is None else f"{s.resolution:.3g} {s.resolution_unit}"
        rows.append(
            [
                s.name + (" *" if primary and s.name == primary.spec.name else ""),
                s.kind,
                s.scope,
                s.unit,
                interval,
                res,
                "measured" if s.measured else "estimated",
                "; ".join(x for x in (s.label, s.note) if x) or "-",
            ]
        )
    out += _table(["source", "kind", "scope", "unit", "update", "resolution", "measured", "covers"], rows)
    out.append("  * the primary source (widest scope): efficiency figures use it")
    out += [f"  {u.name}: {u.reason}" for u in power.unavailable]
    return out


def kern_binary() -> dict:
    """Which boardlab-kern this boardlab runs and how it was built (a board may run a cross-built one)."""
    from boardlab.errors import BoardlabError
    from boardlab.native import kern_path, kernel_catalog

    try:
        path = kern_path()
        catalog = kernel_catalog()
    except BoardlabError as exc:
        return {"path": None, "error": str(exc)}
    kernels = catalog.get("kernels", [])
    return {
        "path": str(path),
        "version": catalog.get("version"),
        "build": catalog.get("build"),  # absent from binaries older than the build record
        "kernels": len(kernels),
        "unsupported": {k["name"]: k["reason"] for k in kernels if not k["supported"]},
    }


def render_kern(kern: dict) -> str:
    out = ["", "Native kernels (boardlab-kern)"]
    if kern["path"] is None:
        return "\n".join([*out, f"  unavailable: {kern['error']}"])
    build = kern.get("build") or {}
    pairs = [
        ("binary", f"{kern['path']} (version {kern['version']})"),
        (
            "built",
            f"{build.get('compiler', '?')} {build.get('flags', '')} for {build.get('arch', '?')} "
            f"({build.get('pointer_bits', '?')}-bit{', cross-compiled' if build.get('cross') else ''})"
            if build
            else "unknown (a binary without a build record)",
        ),
        ("SIMD", " ".join(build.get("simd", [])) or "none enabled at build time"),
        ("libraries", " ".join(build.get("libraries", [])) or "-"),
        ("kernels", f"{kern['kernels'] - len(kern['unsupported'])} of {kern['kernels']} supported"),
    ]
    pairs += [(f"  {name}", f"unsupported: {why}") for name, why in kern["unsupported"].items()]
    return "\n".join(out + _pairs(pairs, shutil.get_terminal_size((110, 24)).columns))


# -- the text report --------------------------------------------------------------------------------------


def _cpus(cpus) -> str:
    from boardlab.platform import format_cpulist

    return format_cpulist(cpus) if cpus else "none"


def _mhz_list(freqs_khz) -> str:
    if not freqs_khz:
        return "-"
    mhz = [f"{f / 1000:g}" for f in freqs_khz]
    if len(mhz) <= 6:
        return " ".join(mhz) + " MHz"
    return f"{mhz[0]}..{mhz[-1]} MHz ({len(mhz)} steps)"


def _size(kib: int | None) -> str:
    if kib is None:
        return "-"
    if kib >= 1024 * 1024:
        return f"{kib / 1024 / 1024:.1f} GiB"
    if kib >= 1024:
        return f"{kib / 1024:.0f} MiB"
    return f"{kib} KiB"


def _dash(value) -> str:
    return "-" if value is None or value == "" else str(value)


def _table(headers: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    lines = []
    for row in [headers, *rows]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _pairs(pairs: list[tuple[str, str]], width: int) -> list[str]:
    key_w = max(len(k) for k, _ in pairs)
    lines = []
    for key, value in pairs:
        wrapped = textwrap.wrap(value, max(40, width - key_w - 4)) or ["-"]
        lines.append(f"  {key.ljust(key_w)}  {wrapped[0]}")
        lines.extend(f"  {'':<{key_w}}  {w}" for w in wrapped[1:])
    return lines


def _idle(idle) -> str:
    if idle is None:
        return "no cpuidle framework"
    states = "; ".join(
        f"{st.name} (exit {_dash(st.exit_latency_us)} us"
        + (f", disabled on {_cpus(st.disabled_cpus)}" if st.disabled_cpus else "")
        + f") on CPUs {_cpus(st.cpus)}"
        for st in idle.states
    )
    return f"driver {_dash(idle.driver)}, governor {_dash(idle.governor)}; {states or 'no idle states'}"


def _huge_pages(m, s) -> str:
    thp = f"THP {s.thp_enabled}" if s.thp_enabled else "THP not built"
    if m.hugepage_size_kib is None:
        return thp
    return f"{thp}; hugetlbfs {m.hugepages_total or 0} x {_size(m.hugepage_size_kib)} reserved"


def _caches(caches) -> str:
    """Names identical private caches once: "L1d 48 KiB per CPU, L3 105 MiB shared by 0-1"."""
    groups: dict[tuple, list] = {}
    for cache in caches:
        kind = {"Data": "d", "Instruction": "i"}.get(cache.type, "")
        groups.setdefault((cache.level, kind, cache.size_kib), []).append(cache.cpus)
    parts = []
    for (level, kind, size), cpu_sets in groups.items():
        name = f"L{level}{kind} {_size(size)}"
        if len(cpu_sets) > 1 and all(len(c) == 1 for c in cpu_sets):
            parts.append(f"{name} per CPU")
        else:
            parts.append(", ".join(f"{name} shared by {_cpus(c)}" for c in cpu_sets))
    return ", ".join(parts)


def _gts(speed: float | None) -> str:
    return "down" if speed is None else f"{speed:g} GT/s"


def _pcie(links) -> list[str]:
    """One row per device: the link as trained against what both ends allow, its generation and what it
    carries per direction after encoding."""
    rows = []
    for link in links:
        gen = f"gen {link.generation}" if link.generation else "-"
        width = f"x{link.current_width}" if link.current_width else "-"
        maximum = f"{_gts(link.max_speed_gts)} x{link.max_width or '-'}"
        rate = f"{link.data_bit_s / 1e9:.1f} Gbit/s" if link.data_bit_s else "-"
        ident = f"{_dash(link.vendor)}:{_dash(link.device)} class {_dash(link.class_code)}"
        rows.append([link.address, ident, _dash(link.driver),
                     f"{_gts(link.current_speed_gts)} {width} ({gen})",
                     maximum + (" (trained below)" if link.degraded else ""), rate])  # fmt: skip
    return _table(["device", "id", "driver", "link", "max", "data per direction"], rows)


def render(info, power=None, flavor: dict | None = None) -> str:
    """The inventory as the terminal shows it: one part per section, each a list of lines."""
    width = shutil.get_terminal_size((110, 24)).columns
    out: list[str] = [f"boardlab info (root {info.root})", ""]
    out += _identity(info, width)
    out += ["", "Clusters", *_clusters(info, width)]
    out += ["", "Memory", *_memory(info, width)]
    out += ["", "Kernel and isolation", *_kernel(info, flavor, width)]
    out += ["", "Thermal", *_thermal(info, width)]
    out += ["", "PCIe"]
    out += (
        _pcie(info.pcie_links) if info.pcie_links else ["  no PCIe link (no /sys/bus/pci device reports one)"]
    )
    out += ["", "Power", *_power(info)]
    if power is not None:
        out += _power_sources(power, width)
    out += ["", "Capabilities"]
    out += _pairs(
        [(name, "yes" if cap.supported else f"no: {cap.reason}") for name, cap in info.capabilities.items()],
        width,
    )
    out += ["", "Checks", *_checks(info, width)]
    return "\n".join(out)


def _identity(info, width: int) -> list[str]:
    v = info.virtualization
    virtualized = (
        f"yes ({v.hypervisor or 'hypervisor unnamed'}): {'; '.join(v.evidence)}" if v.virtualized else "no"
    )
    return [
        "Identity",
        *_pairs(
            [
                ("model", _dash(info.model)),
                ("compatible", " ".join(info.compatible) or "-"),
                ("machine", _dash(info.machine)),
                ("hostname", _dash(info.hostname)),
                ("CPUs", f"{len(info.online_cpus)} online ({_cpus(info.online_cpus)}) of {len(info.cpus)}"),
                ("virtualized", virtualized),
            ],
            width,
        ),
    ]


def _clusters(info, width: int) -> list[str]:
    out: list[str] = []
    rows = []
    for c in info.clusters:
        core = c.name + (f" ({c.midr_part})" if c.midr_part else "")
        rows.append(
            [
                str(c.id),
                _cpus(c.cpus),
                core,
                _dash(c.capacity),
                _dash(c.policy),
                _dash(c.driver),
                _dash(c.governor),
                _mhz_list(c.frequencies_khz),
                "-" if c.transition_latency_ns is None else f"{c.transition_latency_ns / 1000:g} us",
            ]
        )
    out += _table(
        ["id", "cpus", "core", "capacity", "policy", "driver", "governor", "frequencies", "latency"], rows
    )
    for c in info.clusters:
        if len(c.governors) > 0:
            out.append(f"  cluster {c.id} governors: {' '.join(c.governors)}")
    for c in info.clusters:
        if c.extensions:
            out.append(f"  cluster {c.id} extensions: {' '.join(c.extensions)}")
    if info.caches:
        out += _pairs([("caches", _caches(info.caches))], width)
    if info.devfreq:
        out += ["", "Devfreq"]
        out += _table(
            ["device", "kind", "governor", "frequencies", "current"],
            [
                [
                    d.name,
                    d.kind,
                    _dash(d.governor),
                    _mhz_list([f // 1000 for f in d.frequencies_hz]),
                    "-" if d.cur_hz is None else f"{d.cur_hz / 1e6:g} MHz",
                ]
                for d in info.devfreq
            ],
        )
    return out


def _memory(info, width: int) -> list[str]:
    m = info.memory
    s = info.system
    swap = "none"
    if m.swap_total_kib:
        swap = f"{_size(m.swap_total_kib)} ({', '.join(d.name for d in m.swap_devices) or 'unnamed'})"
    return _pairs(
        [
            ("total", _size(m.mem_total_kib)),
            ("available", _size(m.mem_available_kib)),
            ("swap", swap),
            ("huge pages", _huge_pages(m, s)),
        ],
        width,
    )


def _kernel(info, flavor: dict | None, width: int) -> list[str]:
    k = info.kernel
    s = info.system
    iso = info.isolation
    return _pairs(
        [
            ("release", _dash(k.release)),
            ("version", _dash(k.version)),
            *([("looks like", f"{flavor['flavor']}: {'; '.join(flavor['evidence'])}")] if flavor else []),
            (
                "preemption",
                f"{_dash(k.preempt_model)}" + (f" ({k.preempt_rt_evidence})" if k.preempt_rt else ""),
            ),
            ("HZ", _dash(k.config_hz)),
            ("cmdline", _dash(k.cmdline)),
            (
                "isolated",
                _cpus(iso.isolated_cpus)
                + (f" (isolcpus flags: {','.join(iso.isolcpus_flags)})" if iso.isolcpus_flags else ""),
            ),
            ("nohz_full", _cpus(iso.nohz_full)),
            ("rcu_nocbs", _cpus(iso.rcu_nocbs)),
            (
                "RT budget",
                "-" if k.sched_rt_runtime_us is None else f"sched_rt_runtime_us {k.sched_rt_runtime_us}",
            ),
            ("clocksource", f"{_dash(s.clocksource)} (available: {' '.join(s.clocksources) or '-'})"),
            ("ASLR", f"randomize_va_space {_dash(s.aslr)}"),
            (
                "load",
                "-" if s.load_1min is None else f"{s.load_1min:.2f} {s.load_5min:.2f} {s.load_15min:.2f}",
            ),
            ("cpuidle", _idle(info.cpuidle)),
            ("perf", _perf(info.perf)),
        ],
        width,
    )


def _perf(p) -> str:
    """The CPU PMUs and, per probed hardware event, whether it opened here or why not."""
    pmus = ", ".join(p.core_pmus) or "no CPU PMU"
    events = [
        f"{e.name} " + ("counts" if e.opened else "not tried" if e.opened is None else f"no: {e.reason}")
        for e in p.events
    ]
    return "; ".join([pmus, *events]) if p.events and any(e.opened is not None for e in p.events) else pmus


def _thermal(info, width: int) -> list[str]:
    if not info.thermal_zones:
        return ["  no thermal zone"]
    rows = []
    for z in info.thermal_zones:
        trips = " ".join(f"{t.type}@{t.temp_mc / 1000:g}" for t in z.trips if t.temp_mc is not None)
        temp = "-" if z.temp_mc is None else f"{z.temp_mc / 1000:.1f} C"
        rows.append([z.name, _dash(z.type), temp, trips or "-"])
    out = _table(["zone", "type", "temp", "trip points (C)"], rows)
    cooling = [f"{d.type} {d.cur_state}/{d.max_state}" for d in info.cooling_devices]
    if cooling:
        out += _pairs([("cooling", ", ".join(cooling))], width)
    return out


def _power(info) -> list[str]:
    if not (info.power_sensors or info.powercap):
        return ["  no power or energy sensor"]
    rows = []
    for p in info.power_sensors:
        values = ", ".join(f"{i.attribute} {_dash(i.value)} {i.unit}" for i in p.inputs)
        rows.append([p.name, _dash(p.chip), _dash(p.device), _dash(p.label), values])
    for z in info.powercap:
        rows.append([z.name, "powercap", "-", _dash(z.zone), f"energy_uj {_dash(z.energy_uj)} uJ"])
    return _table(["sensor", "chip", "device", "measures", "inputs"], rows)


def _checks(info, width: int) -> list[str]:
    out: list[str] = []
    name_w = max((len(c.name) for c in info.checks), default=8)
    text_w = max(40, width - name_w - 10)
    for c in info.checks:
        lines = textwrap.wrap(c.detail, text_w) or [""]
        out.append(f"  {c.status:<4}  {c.name:<{name_w}}  {lines[0]}")
        out.extend(f"  {'':<4}  {'':<{name_w}}  {line}" for line in lines[1:])
        if c.fix and c.status != "OK":
            fix = textwrap.wrap("fix: " + c.fix, text_w)
            out.extend(f"  {'':<4}  {'':<{name_w}}  {line}" for line in fix)
    counts = {s: sum(1 for c in info.checks if c.status == s) for s in ("OK", "WARN", "FAIL")}
    out += ["", f"  {counts['OK']} OK, {counts['WARN']} WARN, {counts['FAIL']} FAIL"]
    return out
