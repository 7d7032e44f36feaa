"""The only layer that touches /proc, /sys and /dev. Every function takes a root ("/" on the live system,
a fixture tree in tests) and reads through `SysRoot`.

Entry points: `inventory(root) -> BoardInfo` (with capabilities and checks); per-concern modules for the
monitor and the conditions: `cpufreq` (current frequency, time_in_state, set_governor), `thermal`
(temperatures), `power` (power/energy), `cpuidle` (usage), `devfreq`, `system` (loadavg).
"""

from boardlab.platform.inventory import inventory
from boardlab.platform.sysroot import SysRoot, format_cpulist, parse_cpulist

__all__ = ["SysRoot", "format_cpulist", "inventory", "parse_cpulist"]
