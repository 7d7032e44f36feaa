"""Is this a virtual machine? Evidence from cpuinfo, /sys/hypervisor, DMI and the device tree."""

from __future__ import annotations

import os

from boardlab.model.board import Virtualization
from boardlab.platform.cpu import read_cpuinfo
from boardlab.platform.sysroot import RootLike, SysRoot

# DMI sys_vendor / product_name words that name a hypervisor.
DMI_HYPERVISORS = {
    "qemu": "QEMU",
    "kvm": "KVM",
    "vmware": "VMware",
    "virtualbox": "VirtualBox",
    "innotek": "VirtualBox",
    "microsoft corporation": "Hyper-V",
    "xen": "Xen",
    "amazon ec2": "KVM (Amazon EC2)",
    "google compute engine": "KVM (Google Compute Engine)",
    "bochs": "Bochs",
    "parallels": "Parallels",
    "firecracker": "Firecracker",
    "cloud hypervisor": "Cloud Hypervisor",
}
PARAVIRT_CLOCKS = {"kvm-clock": "KVM", "xen": "Xen", "hyperv_clocksource_tsc_page": "Hyper-V"}


def user_emulation(sr: SysRoot, first: dict[str, str]) -> str | None:
    """qemu-user runs a foreign binary under the host's kernel: uname -m names the emulated architecture while
    /proc/cpuinfo still describes the host's CPU. Only the live system can show it."""
    if not sr.live or not first:
        return None
    machine = os.uname().machine
    arm_cpu, x86_cpu = "CPU implementer" in first, "vendor_id" in first
    if machine.startswith(("arm", "aarch64")) and x86_cpu:
        return (
            f"uname -m says {machine} but /proc/cpuinfo describes an x86 CPU: user-mode emulation (qemu-user)"
        )
    if machine in ("x86_64", "i686") and arm_cpu:
        return f"uname -m says {machine} but /proc/cpuinfo describes an ARM CPU: user-mode emulation"
    return None


def read_virtualization(root: RootLike, compatible: tuple[str, ...] = ()) -> Virtualization:
    sr = SysRoot.of(root)
    evidence: list[str] = []
    hypervisor: str | None = None
    processors, common = read_cpuinfo(sr)
    first = processors[min(processors)] if processors else common
    emulated = user_emulation(sr, first)
    if emulated:  # timings under instruction emulation say nothing about any CPU
        evidence.append(emulated)
        hypervisor = "qemu-user"
    if "hypervisor" in first.get("flags", "").split():
        evidence.append("cpuinfo flag 'hypervisor' (set by the hypervisor through CPUID)")
    if "QEMU" in first.get("model name", ""):
        evidence.append(f"cpuinfo model name {first['model name']!r}")
        hypervisor = "QEMU"
    xen = sr.read_str("sys/hypervisor/type")
    if xen:
        evidence.append(f"{sr.show('sys/hypervisor/type')} = {xen}")
        hypervisor = xen.capitalize() if xen.islower() else xen
    for attr in ("sys_vendor", "product_name"):
        value = sr.read_str(f"sys/class/dmi/id/{attr}")
        if not value:
            continue
        match = next((name for word, name in DMI_HYPERVISORS.items() if word in value.lower()), None)
        if match:
            evidence.append(f"DMI {attr} = {value!r}")
            hypervisor = hypervisor or match
    # Paravirtual clocksources are registered only when the hypervisor offers them.
    clocksources = sr.read_words("sys/devices/system/clocksource/clocksource0/available_clocksource") or ()
    for clock, name in PARAVIRT_CLOCKS.items():
        if clock in clocksources:
            evidence.append(f"paravirtual clocksource {clock!r} available")
            hypervisor = hypervisor or name
    if "linux,dummy-virt" in compatible:
        evidence.append("device tree compatible 'linux,dummy-virt' (QEMU arm virt machine)")
        hypervisor = hypervisor or "QEMU"
    return Virtualization(virtualized=bool(evidence), hypervisor=hypervisor, evidence=tuple(evidence))
