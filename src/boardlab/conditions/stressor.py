"""A stress-ng stressor beside the workload (the interference study: cpu, vm, memcpy, interrupt, open, fork,
udp).

Plan syntax:

    [[conditions]]
    name = "memcpy-same"
    kind = "stressor"
    params = { stressor = "memcpy", workers = 1, placement = "same", options = { memcpy-method = "libc" } }

`stressor` is a boardlab name mapped to the stress-ng stressor that really does it: `interrupt` is `timer`
(1 MHz POSIX timer by default: about 126,000 local timer interrupts/s on the research VM against ~570 idle,
with few context switches; `hrtimers` raises more interrupts but also ~156,000 context switches/s, a
scheduler load as much as an interrupt load; `--irq` does not exist), and `io` is `iomix` (`--io` is the
legacy sync() stressor, which stress-ng itself says to replace). `options` are the stressor's own intensity
options (`vm-bytes = "64M"` -> `--vm-bytes 64M`): names must start with the real stressor's name, values are
passed as separate arguments, never through a shell; `true` is a bare flag; bogo-op limits (`*-ops`) are
refused because the load must last the whole run. stress-ng runs with `--taskset` on the placement's CPUs,
`--oom-avoid`, `--temp-path` in a private directory, and `--metrics-brief --yaml`, whose real-time bogo-ops
rate is recorded with the run (stress-ng 0.15 writes its log to stderr and unquoted dates in the YAML: only
the `metrics:` section is read). The private directory is made under TMPDIR (/tmp by default): where /tmp
is a tmpfs, `io` loads memory, not storage; point TMPDIR at the storage to load. Research:
research/stressors-rt.md.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from boardlab.conditions import background
from boardlab.conditions.base import ApplyContext, DeclaredKind, param
from boardlab.platform.process import tool_answer
from boardlab.platform.sysroot import format_cpulist

# boardlab name -> the stress-ng stressor that does it (research/stressors-rt.md section 1.1)
STRESSORS = {
    "cpu": "cpu",
    "vm": "vm",
    "memcpy": "memcpy",
    "interrupt": "timer",
    "open": "open",
    "fork": "fork",
    "udp": "udp",
    "io": "iomix",
    "cache": "cache",
    "matrix": "matrix",
}
# stress-ng's own default is 1 GB of file per iomix worker: too much for a board's eMMC or a tmpfs /tmp
DEFAULT_OPTIONS: dict[str, dict[str, str]] = {"iomix": {"iomix-bytes": "64M"}}
MAX_WORKERS = 1024
INSTALL = "apt-get install stress-ng"
_OPTION_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")
_OPTION_VALUE = re.compile(r"[A-Za-z0-9._%+/:,][A-Za-z0-9._%+/:,-]*")


@dataclass(frozen=True)
class StressorParams(background.BackgroundParams):
    stressor: str = param(  # boardlab's name
        "enum",
        None,
        choices=tuple(STRESSORS),
        required=True,
        help="the load, by what it stresses (each runs a stress-ng stressor: interrupt is timer, "
        "io is iomix)",
    )
    workers: int = param("int", 1, min=1, max=MAX_WORKERS, help="stress-ng workers (processes)")
    options: Mapping[str, str | int | float | bool] = param(  # the plan's; see stress_ng_options
        "table",
        None,
        help='stress-ng options of that stressor, named <stressor>-..., e.g. { vm-bytes = "64M" }',
    )

    @property
    def stress_ng_stressor(self) -> str:
        return STRESSORS[self.stressor]

    @property
    def stress_ng_options(self) -> dict[str, str | int | float | bool]:
        """The plan's options over boardlab's defaults for this stressor (DEFAULT_OPTIONS)."""
        return {**DEFAULT_OPTIONS.get(self.stress_ng_stressor, {}), **self.options}

    def option_argv(self) -> list[str]:
        argv: list[str] = []
        for name, value in self.stress_ng_options.items():
            if value is True:
                argv.append(f"--{name}")
            elif value is not False:
                argv += [f"--{name}", f"{value:g}" if isinstance(value, float) else str(value)]
        return argv

    def argv(self, cpus: tuple[int, ...]) -> list[str]:
        """stress-ng's arguments without the output files; N is explicit (0 would mean every CPU)."""
        return [
            "stress-ng",
            f"--{self.stress_ng_stressor}",
            str(self.workers),
            *self.option_argv(),
            "--taskset",
            format_cpulist(cpus),
            "--timeout",
            f"{background.LOAD_MAX_S}s",
            "--oom-avoid",
        ]


def _validate_option(real: str, name: Any, value: Any) -> str | None:
    if not isinstance(name, str) or not _OPTION_NAME.fullmatch(name) or not name.startswith(f"{real}-"):
        return (
            f"option {name!r}: expected one of stress-ng's {real} options, named {real}-... "
            f"(see `stress-ng --help | grep -- --{real}-`)"
        )
    if name.endswith("-ops"):
        return (
            f"option {name!r}: a bogo-op limit would end the load before the run does; give intensity options"
        )
    if isinstance(value, bool | int | float):
        return None
    if not isinstance(value, str) or len(value) > 64 or not _OPTION_VALUE.fullmatch(value):
        return (
            f'option {name!r}: expected a number, true, or a word such as "64M" or "50%" '
            f"(letters, digits and . _ % + / : , -), found {value!r}"
        )
    return None


@lru_cache(maxsize=4)
def stress_ng_version(exe: str) -> str | None:
    """`stress-ng, version 0.15.06 (gcc 12.2.0, ...)` -> "0.15.06"."""
    m = re.search(r"version\s+(\S+)", tool_answer([exe, "--version"], timeout_s=30) or "")
    return m.group(1) if m else None


@lru_cache(maxsize=4)
def stress_ng_stressors(exe: str) -> frozenset[str]:
    """The stressor names this stress-ng knows (`stress-ng --stressors`)."""
    try:
        out = subprocess.run([exe, "--stressors"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(out.stdout.split())


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text.strip("'\"")


def parse_yaml_metrics(text: str) -> dict[str, dict[str, float | str]]:
    """The `metrics:` section of stress-ng's --yaml output: {stressor: {key: value}}.

    A minimal reader for the shape stress-ng writes (a list of flat mappings, each starting with
    `- stressor: NAME`); nested lists (per-instance metrics in newer versions) are skipped. The other
    sections are not read: 0.15 writes dates unquoted, which a YAML 1.1 reader turns into numbers."""
    out: dict[str, dict[str, float | str]] = {}
    in_metrics = False
    item_indent: int | None = None
    current: dict[str, float | str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped in ("---", "...") or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent == 0:
            in_metrics = stripped == "metrics:"
            current = None
            continue
        if not in_metrics:
            continue
        if stripped.startswith("- "):
            if item_indent is None:
                item_indent = indent
            if indent == item_indent:
                key, _, value = stripped[2:].partition(":")
                current = None
                if key.strip() == "stressor" and value.strip():
                    current = out.setdefault(value.strip(), {})
            continue
        if current is not None and item_indent is not None and indent == item_indent + 2:
            key, sep, value = stripped.partition(":")
            if sep and value.strip():
                current[key.strip()] = _number(value.strip())
    return out


class Stressor(DeclaredKind[StressorParams]):
    name = "stressor"
    summary = "a stress-ng stressor beside the workload: cpu, vm, memcpy, interrupt, open, fork, udp, ..."

    def support(self, info) -> tuple[str | None, tuple[str, ...]]:
        """Why no stressor can run here (None: they can), and limits on parameter values."""
        return (None if shutil.which("stress-ng") else f"stress-ng is not installed: {INSTALL}"), ()

    def refuse(self, p: StressorParams, params: dict) -> tuple[str | None, str] | None:
        for name, value in p.options.items():
            reason = _validate_option(p.stress_ng_stressor, name, value)
            if reason:
                return "options", reason
        return None

    def check(self, params: dict, ctx: ApplyContext) -> str | None:
        exe = shutil.which("stress-ng")
        if exe is None:
            return f"unsupported: stress-ng is not installed: {INSTALL}"
        p = self.typed(params)
        reason = background.placement_reason(p.placement, ctx)
        if reason:
            return reason
        known = stress_ng_stressors(exe)
        if p.stress_ng_stressor not in known:
            here = [k for k, v in STRESSORS.items() if v in known]
            version = stress_ng_version(exe) or "of unknown version"
            return (
                f"unsupported: stressor {p.stressor!r}: this stress-ng ({version}) has no "
                f"{p.stress_ng_stressor!r} stressor; valid here: {', '.join(here) or '(none)'}"
            )
        argv = [exe, *p.argv(background.placement_cpus(p.placement, ctx))[1:], "--dry-run"]
        dry = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        if dry.returncode != 0:
            said = [ln for ln in (dry.stderr + dry.stdout).splitlines() if ln.strip()]
            why = " / ".join(said[-3:]) or f"exit {dry.returncode}"
            return f"stress-ng refuses `{' '.join(argv[1:-1])}`: {why}"
        return None

    @contextmanager
    def applied(self, p: StressorParams, ctx: ApplyContext):
        cpus = background.placement_cpus(p.placement, ctx)
        warmup_s = background.warmup_of(p, ctx)
        yaml_path = background.scratch_path(ctx, f"stress-ng-{p.stress_ng_stressor}", ".yaml")
        argv = p.argv(cpus) + ["--metrics-brief", "--yaml", str(yaml_path), "--temp-path", str(ctx.temp_dir)]
        state: dict[str, Any] = {
            "stressor": p.stressor,
            "stress_ng_stressor": p.stress_ng_stressor,
            "workers": p.workers,
            "placement": p.placement,
            "cpus": format_cpulist(cpus),
            "options": p.stress_ng_options,
            "warmup_s": warmup_s,
            "stress_ng_version": stress_ng_version(shutil.which("stress-ng") or "stress-ng"),
        }
        what = f"stressor {p.stressor} (stress-ng --{p.stress_ng_stressor} {p.workers})"
        # SIGINT to stress-ng's parent stops every worker in 5-40 ms; SIGINT to the whole group took up to
        # 0.5 s for vm (research/stressors-rt.md 1.6 and bench/bench_stressors.py).
        with background.running_load(
            argv, ctx=ctx, cpus=cpus, what=what, warmup_s=warmup_s, stop_first_to="leader", cwd=ctx.temp_dir
        ) as load:
            yield state
        state.update(load.usage.to_state() if load.usage else {})
        state.update(_metrics(yaml_path, p.stress_ng_stressor))
        ops = state.get("bogo_ops")
        background.record_health(
            state, "stress-ng counted 0 bogo ops: the stressor did no work" if ops == 0 else None
        )


def _metrics(path, real: str) -> dict[str, Any]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        text = ""
    finally:
        try:
            path.unlink()
        except OSError:
            pass
    m = parse_yaml_metrics(text).get(real)
    if not m:
        return {
            "bogo_ops_per_s": None,
            "metrics_error": "stress-ng wrote no metrics for the stressor (stopped by SIGKILL, or it failed)",
        }

    def num(key: str) -> float | None:
        v = m.get(key)
        return v if isinstance(v, float) else None

    ops = num("bogo-ops")
    return {
        "bogo_ops": int(ops) if ops is not None else None,
        "bogo_ops_per_s": num("bogo-ops-per-second-real-time"),
        "stress_ng_wall_s": num("wall-clock-time"),
        "stress_ng_cpu_pct_per_worker": num("cpu-usage-per-instance"),
    }


KIND = Stressor()
