"""Condition kinds: what a plan may put around a workload. One module per kind, each with `KIND`."""

from __future__ import annotations

import importlib

# kind -> module; a module exposes KIND (a ConditionKind). One line per kind.
_KIND_MODULES = {
    "baseline": "boardlab.conditions.baseline",
    "stressor": "boardlab.conditions.stressor",
    "command": "boardlab.conditions.command",
    "ddgzip": "boardlab.conditions.ddgzip",
    "burstynet": "boardlab.conditions.burstynet",
    "workload": "boardlab.conditions.workload",
    "governor": "boardlab.conditions.dvfs",
    "isolation": "boardlab.conditions.isolation",
    "governor-daemon": "boardlab.conditions.governor_daemon",
    "devfreq": "boardlab.conditions.devfreq_bus",
    "netns": "boardlab.conditions.netns",
    "driver": "boardlab.conditions.driver",
}


def condition_kinds() -> dict:
    return {name: importlib.import_module(mod).KIND for name, mod in _KIND_MODULES.items()}
