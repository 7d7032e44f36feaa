"""CPUs: identity from /proc/cpuinfo (MIDR decoding on ARM), topology, online set, caches and clusters."""

from __future__ import annotations

import os

from boardlab.errors import InputError
from boardlab.model.board import Cache, Cluster, CpuCore, CpufreqPolicy
from boardlab.platform.sysroot import RootLike, SysRoot

CPU_DIR = "sys/devices/system/cpu"

# MIDR implementer -> (vendor, {part -> core name}). Parts from the ARM TRMs and the kernel's
# arch/arm64/include/asm/cputype.h; the names are those lscpu prints.
MIDR_PARTS: dict[int, tuple[str, dict[int, str]]] = {
    0x41: (
        "ARM",
        {
            0xB02: "ARM11 MPCore",
            0xB36: "ARM1136",
            0xB56: "ARM1156",
            0xB76: "ARM1176",
            0xC05: "Cortex-A5",
            0xC07: "Cortex-A7",
            0xC08: "Cortex-A8",
            0xC09: "Cortex-A9",
            0xC0D: "Cortex-A17",  # first released as Cortex-A12
            0xC0E: "Cortex-A17",
            0xC0F: "Cortex-A15",
            0xC14: "Cortex-R4",
            0xC15: "Cortex-R5",
            0xC17: "Cortex-R7",
            0xC18: "Cortex-R8",
            0xD01: "Cortex-A32",
            0xD02: "Cortex-A34",
            0xD03: "Cortex-A53",
            0xD04: "Cortex-A35",
            0xD05: "Cortex-A55",
            0xD06: "Cortex-A65",
            0xD07: "Cortex-A57",
            0xD08: "Cortex-A72",
            0xD09: "Cortex-A73",
            0xD0A: "Cortex-A75",
            0xD0B: "Cortex-A76",
            0xD0C: "Neoverse-N1",
            0xD0D: "Cortex-A77",
            0xD0E: "Cortex-A76AE",
            0xD13: "Cortex-R52",
            0xD40: "Neoverse-V1",
            0xD41: "Cortex-A78",
            0xD42: "Cortex-A78AE",
            0xD43: "Cortex-A65AE",
            0xD44: "Cortex-X1",
            0xD46: "Cortex-A510",
            0xD47: "Cortex-A710",
            0xD48: "Cortex-X2",
            0xD49: "Neoverse-N2",
            0xD4A: "Neoverse-E1",
            0xD4B: "Cortex-A78C",
            0xD4C: "Cortex-X1C",
            0xD4D: "Cortex-A715",
            0xD4E: "Cortex-X3",
            0xD4F: "Neoverse-V2",
            0xD80: "Cortex-A520",
            0xD81: "Cortex-A720",
            0xD82: "Cortex-X4",
        },
    ),
    0x42: ("Broadcom", {0x00F: "Brahma-B15", 0x100: "Brahma-B53", 0x516: "ThunderX2"}),
    0x43: ("Cavium", {0x0A1: "ThunderX-88XX", 0x0AF: "ThunderX2-99xx"}),
    0x4E: ("NVIDIA", {0x000: "Denver", 0x003: "Denver 2", 0x004: "Carmel"}),
    0x51: (
        "Qualcomm",
        {
            0x04D: "Krait",
            0x06F: "Krait",
            0x201: "Kryo",
            0x205: "Kryo",
            0x211: "Kryo",
            0x800: "Kryo-2XX-Gold",
            0x801: "Kryo-2XX-Silver",
            0x802: "Kryo-3XX-Gold",
            0x803: "Kryo-3XX-Silver",
            0x804: "Kryo-4XX-Gold",
            0x805: "Kryo-4XX-Silver",
        },
    ),
    0x53: ("Samsung", {0x001: "Exynos-M1", 0x002: "Exynos-M3", 0x003: "Exynos-M4", 0x004: "Exynos-M5"}),
    0x61: ("Apple", {}),
    0xC0: ("Ampere", {0xAC3: "Ampere-1", 0xAC4: "Ampere-1a"}),
}


def midr_core_name(implementer: int | None, part: int | None) -> str | None:
    """Decodes the MIDR implementer/part pair of /proc/cpuinfo, e.g. (0x41, 0xc0f) -> "Cortex-A15"."""
    if implementer is None or part is None:
        return None
    vendor = MIDR_PARTS.get(implementer)
    if vendor is None:
        return None
    return vendor[1].get(part)


# cpuinfo feature -> the extension's name, in display order. ARM names are the kernel's hwcap strings, for
# 32-bit ("neon", and "aes" etc. on ARMv8 cores under a 64-bit kernel) and 64-bit ("asimd") userlands.
EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("neon", "NEON"),
    ("asimd", "ASIMD"),
    ("vfpv3", "VFPv3"),
    ("vfpv4", "VFPv4"),
    ("sve", "SVE"),
    ("sve2", "SVE2"),
    ("asimddp", "dot-product"),
    ("aes", "AES"),
    ("pmull", "PMULL"),
    ("sha1", "SHA1"),
    ("sha2", "SHA2"),
    ("sha3", "SHA3"),
    ("sha512", "SHA512"),
    ("crc32", "CRC32"),
    ("atomics", "LSE-atomics"),
    ("idiva", "hw-divide"),
    ("sse2", "SSE2"),
    ("avx2", "AVX2"),
    ("avx512f", "AVX-512"),
    ("sha_ni", "SHA-NI"),
)
X86_ONLY = {"sse2", "avx2", "avx512f", "sha_ni"}


def cpu_extensions(features: tuple[str, ...]) -> tuple[str, ...]:
    """The extensions a kernel's speed depends on, named, from cpuinfo's features; x86 "aes" is AES-NI."""
    have = set(features)
    x86 = bool(have & X86_ONLY)
    names = [name for feat, name in EXTENSIONS if feat in have]
    if x86 and "aes" in have:
        names = ["AES-NI" if n == "AES" else n for n in names]
    return tuple(names)


def parse_cpuinfo(text: str) -> tuple[dict[int, dict[str, str]], dict[str, str]]:
    """Splits /proc/cpuinfo into per-processor fields and global fields.

    Global fields are those outside any "processor : N" block: "Hardware"/"Revision" on ARM, and on old
    ARM kernels also "Processor" and the CPU part lines printed once after the last processor block.
    """
    processors: dict[int, dict[str, str]] = {}
    common: dict[str, str] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if not line.strip():
            current = None
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "processor" and value.isdigit():
            current = processors.setdefault(int(value), {})
            continue
        (current if current is not None else common).setdefault(key, value)
    return processors, common


def read_cpuinfo(root: RootLike) -> tuple[dict[int, dict[str, str]], dict[str, str]]:
    text = SysRoot.of(root).read_text("proc/cpuinfo")
    return parse_cpuinfo(text) if text is not None else ({}, {})


def cpuinfo_mhz(root: RootLike) -> dict[int, float]:
    """Each CPU's "cpu MHz" line of /proc/cpuinfo (x86; ARM kernels print none): what the kernel says the
    clock is where no cpufreq policy does (a virtual machine's is the host's nominal TSC rate)."""
    out = {}
    for cpu, fields in read_cpuinfo(root)[0].items():
        try:
            mhz = float(fields.get("cpu MHz", ""))
        except ValueError:
            continue
        if mhz > 0:
            out[cpu] = mhz
    return out


def _hex_field(sr: SysRoot, fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise InputError(
            f"{sr.show('proc/cpuinfo')}: expected a number for {key!r}, found {value!r}"
        ) from None


def possible_cpus(root: RootLike) -> tuple[int, ...]:
    """CPUs the kernel knows: sys/devices/system/cpu/possible, else the cpuN directories, else cpuinfo."""
    sr = SysRoot.of(root)
    cpus = sr.read_cpulist(f"{CPU_DIR}/possible")
    if cpus:
        return cpus
    dirs = tuple(int(n[3:]) for n in sr.listdir(CPU_DIR, r"cpu\d+"))
    if dirs:
        return dirs
    return tuple(sorted(read_cpuinfo(sr)[0]))


def online_cpus(root: RootLike) -> tuple[int, ...]:
    """CPUs that run tasks now: sys/devices/system/cpu/online, else cpuN/online, else cpuinfo."""
    sr = SysRoot.of(root)
    cpus = sr.read_cpulist(f"{CPU_DIR}/online")
    if cpus is not None:
        return cpus
    online = []
    for cpu in possible_cpus(sr):
        flag = sr.read_int(f"{CPU_DIR}/cpu{cpu}/online", "0 or 1")
        if flag is None or flag == 1:  # cpu0 usually has no online file: it cannot go offline
            online.append(cpu)
    return tuple(online)


def read_cores(root: RootLike) -> tuple[CpuCore, ...]:
    sr = SysRoot.of(root)
    processors, common = read_cpuinfo(sr)
    online = set(online_cpus(sr))
    cores = []
    for cpu in sorted(set(possible_cpus(sr)) | set(processors)):
        fields = {**common, **processors.get(cpu, {})}
        implementer = _hex_field(sr, fields, "CPU implementer")
        part = _hex_field(sr, fields, "CPU part")
        model_name = fields.get("model name") or fields.get("Processor") or fields.get("cpu model")
        topo = f"{CPU_DIR}/cpu{cpu}/topology"
        cores.append(
            CpuCore(
                cpu=cpu,
                online=cpu in online,
                model_name=model_name,
                core_name=midr_core_name(implementer, part) or model_name,
                midr_implementer=fields.get("CPU implementer"),
                midr_part=fields.get("CPU part"),
                midr_variant=fields.get("CPU variant"),
                midr_revision=_hex_field(sr, fields, "CPU revision"),
                core_id=sr.read_int(f"{topo}/core_id"),
                package_id=sr.read_int(f"{topo}/physical_package_id"),
                cluster_id=sr.read_int(f"{topo}/cluster_id"),
                thread_siblings=sr.read_cpulist(f"{topo}/thread_siblings_list") or (),
                capacity=sr.read_int(f"{CPU_DIR}/cpu{cpu}/cpu_capacity"),
                features=tuple((fields.get("Features") or fields.get("flags") or "").split()),
            )
        )
    return tuple(cores)


def _size_kib(sr: SysRoot, rel: str) -> int | None:
    text = sr.read_str(rel)
    if text is None:
        return None
    scale = {"K": 1, "M": 1024, "G": 1024 * 1024}
    try:
        if text[-1:].upper() in scale:
            return int(text[:-1]) * scale[text[-1].upper()]
        return int(text) // 1024
    except ValueError:
        raise InputError(f"{sr.show(rel)}: expected a size such as 32K, found {text!r}") from None


def read_caches(root: RootLike) -> tuple[Cache, ...]:
    """Caches from cpuN/cache/index*, one record per distinct cache (shared ones once)."""
    sr = SysRoot.of(root)
    seen: dict[tuple, Cache] = {}
    for cpu in possible_cpus(sr):
        base = f"{CPU_DIR}/cpu{cpu}/cache"
        for index in sr.listdir(base, r"index\d+"):
            d = f"{base}/{index}"
            level = sr.read_int(f"{d}/level")
            ctype = sr.read_str(f"{d}/type") or "Unknown"
            cpus = sr.read_cpulist(f"{d}/shared_cpu_list") or (cpu,)
            if level is None or (level, ctype, cpus) in seen:
                continue
            seen[(level, ctype, cpus)] = Cache(
                level=level,
                type=ctype,
                size_kib=_size_kib(sr, f"{d}/size"),
                line_size_b=sr.read_int(f"{d}/coherency_line_size"),
                ways=sr.read_int(f"{d}/ways_of_associativity"),
                sets=sr.read_int(f"{d}/number_of_sets"),
                cpus=cpus,
            )
    return tuple(sorted(seen.values(), key=lambda c: (c.level, c.type, c.cpus)))


def group_clusters(cores: tuple[CpuCore, ...], policies: tuple[CpufreqPolicy, ...]) -> tuple[Cluster, ...]:
    """Clusters = CPUs of one cpufreq policy (related_cpus); without cpufreq, CPUs of one core type and, on
    ARM, of one topology cluster.

    The second rule keeps a big.LITTLE board without a cpufreq driver split by core type (MIDR part and
    capacity), and gives a VM one cluster with empty frequency lists. On ARM the kernel fills
    topology/cluster_id from the device tree's cpu-map (and 32-bit kernels physical_package_id from the
    MPIDR cluster), so two clusters of one core type stay apart; x86's cluster_id is an L2 id and is not used.
    """
    by_cpu = {c.cpu: c for c in cores}
    groups: list[tuple[tuple[int, ...], CpufreqPolicy | None]] = []
    covered: set[int] = set()
    for policy in policies:
        cpus = policy.related_cpus or policy.cpus
        groups.append((cpus, policy))
        covered.update(cpus)
    by_type: dict[tuple, list[int]] = {}
    for core in cores:
        if core.cpu not in covered:
            key: tuple = (core.midr_implementer, core.midr_part, core.model_name, core.capacity)
            if core.midr_implementer is not None:
                key += (core.cluster_id, core.package_id)
            by_type.setdefault(key, []).append(core.cpu)
    groups.extend((tuple(cpus), None) for cpus in by_type.values())
    groups.sort(key=lambda g: min(g[0]) if g[0] else -1)

    clusters = []
    for index, (cpus, pol) in enumerate(groups):
        first = by_cpu.get(cpus[0]) if cpus else None
        clusters.append(
            Cluster(
                id=index,
                cpus=cpus,
                name=(first.core_name if first else None) or "unknown",
                model_name=first.model_name if first else None,
                midr_implementer=first.midr_implementer if first else None,
                midr_part=first.midr_part if first else None,
                capacity=first.capacity if first else None,
                policy=pol.name if pol else None,
                driver=pol.driver if pol else None,
                governor=pol.governor if pol else None,
                governors=pol.governors if pol else (),
                frequencies_khz=pol.frequencies_khz if pol else (),
                min_khz=pol.cpuinfo_min_khz if pol else None,
                max_khz=pol.cpuinfo_max_khz if pol else None,
                transition_latency_ns=pol.transition_latency_ns if pol else None,
                extensions=cpu_extensions(first.features) if first else (),
            )
        )
    return tuple(clusters)


def machine(root: RootLike) -> str | None:
    """The architecture as uname -m would say it, guessed from cpuinfo for a tree that is not this system."""
    sr = SysRoot.of(root)
    if sr.live:
        return os.uname().machine
    processors, common = read_cpuinfo(sr)
    fields = {**common, **(processors[min(processors)] if processors else {})}
    if "CPU implementer" in fields:
        name = fields.get("model name") or fields.get("Processor") or ""
        if "(v7l)" in name or fields.get("CPU architecture") == "7":
            return "armv7l"
        if "(v8l)" in name:  # a 32-bit userland on an ARMv8 core: uname -m says armv8l
            return "armv8l"
        if "(v6l)" in name:
            return "armv6l"
        return "aarch64"
    flags = fields.get("flags", "").split()
    if "vendor_id" in fields:
        return "x86_64" if "lm" in flags else "i686"
    if "isa" in fields and "rv64" in fields.get("isa", ""):
        return "riscv64"
    return None
