"""The cpufreq governor (or a fixed frequency) of some or all policies, for the length of one run.

```toml
[[conditions]]
name = "ondemand-95"
kind = "governor"
params = { governor = "ondemand", tunables = { up_threshold = 95, sampling_rate = 10000 } }

[[conditions]]
name = "fixed-600"
kind = "governor"
params = { governor = "userspace", frequency_khz = 600000, policies = ["policy0"] }

[[conditions]]
name = "a7-1400-a15-200"
kind = "governor"
params = { governor = "userspace", frequencies_khz = { policy0 = 1400000, policy4 = 200000 } }

[[conditions]]
name = "active-max-idle-min"
kind = "governor"
params = { governor = "userspace", frequencies_khz = { active = "max", idle = "min" } }
```

In `frequencies_khz`, `active` names the policy holding the CPU the workload is pinned to (`[runs] cpu`) and
`idle` every other policy, so one plan expresses "the cluster running the task at its top, the idle cluster
at its bottom" (the governor study's reference point) on any board.

Every write goes through the restore journal (limits, then the governor, then the speed, then tunables);
they are undone in reverse order when the run ends, and by the next start after a crash. The state of
each run records what was set, what was there before, and where each policy spent the run: the deltas of
`stats/time_in_state` (ms per frequency) and `stats/total_trans`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.model.board import CpufreqPolicy
from boardlab.platform import cpufreq
from boardlab.platform.sysroot import format_cpulist

_POLICY = re.compile(r"policy\d+")
ROLES = ("active", "idle")  # frequencies_khz keys resolved against the worker's CPU


@dataclass(frozen=True)
class GovernorSetting:
    """The parameters of one `governor` condition, declared once (checked for shape by
    `Governor.validate`)."""

    governor: str = param("enum", None, choices=cpufreq.GOVERNORS, required=True, help="the cpufreq governor")
    policies: tuple[str, ...] | str = param(  # "all": see policy_names
        "list",
        "all",
        words=("all",),
        help="the cpufreq policies it applies to, e.g. ['policy0'] (see `boardlab info`), or all",
    )
    frequency_khz: int | str | None = param(  # kHz, "min" or "max"; userspace only
        "int",
        None,
        min=1,
        unit="kHz",
        words=("min", "max"),
        help="userspace only: a frequency every listed policy offers, or its min or max",
    )
    frequencies_khz: Mapping[str, int | str] = param(  # by policy name, or by role until `resolved`
        "table",
        None,
        help='userspace only: one frequency per policy, e.g. { policy0 = 600000, policy4 = "max" }, or by '
        'role: { active = "max", idle = "min" } (active: the policy of the pinned worker CPU; idle: '
        "the others)",
    )
    tunables: Mapping[str, int] = param(
        "table", None, help="the governor's tunables, e.g. { up_threshold = 95 }"
    )
    min_khz: int | None = param("int", None, min=1, unit="kHz", help="lower bound of the policy's frequency")
    max_khz: int | None = param("int", None, min=1, unit="kHz", help="upper bound of the policy's frequency")

    @property
    def policy_names(self) -> tuple[str, ...] | None:
        """The policies it applies to (those of frequencies_khz when policies is left out); None: every
        policy of the board."""
        if self.policies != "all":
            return tuple(self.policies)
        return tuple(self.frequencies_khz) or None

    @property
    def by_role(self) -> bool:
        return any(name in ROLES for name in self.frequencies_khz)

    def resolved(self, info, worker_cpu: int | None) -> GovernorSetting | str:
        """The setting with `active` / `idle` replaced by the board's policy names, or why it cannot be."""
        if not self.by_role:
            return self
        if worker_cpu is None:
            return "frequencies_khz by role (active / idle) needs the workload pinned: set [runs] cpu"
        active = next((p for p in info.cpufreq_policies if worker_cpu in (p.related_cpus or p.cpus)), None)
        if active is None:
            return (
                f"no cpufreq policy holds CPU {worker_cpu}, the workload's: frequencies_khz cannot "
                "name it active"
            )
        roles = self.frequencies_khz
        per = [(active.name, roles["active"])] if "active" in roles else []
        if "idle" in roles:
            per += [(p.name, roles["idle"]) for p in info.cpufreq_policies if p.name != active.name]
        return dataclasses.replace(
            self, policies=tuple(name for name, _ in per), frequencies_khz=MappingProxyType(dict(per))
        )

    def speed_khz(self, policy: CpufreqPolicy) -> int | None:
        """The userspace frequency for this policy ("min"/"max" resolved against its table)."""
        frequency = self.frequencies_khz.get(policy.name, self.frequency_khz)
        if frequency is None:
            return None
        table = policy.frequencies_khz or tuple(
            f for f in (policy.cpuinfo_min_khz, policy.cpuinfo_max_khz) if f is not None
        )
        if frequency == "min":
            return min(table) if table else None
        if frequency == "max":
            return max(table) if table else None
        return int(frequency)


def _valid_frequencies(p: CpufreqPolicy) -> str:
    return f"{', '.join(map(str, p.frequencies_khz))} kHz, or 'min' / 'max'"


def _describe(p: CpufreqPolicy) -> str:
    return f"{p.name} (CPUs {format_cpulist(p.related_cpus or p.cpus)})"


class Governor(DeclaredKind[GovernorSetting]):
    name = "governor"
    summary = "a cpufreq governor, a fixed frequency (userspace) or frequency limits, per policy"

    # ---- at plan load: shape only ----
    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        missing = cpufreq.missing_reason(info)
        if missing:
            return missing, ()
        offered = sorted({g for p in info.cpufreq_policies for g in p.governors})
        limits = [f"governors offered here: {', '.join(offered)}"]
        if info.live and os.geteuid() != 0:
            limits.append("writing scaling_governor needs root")
        return None, tuple(limits)

    def refuse(self, setting: GovernorSetting, params: dict) -> tuple[str | None, str] | None:
        gov = setting.governor
        policies = setting.policies
        if isinstance(policies, tuple):
            if not policies:
                return "policies", "an empty list selects no policy; leave it out (or 'all') for every policy"
            for p in policies:
                if not isinstance(p, str) or not _POLICY.fullmatch(p):
                    return (
                        "policies",
                        f"expected policy names such as 'policy0' (see `boardlab info`), found {p!r}",
                    )
            if len(set(policies)) != len(policies):
                return "policies", "a policy is listed twice"
        if "frequencies_khz" in params:
            bad = self._validate_per_policy(setting, params)
            if bad:
                return bad
        freq = setting.frequency_khz
        if gov == "userspace" and freq is None and "frequencies_khz" not in params:
            return (
                None,
                "the userspace governor needs frequency_khz (a frequency the policy offers, 'min' or 'max')",
            )
        if freq is not None:
            if gov != "userspace":
                return "frequency_khz", (
                    f"a fixed frequency needs governor = 'userspace'; to bound {gov}, use min_khz / max_khz"
                )
        lo, hi = setting.min_khz, setting.max_khz
        if lo is not None and hi is not None and lo > hi:
            return "min_khz", f"min_khz {lo} is above max_khz {hi}"
        if isinstance(freq, int) and (lo is not None and freq < lo or hi is not None and freq > hi):
            return "frequency_khz", f"{freq} kHz lies outside min_khz..max_khz; the kernel would clamp it"
        return self._validate_tunables(gov, setting.tunables)

    def _validate_per_policy(self, setting: GovernorSetting, params: dict) -> tuple[str | None, str] | None:
        """frequencies_khz = { policy0 = 1400000, policy4 = "min" }: one userspace frequency per policy."""
        gov, per = setting.governor, setting.frequencies_khz
        if gov != "userspace":
            return "frequencies_khz", "per-policy frequencies need governor = 'userspace'"
        if "frequency_khz" in params:
            return (
                "frequencies_khz",
                "give frequency_khz (one for all) or frequencies_khz (per policy), not both",
            )
        if not per:
            return "frequencies_khz", "an empty table: give e.g. { policy0 = 600000 }"
        roles = [name for name in per if name in ROLES]
        if roles and len(roles) != len(per):
            return "frequencies_khz", "give policy names or the roles active / idle as keys, not both"
        if roles and "policies" in params:
            return "policies", "with frequencies_khz by role (active / idle), leave policies out"
        for name, value in per.items():
            if not _POLICY.fullmatch(name) and name not in ROLES:
                return (
                    "frequencies_khz",
                    f"expected policy names such as 'policy0', or active / idle, as keys, found {name!r}",
                )
            ok_int = isinstance(value, int) and not isinstance(value, bool) and value > 0
            if not ok_int and value not in ("min", "max"):
                return (
                    "frequencies_khz",
                    f"{name}: expected a frequency in kHz, 'min' or 'max', found {value!r}",
                )
        if isinstance(setting.policies, tuple) and set(setting.policies) != set(per):
            return "policies", "with frequencies_khz, list the same policies (or leave policies out)"
        return None

    def _validate_tunables(self, gov: str, tunables: Mapping[str, Any]) -> tuple[str | None, str] | None:
        if not tunables:
            return None
        known = cpufreq.GOVERNOR_TUNABLES.get(gov)
        if known is None:
            with_tunables = ", ".join(cpufreq.GOVERNOR_TUNABLES)
            return "tunables", f"the {gov} governor has no tunables (these do: {with_tunables})"
        for key, value in tunables.items():
            if key not in known:
                return "tunables", f"{gov} has no tunable {key!r}; valid: {', '.join(known)}"
            lo, hi = known[key]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                return "tunables", f"{key}: expected an integer in [{lo}, {hi}], found {value!r}"
        up, down = tunables.get("up_threshold"), tunables.get("down_threshold")
        if up is not None and down is not None and down >= up:
            return "tunables", f"down_threshold ({down}) must be below up_threshold ({up})"
        return None

    # ---- before the campaign starts: against the board ----

    def _policies(self, setting: GovernorSetting, ctx: ApplyContext) -> list[CpufreqPolicy]:
        names = setting.policy_names
        if names is None:
            return list(ctx.info.cpufreq_policies)
        return [p for name in names if (p := ctx.info.policy(name)) is not None]

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        info = ctx.info
        missing = cpufreq.missing_reason(info)
        if missing:
            return f"unsupported: {missing}"
        setting = self.typed(params).resolved(info, ctx.worker_cpu)
        if isinstance(setting, str):
            return setting
        for name in setting.policy_names or ():
            if info.policy(name) is None:
                valid = ", ".join(_describe(p) for p in info.cpufreq_policies)
                return f"no cpufreq policy {name!r} on this board; policies: {valid}"
        for p in self._policies(setting, ctx):
            reason = self._check_policy(setting, p, ctx) or self._check_tunables(setting, p, ctx)
            if reason:
                return reason
        return None

    def _check_policy(self, setting: GovernorSetting, p: CpufreqPolicy, ctx: ApplyContext) -> str | None:
        sr = ctx.root
        if setting.governor not in p.governors:
            return (
                f"{_describe(p)} offers no {setting.governor!r} governor; "
                f"available: {', '.join(p.governors) or '(none)'}"
            )
        lo = setting.min_khz if setting.min_khz is not None else p.scaling_min_khz
        hi = setting.max_khz if setting.max_khz is not None else p.scaling_max_khz
        for key, value in (("min_khz", setting.min_khz), ("max_khz", setting.max_khz)):
            if value is None or p.cpuinfo_min_khz is None or p.cpuinfo_max_khz is None:
                continue
            if not p.cpuinfo_min_khz <= value <= p.cpuinfo_max_khz:
                return (
                    f"{key} = {value} is outside what {_describe(p)} can do: "
                    f"{p.cpuinfo_min_khz}..{p.cpuinfo_max_khz} kHz"
                )
        if lo is not None and hi is not None and lo > hi:
            return (
                f"{p.name}: the limits would cross (scaling_min_freq {lo} > scaling_max_freq {hi} kHz); "
                "give both min_khz and max_khz"
            )
        files = ["scaling_governor"]
        files += ["scaling_min_freq"] if setting.min_khz is not None else []
        files += ["scaling_max_freq"] if setting.max_khz is not None else []
        frequency = setting.frequencies_khz.get(p.name, setting.frequency_khz)
        if frequency is not None:
            files.append("scaling_setspeed")
            if not p.frequencies_khz and isinstance(frequency, int):
                return f"{_describe(p)} publishes no frequency table: use frequency_khz = 'min' or 'max'"
            khz = setting.speed_khz(p)
            if isinstance(frequency, int) and khz not in p.frequencies_khz:
                return f"{_describe(p)} does not offer {khz} kHz; valid: {_valid_frequencies(p)}"
            if khz is not None and (lo is not None and khz < lo or hi is not None and khz > hi):
                return (
                    f"{_describe(p)}: {khz} kHz lies outside its limits {lo}..{hi} kHz, so the kernel "
                    "would clamp it; set min_khz / max_khz around it"
                )
        for attr in files:
            rel = f"{cpufreq.policy_dir(p.name)}/{attr}"
            if not sr.exists(rel):
                return f"no {sr.show(rel)}: the {p.driver or 'cpufreq'} driver does not expose it"
            if not sr.writable(rel):
                return ctx.not_writable(rel)
        return None

    def _check_tunables(self, setting: GovernorSetting, p: CpufreqPolicy, ctx: ApplyContext) -> str | None:
        """The tunables directory exists only while its governor runs: checked here when it does already,
        and by `apply` (before the run starts) otherwise."""
        values = dict(setting.tunables)
        floor = cpufreq.min_sampling_rate_us(ctx.info.kernel.config_hz)
        if floor is not None and values.get("sampling_rate", floor) < floor:
            return (
                f"sampling_rate = {values['sampling_rate']} us is below this kernel's minimum of two ticks, "
                f"{floor} us at CONFIG_HZ={ctx.info.kernel.config_hz}"
            )
        d = cpufreq.tunables_dir(ctx.root, p.name, setting.governor) if values else None
        for key in values if d is not None else ():
            assert d is not None  # the loop runs only then
            rel = f"{d}/{key}"
            if not ctx.root.exists(rel):
                valid = ", ".join(ctx.root.listdir(d)) or "(none)"
                return f"{ctx.root.show(d)} has no tunable {key!r}; tunables here: {valid}"
            if not ctx.root.writable(rel):
                return ctx.not_writable(rel)
        return None

    # ---- around one run ----

    def apply(self, params: dict, ctx: ApplyContext):
        setting = self.typed(params).resolved(ctx.info, ctx.worker_cpu)
        assert not isinstance(setting, str), setting  # `check` refused it before the campaign started
        return self._applied(setting, ctx)

    @contextlib.contextmanager
    def _applied(self, setting: GovernorSetting, ctx: ApplyContext):
        tokens: list[str] = []

        def write(rel: str, value: str, what: str) -> None:
            tokens.append(ctx.journal.set(rel, value, what=what))

        policies = self._policies(setting, ctx)
        state: dict = {"governor": setting.governor, "policies": {}}
        try:
            tunables_written: set[str] = set()  # a global cpufreq/<gov>/ serves every policy: written once
            for p in policies:
                state["policies"][p.name] = _set_policy(setting, p.name, ctx, write, tunables_written)
            stats0 = {p.name: _stats(ctx.root, p.name) for p in policies}
            yield state
            stats1 = {p.name: _stats(ctx.root, p.name) for p in policies}
            state["time_in_state_delta_ms"] = {
                name: {khz: ms - stats0[name][0].get(khz, 0) for khz, ms in tis.items()}
                for name, (tis, _) in stats1.items()
            }
            state["transitions"] = {name: _delta(n, stats0[name][1]) for name, (_, n) in stats1.items()}
        finally:
            _undo_all(ctx, tokens)


def _set_policy(
    setting: GovernorSetting,
    policy: str,
    ctx: ApplyContext,
    write: cpufreq.Writer,
    tunables_written: set[str],
) -> dict:
    """Limits, governor, speed, tunables of one policy (in that order); returns what the run records."""
    sr = ctx.root
    d = cpufreq.policy_dir(policy)
    entry: dict = {
        "was": {
            "governor": sr.read_str(f"{d}/scaling_governor"),
            "min_khz": sr.read_int(f"{d}/scaling_min_freq"),
            "max_khz": sr.read_int(f"{d}/scaling_max_freq"),
        }
    }
    cpufreq.set_frequency_limits(sr, policy, min_khz=setting.min_khz, max_khz=setting.max_khz, write=write)
    cpufreq.set_governor(sr, policy, setting.governor, write=write)
    info = ctx.info.policy(policy)
    speed = setting.speed_khz(info) if info is not None else None
    if speed is not None:
        cpufreq.set_speed(sr, policy, speed, write=write)
    entry["frequency_khz"] = speed
    if setting.min_khz is not None or setting.max_khz is not None:
        entry["limits_khz"] = [sr.read_int(f"{d}/scaling_min_freq"), sr.read_int(f"{d}/scaling_max_freq")]
    if setting.tunables:
        tdir = cpufreq.tunables_dir(sr, policy, setting.governor)
        if tdir is None or tdir not in tunables_written:
            tdir = cpufreq.set_tunables(sr, policy, setting.governor, dict(setting.tunables), write=write)
            tunables_written.add(tdir)
        entry["tunables_dir"] = sr.show(tdir)
        entry["tunables"] = {k: sr.read_str(f"{tdir}/{k}") for k in setting.tunables}
    return entry


def _delta(after: int | None, before: int | None) -> int | None:
    """A counter's change over the run; None where either reading is missing."""
    return None if after is None or before is None else after - before


def _stats(sr, policy: str) -> tuple[dict[int, int], int | None]:
    return cpufreq.time_in_state_ms(sr, policy), cpufreq.total_transitions(sr, policy)


def _undo_all(ctx: ApplyContext, tokens: list[str]) -> None:
    """Undoes newest first; one failed undo does not stop the others (it stays in the journal for
    `boardlab restore`), and the first failure is raised at the end."""
    first: BaseException | None = None
    for token in reversed(tokens):
        try:
            ctx.journal.undo(token)
        except Exception as exc:  # re-raised below, after the other undos
            first = first or exc
    if first is not None:
        raise first


KIND = Governor()
