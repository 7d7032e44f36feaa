"""The kernel: version strings, command line, preemption model (PREEMPT_RT) and CPU isolation."""

from __future__ import annotations

import gzip
import re
import zlib

from boardlab.errors import InputError
from boardlab.model.board import Isolation, Kernel
from boardlab.platform.sysroot import RootLike, SysRoot, parse_cpulist

ISOLCPUS_FLAGS = ("nohz", "domain", "managed_irq")


def parse_cmdline(cmdline: str) -> dict[str, str | None]:
    """Kernel parameters as a dict (the last occurrence wins); "--" ends them (the rest belongs to init).

    Double quotes group a value with spaces, as the kernel's own parser (lib/cmdline.c next_arg) does.
    """
    params: dict[str, str | None] = {}
    for token in re.findall(r'(?:[^\s"]+|"[^"]*")+', cmdline):
        if token == "--":
            break
        key, sep, value = token.partition("=")
        params[key.replace('"', "")] = value.replace('"', "") if sep else None
    return params


def parse_isolcpus(value: str, *, last_cpu: int | None = None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Splits isolcpus: "managed_irq,domain,2-3" -> (("managed_irq", "domain"), (2, 3))."""
    parts = value.split(",")
    flags = []
    while parts and parts[0] in ISOLCPUS_FLAGS:
        flags.append(parts.pop(0))
    return tuple(flags), parse_cpulist(",".join(parts), last_cpu=last_cpu)


def preempt_model(version: str | None) -> str | None:
    """From `uname -v`: "#1 SMP PREEMPT_RT ..." -> PREEMPT_RT. Old RT patches printed "PREEMPT RT"."""
    if not version:
        return None
    words = version.split()
    if "PREEMPT_RT" in words or ("PREEMPT" in words and "RT" in words):
        return "PREEMPT_RT"
    for model in ("PREEMPT_DYNAMIC", "PREEMPT"):
        if model in words:
            return model
    return "none"


def kernel_config(root: RootLike) -> dict[str, str]:
    """CONFIG_* values from /proc/config.gz (CONFIG_IKCONFIG_PROC); {} when the kernel does not carry it."""
    sr = SysRoot.of(root)
    raw = sr.read_bytes("proc/config.gz")
    if raw is None:
        return {}
    try:
        text = gzip.decompress(raw).decode("utf-8", "replace")
    except (OSError, EOFError, zlib.error):
        raise InputError(f"{sr.show('proc/config.gz')}: expected a gzip-compressed kernel config") from None
    config = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.startswith("CONFIG_"):
            config[key] = value
    return config


def read_kernel(root: RootLike) -> Kernel:
    sr = SysRoot.of(root)
    version = sr.read_str("proc/sys/kernel/version")
    proc_version = sr.read_str("proc/version")
    if version is None and proc_version:
        # /proc/version ends with uname -v: "... (gcc ...) #1 SMP PREEMPT_DYNAMIC @0".
        hash_at = proc_version.rfind(" #")
        version = proc_version[hash_at + 1 :] if hash_at >= 0 else None
    release = sr.read_str("proc/sys/kernel/osrelease")
    if release is None and proc_version and proc_version.startswith("Linux version "):
        release = proc_version.split()[2]
    config = kernel_config(sr)
    model = preempt_model(version)
    evidence = None
    if sr.read_int("sys/kernel/realtime", "0 or 1") == 1:
        evidence = f"{sr.show('sys/kernel/realtime')} = 1"
    elif model == "PREEMPT_RT":
        evidence = f"uname -v: {version}"
    elif config.get("CONFIG_PREEMPT_RT") == "y":
        evidence = "CONFIG_PREEMPT_RT=y in /proc/config.gz"
    hz = config.get("CONFIG_HZ")
    return Kernel(
        release=release,
        version=version,
        proc_version=proc_version,
        cmdline=sr.read_str("proc/cmdline"),
        preempt_model="PREEMPT_RT" if evidence else model,
        preempt_rt=evidence is not None,
        preempt_rt_evidence=evidence,
        config_hz=int(hz) if hz and hz.isdigit() else None,
        sched_rt_runtime_us=sr.read_int("proc/sys/kernel/sched_rt_runtime_us"),
        timer_migration=sr.read_int("proc/sys/kernel/timer_migration"),
    )


def read_isolation(root: RootLike, *, last_cpu: int | None = None) -> Isolation:
    """isolcpus/nohz_full/rcu_nocbs/irqaffinity from the command line and sysfs (which wins when present)."""
    sr = SysRoot.of(root)
    params = parse_cmdline(sr.read_str("proc/cmdline") or "")

    def cmdline_cpus(key: str) -> tuple[int, ...]:
        value = params.get(key)
        if not value:
            return ()
        try:
            return parse_cpulist(value, last_cpu=last_cpu)
        except ValueError as exc:
            raise InputError(
                f"{sr.show('proc/cmdline')}: {key}={value}: expected a CPU list ({exc})"
            ) from None

    flags: tuple[str, ...] = ()
    isolcpus: tuple[int, ...] = ()
    if params.get("isolcpus"):
        try:
            flags, isolcpus = parse_isolcpus(params["isolcpus"] or "", last_cpu=last_cpu)
        except ValueError as exc:
            raise InputError(
                f"{sr.show('proc/cmdline')}: isolcpus={params['isolcpus']}: "
                f"expected [nohz,domain,managed_irq,]<cpu list> ({exc})"
            ) from None
    nohz_sysfs = sr.read_cpulist("sys/devices/system/cpu/nohz_full", last_cpu=last_cpu)
    return Isolation(
        isolcpus=isolcpus,
        isolcpus_flags=flags,
        isolated=sr.read_cpulist("sys/devices/system/cpu/isolated", last_cpu=last_cpu),
        nohz_full=nohz_sysfs if nohz_sysfs is not None else cmdline_cpus("nohz_full"),
        rcu_nocbs=cmdline_cpus("rcu_nocbs"),
        irqaffinity=cmdline_cpus("irqaffinity"),
    )


# Release suffixes of vendor and board kernels (BSPs, and the board kernels built from them): TI's
# ti-linux-kernel (5.10.168-ti-r71), Rockchip's (4.4.194-rk3399), NVIDIA's L4T (4.9.253-tegra), Raspberry Pi
# OS (6.6.31+rpt-rpi-v8, 5.15.84-v7l+), Hardkernel's and Armbian's vendor branches (5.4.58-odroidxu4),
# Allwinner, NXP, Amlogic, Qualcomm, Xilinx, Android.
VENDOR_TAGS = re.compile(
    r"(?:^|[-+_.])(ti|rk\d*|rockchip|tegra|l4t|rpi|rpt|v7l?\+|v8\+|bcm\d+|sunxi|allwinner|imx\w*|odroid\w*|"
    r"meson\w*|amlogic|qcom|msm\w*|xilinx|zynq\w*|exynos\w*|android\w*|bsp|vendor|legacy)(?=$|[-+_.])",
    re.I,
)
DISTRIBUTIONS = re.compile(r"\b(Debian|Ubuntu|Fedora|Arch Linux|Alpine|openSUSE|Red Hat|Yocto|Buildroot)\b")
MAINLINE_RELEASE = re.compile(r"\d+\.\d+(\.\d+)?(-rc\d+)?")


def kernel_flavor(
    kernel: Kernel, compatible: tuple[str, ...], config: dict[str, str]
) -> tuple[str, list[str]]:
    """Whether the kernel looks like a vendor BSP, a distribution's mainline build or a plain mainline one,
    and why: ("vendor BSP" | "distribution (mainline)" | "mainline" | "unknown", the evidence). A vendor
    kernel can lag mainline by years and carry its own drivers and governors, so a figure measured on it may
    not hold on mainline (sbc-bench's first question)."""
    release, version = kernel.release or "", kernel.version or ""
    if not release:
        return "unknown", ["no kernel release was read (/proc/sys/kernel/osrelease, /proc/version)"]
    why: list[str] = []
    tag = VENDOR_TAGS.search(release.partition("-")[2] or release.partition("+")[2])
    vendors = {c.split(",")[0] for c in compatible if "," in c}
    local = (config.get("CONFIG_LOCALVERSION") or "").strip('"')
    if tag:
        why.append(f"the release {release} carries the vendor or board tag {tag.group(1)!r}")
        if vendors:
            why.append(f"the device tree names {', '.join(sorted(vendors))} ({compatible[0]})")
        if local:
            why.append(f"CONFIG_LOCALVERSION={local!r}")
        return "vendor BSP", why
    distro = DISTRIBUTIONS.search(version) or DISTRIBUTIONS.search(kernel.proc_version or "")
    if distro:
        return "distribution (mainline)", [f"the version string names {distro.group(1)}: {version}"]
    if MAINLINE_RELEASE.fullmatch(release):
        return "mainline", [f"the release {release} carries no vendor or distribution suffix"]
    suffix = release[len(m.group(0)) :] if (m := MAINLINE_RELEASE.match(release)) else release
    return "unknown", [
        f"the release {release or '?'} carries the suffix {suffix!r}, which names no vendor, board or "
        "distribution boardlab knows: a custom build"
    ]
