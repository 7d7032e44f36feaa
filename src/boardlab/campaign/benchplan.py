"""The plan `boardlab bench` writes (and `boardlab ingest` writes for a hyperfine export of the same
commands): one program workload named "bench" whose `command` parameter lists the command lines (the first the
reference of the others), the baseline and each condition. The same commands and conditions give the same
plan name, so `history` sets a bench's campaigns (and imported hyperfine results) side by side."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

WORKLOAD = "bench"
COMMAND_PARAM = "command"  # analysis.bench reads the commands back from it


@dataclass(frozen=True)
class BenchPlan:
    commands: tuple[str, ...]  # command lines, after their parameters are filled
    conditions: tuple[dict, ...] = ()  # [[conditions]] tables beside the baseline
    repetitions: int = 10
    cpu: object = "auto"  # [runs] cpu: "auto", "none" or a list of CPUs
    shell: str | None = None  # run through SHELL -c, else split into words (no shell)
    idle_gate: bool = False
    prepare_each: tuple[str, ...] = ()  # an argv before each execution, outside its timing
    order: str = "interleave"
    allocation: str = "sqrt"  # [runs] baseline_allocation: "equal" gives every cell `repetitions` runs
    name: str | None = None
    comment: str = ""


def toml_str(text: str) -> str:
    """A TOML basic string (json's escapes are TOML's, but DEL must be escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return toml_str(str(v))


def bench_name(commands: tuple[str, ...], conditions: tuple[dict, ...] = ()) -> str:
    digest = hashlib.sha256(json.dumps([list(commands), [c["name"] for c in conditions]]).encode())
    return f"bench-{digest.hexdigest()[:10]}"


def plan_text(b: BenchPlan) -> str:
    """The plan, as `boardlab run` would run it the same."""
    argv = (f'argv = [{toml_str(b.shell)}, "-c", "{{{COMMAND_PARAM}}}"]' if b.shell
            else f'command = "{{{COMMAND_PARAM}}}"')  # fmt: skip
    shown = ("".join(c if c.isprintable() else "?" for c in line) for line in b.comment.splitlines())
    out = [f"# {line}" for line in shown] + [
        f"name = {toml_str(b.name or bench_name(b.commands, b.conditions))}",
        f"description = {toml_str(('boardlab bench: ' + ' vs '.join(b.commands))[:300])}",
        "seed = 1",
        "[runs]",
        f"repetitions = {b.repetitions}",
        "iterations = 1",
        f"order = {toml_str(b.order)}",
        f"baseline_allocation = {toml_str(b.allocation)}",
        f"cpu = {toml_value(b.cpu)}",
        "[gates]",
        f"idle = {toml_value(b.idle_gate)}",
        "[[workloads]]",
        'kind = "program"',
        f"name = {toml_str(WORKLOAD)}",
        argv,
        f"params = {{ {COMMAND_PARAM} = {toml_value(list(b.commands))} }}",
    ]
    if len(b.commands) > 1:
        out.append(f"compare = {toml_str(COMMAND_PARAM)}")
    if b.prepare_each:  # literal braces: a placeholder is {name}
        out.append(
            f"prepare_each = {toml_value([w.replace('{', '{{').replace('}', '}}') for w in b.prepare_each])}"
        )
    out += ["[[conditions]]", 'name = "baseline"', 'kind = "baseline"']
    for c in b.conditions:
        out.append("[[conditions]]")
        out += [f"{k} = {toml_value(v)}" for k, v in c.items()]
    return "\n".join(out) + "\n"
