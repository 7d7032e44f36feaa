"""`inventory(root) -> BoardInfo`: everything boardlab knows about a board, its capabilities and checks."""

from __future__ import annotations

import dataclasses

from boardlab.model.board import BoardInfo
from boardlab.platform import (
    capabilities,
    checks,
    cpu,
    cpufreq,
    cpuidle,
    devfreq,
    identity,
    kernel,
    memory,
    pcie,
    perf,
    power,
    system,
    thermal,
    virt,
)
from boardlab.platform.sysroot import RootLike, SysRoot


def inventory(root: RootLike = "/") -> BoardInfo:
    """Reads the board below `root` ("/" = this system). Raises InputError for a root that is not a board
    tree or a file whose text has the wrong shape; a missing optional file only makes a capability
    unsupported, with its reason."""
    sr = SysRoot.of(root)
    sr.require_board_tree()
    cores = cpu.read_cores(sr)
    possible = tuple(c.cpu for c in cores)
    online = tuple(c.cpu for c in cores if c.online)
    policies = cpufreq.read_policies(sr)
    compat = identity.compatible(sr)
    info = BoardInfo(
        root=str(sr.root),
        live=sr.live,
        machine=cpu.machine(sr),
        model=identity.model(sr),
        compatible=compat,
        hardware=identity.hardware(sr),
        hostname=identity.hostname(sr),
        cpus=cores,
        online_cpus=online,
        clusters=cpu.group_clusters(cores, policies),
        caches=cpu.read_caches(sr),
        cpufreq_policies=policies,
        boost=cpufreq.global_boost(sr),
        devfreq=devfreq.read_devfreq(sr),
        cpuidle=cpuidle.read_cpuidle(sr, possible),
        memory=memory.read_memory(sr),
        kernel=kernel.read_kernel(sr),
        isolation=kernel.read_isolation(sr, last_cpu=max(possible) if possible else None),
        system=system.read_system(sr),
        thermal_zones=thermal.read_zones(sr),
        cooling_devices=thermal.read_cooling_devices(sr),
        power_sensors=power.read_power_sensors(sr, compat),
        powercap=power.read_powercap(sr),
        perf=perf.read_perf(sr),
        virtualization=virt.read_virtualization(sr, compat),
        pcie_links=pcie.read_links(sr),
    )
    info = dataclasses.replace(info, capabilities=capabilities.capabilities(sr, info))
    return dataclasses.replace(info, checks=checks.run_checks(info))
