"""program: the user's own program as a workload, declared in a plan with `kind = "program"`.

A plan's `[[workloads]]` table with `kind = "program"` names an argv (with `{param}` placeholders filled from
its `params`, `{input}` from its `inputs` and `{scratch}` with a private directory), the figure to keep (wall
time, a rusage field, a regex's named group or a JSON pointer in the output, or a bundled parser's field:
program_parsers), its unit and direction, a per-execution timeout and an optional `prepare` argv run once
before the campaign (a clip encoded into `{scratch}`). The runner treats it as any workload: one fresh,
pinned `python -m boardlab.pyrun program` per run, which spawns the program `iterations` times in its own
process group, times each execution and reads its rusage with wait4; gates, monitor, energy, conditions
and interleaving are the runner's. Where that launcher is not needed (a time or rusage figure, one execution
a run: `direct`), the runner spawns the program itself and `direct_result` makes the same result of it. A
failed exit, a timeout or a missing figure fails that run with the program's stderr tail. docs/extending.md
shows a plan.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from boardlab.errors import InputError, MeasurementError
from boardlab.model.worker_result import MAX_MAGNITUDE, finite_value
from boardlab.model.workload import (
    DirectExecution,
    DirectLaunch,
    LaunchOptions,
    MetricSpec,
    ParamSpec,
    ParamType,
    WorkloadSpec,
)
from boardlab.workloads.program_output import Kept, read_until_exit
from boardlab.workloads.program_parsers import PARSERS

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
SOURCES = ("wall", "rusage", "regex", "json", "parser")
RUSAGE_FIELDS = {"user_s": "s", "sys_s": "s", "cpu_s": "s", "maxrss_kib": "KiB"}
STREAMS = ("stdout", "stderr")
PLAN_KEYS = (
    "kind",
    "argv",
    "command",
    "inputs",
    "prepare",
    "prepare_each",
    "metric",
    "timeout_s",
    "iterations",
)
MAX_COMMANDS_CHECKED = 10000  # a `command` template's parameter combinations split and checked at load
STDERR_TAIL_CHARS = 600
DEFAULT_TIMEOUT_S = 600.0

# The figures every run records beside the chosen one: the program's own time and rusage.
ALWAYS = (
    MetricSpec("wall_s", "s", False, "time", help="wall time of one execution"),
    MetricSpec("user_s", "s", False, "time", help="user CPU time of one execution (wait4)"),
    MetricSpec("sys_s", "s", False, "time", help="system CPU time of one execution (wait4)"),
    MetricSpec(
        "maxrss_kib", "KiB", False, "value", help="peak resident set of the program (wait4)", tail=True
    ),
)

SPEC = WorkloadSpec(
    name="program",
    family="program",
    summary='a program of yours, declared in a plan with kind = "program" (docs/extending.md)',
    runner="python",
    params=(ParamSpec("spec", "str", None, required=True, help="the declaration, as the plan makes it"),),
    metrics=ALWAYS,
    launcher=True,
)


@dataclass(frozen=True)
class Figure:
    """Where the run's metric comes from: `source` is one of SOURCES; `arg` the rusage field, regex,
    JSON pointer or parser field; `parser` the bundled parser's name."""

    source: str
    name: str
    unit: str
    higher_is_better: bool
    arg: str = ""
    stream: str = "stdout"
    parser: str | None = None
    tail: bool = False  # the plan's `tail = true`, or maxrss_kib (a maximum): judged by the tail threshold

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Program:
    name: str
    argv: tuple[str, ...]
    figure: Figure
    timeout_s: float
    iterations: int
    inputs: tuple[tuple[str, str], ...] = ()  # name -> absolute path
    prepare: tuple[str, ...] = ()
    # `command`: one string, split as a POSIX shell splits words (shlex) once its placeholders are filled, and
    # run without a shell; `argv` is then (). How `boardlab bench` makes its commands one workload's parameter
    command: str | None = None
    prepare_each: tuple[str, ...] = ()  # run before each execution, outside its timing (bench --prepare)


# ---- the declaration in a plan ----

PlanError = Callable[[tuple, str], InputError]  # (key path inside the entry, message) -> the plan's error


def _strings(value: Any, key: str, err: PlanError) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise err(
            (key,),
            f'expected a non-empty list of strings (an argv), e.g. ["sh", "-c", "..."], found {value!r}',
        )
    return tuple(value)


def _declared_params(params: Any, err: PlanError) -> tuple[ParamSpec, ...]:
    """Each key of `params` is a parameter of the program, typed by its value(s): int, float, str or bool."""
    if not isinstance(params, dict):
        raise err(("params",), f"expected a table, found {params!r}")
    names: dict[type, ParamType] = {bool: "bool", int: "int", float: "float", str: "str"}
    out = []
    for key, value in params.items():
        values = value if isinstance(value, list) else [value]
        kinds = {type(v) for v in values}
        if len(kinds) != 1 or next(iter(kinds)) not in names:
            raise err(
                ("params", key),
                f"expected values of one type (integer, number, string or boolean), found {value!r}",
            )
        out.append(ParamSpec(key, names[kinds.pop()], None, help="a parameter of the program's argv"))
    return tuple(out)


def _inputs(table: Any, base: Path, err: PlanError) -> tuple[tuple[str, str], ...]:
    """Input files, checked before anything runs: a regular, readable file; a relative path is the plan's."""
    if not isinstance(table, dict):
        raise err(("inputs",), f'expected a table of name = "path", found {table!r}')
    out = []
    for key, value in table.items():
        if not isinstance(value, str) or not value:
            raise err(("inputs", key), f"expected a path, found {value!r}")
        path = (base / os.path.expanduser(value)).resolve()
        if not path.exists():
            raise err(("inputs", key), f"{path}: no such file; give the path of the program's input")
        if not path.is_file():
            raise err(("inputs", key), f"{path}: not a regular file")
        if not os.access(path, os.R_OK):
            raise err(("inputs", key), f"{path}: not readable by this user")
        out.append((key, str(path)))
    return tuple(out)


def _better(table: dict, err: PlanError) -> bool:
    better = table.pop("better", None)
    if better not in ("higher", "lower"):
        raise err(("metric", "better"), f'expected "higher" or "lower" (which is better), found {better!r}')
    return better == "higher"


def _figure(table: Any, err: PlanError) -> Figure:
    """`metric`: absent = wall time; else exactly one of wall, rusage, regex, json, parser."""
    if table is None:
        return Figure("wall", "wall_s", "s", False)
    if not isinstance(table, dict):
        raise err(
            ("metric",),
            "expected a table such as { regex = 'rate: (?P<value>[0-9.]+)', unit = 'MB/s', "
            "better = 'higher' }",
        )
    t = dict(table)
    given = [s for s in SOURCES if s in t]
    if len(given) != 1:
        raise err(
            ("metric",), f"give exactly one of {', '.join(SOURCES)}; found {', '.join(given) or 'none'}"
        )
    source, arg = given[0], t.pop(given[0])
    stream = t.pop("stream", "stdout")
    if stream not in STREAMS:
        raise err(("metric", "stream"), f"expected stdout or stderr, found {stream!r}")
    if source == "wall":
        fig = Figure("wall", "wall_s", "s", False)
    elif source == "rusage":
        if arg not in RUSAGE_FIELDS:
            raise err(("metric", "rusage"), f"expected one of {', '.join(RUSAGE_FIELDS)}, found {arg!r}")
        fig = Figure("rusage", arg, RUSAGE_FIELDS[arg], False, arg, tail=arg == "maxrss_kib")
    elif source == "parser":
        fig = _parser_figure(arg, t, err)
    else:
        fig = _output_figure(source, arg, t, stream, err)
    if t:
        raise err(("metric", next(iter(t))), "unknown key for this metric source")
    return fig


def _parser_figure(name: Any, t: dict, err: PlanError) -> Figure:
    parser = PARSERS.get(name) if isinstance(name, str) else None
    if parser is None:
        raise err(("metric", "parser"), f"unknown parser {name!r}; bundled: {', '.join(PARSERS)}")
    field = t.pop("field", parser.fields[0][0])
    found = next((f for f in parser.fields if f[0] == field), None)
    if found is None:
        raise err(
            ("metric", "field"),
            f"{name} has no field {field!r}; valid: {', '.join(f[0] for f in parser.fields)}",
        )
    return Figure("parser", field, found[1], found[2], field, parser.stream, parser.name)


def _output_figure(source: str, arg: Any, t: dict, stream: str, err: PlanError) -> Figure:
    if not isinstance(arg, str) or not arg:
        raise err(("metric", source), f"expected a string, found {arg!r}")
    name = t.pop("name", "value")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise err(("metric", "name"), f"expected a metric name (letters, digits, _ . -), found {name!r}")
    unit = t.pop("unit", None)
    if not isinstance(unit, str) or not unit:
        raise err(("metric", "unit"), 'missing unit of the figure, e.g. unit = "MB/s"')
    if source == "regex":
        try:
            groups = re.compile(arg).groupindex
        except re.error as exc:
            raise err(("metric", "regex"), f"not a regular expression: {exc}") from None
        if len(groups) != 1:
            raise err(
                ("metric", "regex"),
                "expected one named group around the number, e.g. 'rate: (?P<value>[0-9.]+)'",
            )
    elif not arg.startswith("/"):
        raise err(
            ("metric", "json"), f"expected a JSON pointer (RFC 6901) such as /results/0/rate, found {arg!r}"
        )
    tail = t.pop("tail", False)
    if not isinstance(tail, bool):
        raise err(("metric", "tail"), f"expected true or false (p99 and above, or a maximum), found {tail!r}")
    return Figure(source, name, unit, _better(t, err), arg, stream, tail=tail)


def _placeholders(argv: tuple[str, ...]) -> set[str]:
    return {m.group(1) for a in argv for m in PLACEHOLDER_RE.finditer(a) if m.group(1)}


def from_plan(entry: dict, err: PlanError, base_dir: Path, taken: Mapping[str, Any]) -> WorkloadSpec:
    """The spec of a program declared in a plan's [[workloads]] entry; pops the keys it owns (PLAN_KEYS)
    and leaves name, params and the keys every workload has to the plan's reader."""
    name = entry.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise err(("name",), f"expected a name for the program (letters, digits, _ . -), found {name!r}")
    if name in taken:
        raise err(("name",), f"{name!r} is already a workload; give the program another name")
    entry.pop("kind")
    command = _command(entry, err)
    argv = () if command is not None else _strings(entry.pop("argv", None), "argv", err)
    prepare = _strings(entry.pop("prepare"), "prepare", err) if "prepare" in entry else ()
    each = _strings(entry.pop("prepare_each"), "prepare_each", err) if "prepare_each" in entry else ()
    inputs = _inputs(entry.pop("inputs", {}), base_dir, err)
    figure = _figure(entry.pop("metric", None), err)
    timeout_s = entry.pop("timeout_s", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not 0.01 <= timeout_s <= 7 * 86400
    ):
        raise err(("timeout_s",), f"expected seconds in [0.01, 604800], found {timeout_s!r}")
    iterations = entry.pop("iterations", 1)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations <= 10000:
        raise err(("iterations",), f"expected executions per run in [1, 10000], found {iterations!r}")
    params = _declared_params(entry.get("params", {}), err)
    known = {p.name for p in params} | {k for k, _ in inputs} | {"scratch"}
    spelled = (command,) if command is not None else argv
    for key, words in (("command" if command is not None else "argv", spelled), ("prepare", prepare),
                       ("prepare_each", each)):  # fmt: skip
        unknown = sorted(_placeholders(words) - known)
        if unknown:
            raise err(
                (key,),
                f"{{{unknown[0]}}} is neither a parameter, an input nor {{scratch}}; "
                f"declared: {', '.join(sorted(known))} (write {{{{ and }}}} for literal braces)",
            )
    unused = sorted({p.name for p in params} - _placeholders(spelled + prepare + each))
    if unused:
        raise err(("params", unused[0]), f"not used in argv or prepare: write {{{unused[0]}}} where it goes")
    if command is not None:
        _split_every(command, entry.get("params", {}), dict(inputs), err)
    program = Program(name, argv, figure, float(timeout_s), iterations, inputs, prepare, command, each)
    return spec_of(program, params)


def _command(entry: dict, err: PlanError) -> str | None:
    """`command = "prog --flag {param}"`, the alternative to `argv` (one of the two)."""
    if "command" not in entry:
        return None
    if "argv" in entry:
        raise err(("command",), "give argv (a list) or command (a string), not both")
    command = entry.pop("command")
    if not isinstance(command, str) or not command.strip():
        raise err(("command",), f'expected a command line such as "xz -6 -c {{input}}", found {command!r}')
    return command


def _split_every(command: str, params: dict, inputs: dict, err: PlanError) -> None:
    """Every parameter combination of a `command` template splits into words (balanced quotes): checked when
    the plan is loaded, not found by the run that would fail."""
    import itertools
    import shlex

    names = sorted(params)
    lists = [params[n] if isinstance(params[n], list) else [params[n]] for n in names]
    for combo in itertools.islice(itertools.product(*lists), MAX_COMMANDS_CHECKED):
        line = substitute(
            (command,), {**inputs, "scratch": "/scratch", **dict(zip(names, combo, strict=True))}
        )[0]
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise err(
                ("command",), f"{line!r} cannot be split into words ({exc}): balance its quotes"
            ) from None
        if not words:
            raise err(("command",), f"{line!r} names no program")


def spec_of(program: Program, params: tuple[ParamSpec, ...] = ()) -> WorkloadSpec:
    source = f"{program.figure.source} of {(program.argv or (program.command,))[0]}"
    primary = MetricSpec(
        program.figure.name,
        program.figure.unit,
        program.figure.higher_is_better,
        "value",
        help=source,
        tail=program.figure.tail,
    )
    extra = tuple(m for m in ALWAYS if m.name != primary.name)
    if program.figure.parser:
        parser = PARSERS[program.figure.parser]
        extra += tuple(MetricSpec(f, u, h, "value") for f, u, h in parser.fields if f != primary.name)
    inputs = tuple(ParamSpec(k, "str", v, help="an input file") for k, v in program.inputs)
    return WorkloadSpec(
        name=program.name,
        family="program",
        summary=(program.command or " ".join(program.argv))[:100],
        runner="python",
        params=params + inputs,  # inputs as defaults: runs.drop_caches evicts them before each run
        metrics=(primary, *extra),
        unsupported_reason=missing_program(program),
        measured_argv=functools.partial(measured_argv, program),
        direct=functools.partial(direct, program),
        prepare=functools.partial(prepare, program) if program.prepare else None,
        run_timeout_s=program.timeout_s * program.iterations,
        launcher=True,
    )


def missing_program(program: Program) -> str | None:
    """Why the program (or its prepare step) cannot start here: not installed, with Debian's package. A
    `command` template's program is checked when it names one itself (not a {placeholder})."""
    import shlex

    try:
        first = shlex.split(program.command)[:1] if program.command is not None else program.argv
    except ValueError:  # quotes balanced only once filled: each filled command was split at load
        first = ()
    for argv in (first, program.prepare, program.prepare_each):
        if argv and not PLACEHOLDER_RE.search(argv[0]) and shutil.which(argv[0]) is None:
            parser = PARSERS.get(program.figure.parser or "")
            hint = f" (Debian: apt-get install {parser.debian_package})" if parser else ""
            return f"{argv[0]}: not found on PATH{hint}"
    return None


# ---- the measured run ----


@functools.cache  # one directory per name and process: the cache is what makes it one
def scratch_dir(name: str) -> str:
    """A private directory per program and boardlab process (its prepared inputs), removed at exit."""
    path = tempfile.mkdtemp(prefix=f"boardlab-{name}-")
    atexit.register(shutil.rmtree, path, True)
    return path


def substitute(words: tuple[str, ...], values: Mapping[str, Any]) -> list[str]:
    def one(m: re.Match) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        value = values[m.group(1)]
        return str(value).lower() if isinstance(value, bool) else str(value)

    return [PLACEHOLDER_RE.sub(one, w) for w in words]


def _values(program: Program, params: Mapping) -> dict:
    values = {**dict(program.inputs), **params}
    words = (
        program.argv
        + program.prepare
        + program.prepare_each
        + ((program.command,) if program.command else ())
    )
    if "scratch" in _placeholders(words):
        values["scratch"] = scratch_dir(program.name)
    return values


def _declaration(program: Program, params: Mapping) -> dict:
    """One run's declaration, its placeholders filled: what the launcher worker is given (`--param spec=`)."""
    values = _values(program, params)
    decl = {
        "name": program.name,
        "argv": command_argv(program, values),
        "figure": program.figure.to_dict(),
        "timeout_s": program.timeout_s,
    }
    if program.prepare_each:
        decl["prepare_each"] = substitute(program.prepare_each, values)
    return decl


def measured_argv(program: Program, params: Mapping, options: LaunchOptions) -> list[str]:
    """One run: `python -m boardlab.pyrun program` with the substituted declaration."""
    spec = json.dumps(_declaration(program, params), separators=(",", ":"))
    return [sys.executable, "-m", "boardlab.pyrun", "program", "--param", f"spec={spec}",
            "--iterations", str(program.iterations), "--json"]  # fmt: skip


def direct(program: Program, params: Mapping) -> DirectLaunch | None:
    """The run as the runner makes it itself, with no launcher worker (no interpreter start-up per run), when
    nothing but the launcher can do what the run needs: the figure is its time or rusage (no output is read
    for it) and one execution per run (a prepare_each runs before it, as the launcher runs it). Else None:
    the launcher runs it (`measured_argv`)."""
    if program.figure.source not in ("wall", "rusage") or program.iterations != 1:
        return None
    decl = _declaration(program, params)
    return DirectLaunch(
        workload=SPEC.name,
        argv=tuple(decl["argv"]),
        timeout_s=program.timeout_s,
        params={"spec": json.dumps(decl, separators=(",", ":"))},
        result=functools.partial(direct_result, decl),
        before=tuple(decl.get("prepare_each", ())),
    )


def direct_result(decl: dict, executions: tuple[DirectExecution, ...]) -> dict:
    """The worker result's body for the executions the runner made (`direct`: the prepare_each, if any, then
    the program, unless the prepare_each failed): what `run` returns for them."""
    argvs = ([decl["prepare_each"]] if "prepare_each" in decl else []) + [decl["argv"]]
    made = iter([_execution(a, ex, decl["timeout_s"]) for a, ex in zip(argvs, executions, strict=False)])
    return _run_declared(decl, 1, lambda *_, **__: next(made))


def _execution(argv: list[str], ex: DirectExecution, timeout_s: float) -> Execution:
    if ex.start_error is not None:
        return Execution(0, {}, "", "", f"cannot start {argv[0]}: {ex.start_error}")
    execution = Execution(ex.wall_ns, dict(ex.rusage), "", ex.stderr, None)
    return _judged(execution, argv, ex.exit_code, ex.timed_out, timeout_s)


def command_argv(program: Program, values: Mapping) -> list[str]:
    """The argv of one execution: `argv` with its placeholders filled, or `command` filled and split into
    words (shlex, as a POSIX shell splits them; no shell runs it)."""
    import shlex

    if program.command is None:
        return substitute(program.argv, values)
    return shlex.split(substitute((program.command,), values)[0])


def prepare(program: Program, params: Mapping, note: Callable[[str], None]) -> None:
    """The `prepare` argv, once per parameter set before the campaign stores anything."""
    argv = substitute(program.prepare, _values(program, params))
    note(f"{program.name}: preparing: {' '.join(argv)}")
    ex = execute(argv, program.timeout_s, stdout=False)
    if ex.error:
        raise MeasurementError(f"{program.name}: prepare failed: {ex.error}")


@dataclass(frozen=True)
class Execution:
    wall_ns: int
    rusage: dict[str, int]
    stdout: str
    stderr: str
    error: str | None  # a failed exit or a timeout, with the stderr tail
    # per stream: None when it was kept whole, else what of it was (program_output.Kept.text)
    cut: Mapping[str, str | None] = dataclasses.field(default_factory=dict)

    def stderr_tail(self) -> str:
        """The end of stderr for an error message, or what kept it from being read."""
        tail = self.stderr.strip()[-STDERR_TAIL_CHARS:]
        cut = self.cut.get("stderr")
        if cut and not tail:
            return f"(none read: {cut})"
        return tail or "(no stderr)"


def execute(argv: list[str], timeout_s: float, *, stdout: bool = True) -> Execution:
    """One execution in its own process group (killed with it at the timeout), its output read through
    pipes (program_output), reaped with wait4. `stdout=False`: its stdout goes to /dev/null, as hyperfine
    sends it, where no figure is read from it: the launcher, on the program's CPU, then reads no pipe while
    the program runs but its stderr (kept for the error of a failed run)."""
    import subprocess

    from boardlab.platform.spawn import Deadline, owned, spawn, wait_rusage

    t0 = time.monotonic_ns()
    try:
        proc = spawn(argv, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL)
    except OSError as exc:
        return Execution(0, {}, "", "", f"cannot start {argv[0]}: {exc.strerror}")
    out, err = Kept("stdout"), Kept("stderr")
    deadline = Deadline(proc, timeout_s)
    with owned(proc):
        try:
            ended_ns = read_until_exit(proc, out, err)
            code, rusage = wait_rusage(proc, deadline)
        finally:
            deadline.disarm()  # wait_rusage disarmed it already unless the wait failed or was stopped
    wall_ns = (ended_ns or time.monotonic_ns()) - t0
    with contextlib.suppress(ProcessLookupError):  # what the program left running in its group
        os.killpg(proc.pid, signal.SIGKILL)
    (out_text, out_cut), (err_text, err_cut) = out.text(), err.text()
    ex = Execution(wall_ns, rusage, out_text, err_text, None, {"stdout": out_cut, "stderr": err_cut})
    return _judged(ex, argv, code, deadline.fired, timeout_s)


def _judged(ex: Execution, argv: list[str], code: int, timed_out: bool, timeout_s: float) -> Execution:
    """The execution with its error: a timeout, else a failed exit, each with the stderr tail."""
    if timed_out:
        why = f"timed out after {timeout_s:g} s (timeout_s): killed with its process group"
        return dataclasses.replace(ex, error=f"{why}; stderr: {ex.stderr_tail()}")
    if code != 0:
        return dataclasses.replace(ex, error=f"{argv[0]} exited {code}; stderr: {ex.stderr_tail()}")
    return ex


def json_pointer(doc: Any, pointer: str) -> Any:
    """RFC 6901: /a/0/b~1c -> doc["a"][0]["b/c"]; KeyError/IndexError/TypeError when it names nothing."""
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc


def figures(figure: Figure, ex: Execution) -> tuple[dict[str, tuple[float, str, bool]], str | None]:
    """Every figure of one execution (its time and rusage, and the chosen figure), or why the chosen one
    is missing. Every figure is a finite number of at most MAX_MAGNITUDE in size: the chosen one beyond
    fails the run with the reason, a parser's other figures beyond are left out."""
    ru = ex.rusage
    user, sys_ = ru.get("utime_us", 0) / 1e6, ru.get("stime_us", 0) / 1e6
    out = {
        "wall_s": (ex.wall_ns / 1e9, "s", False),
        "user_s": (user, "s", False),
        "sys_s": (sys_, "s", False),
        "maxrss_kib": (float(ru.get("maxrss_kib", 0)), "KiB", False),
    }
    if figure.source == "rusage" and figure.arg == "cpu_s":
        out["cpu_s"] = (user + sys_, "s", False)
    if figure.source in ("wall", "rusage"):
        return out, None
    found, why = _read_figure(figure, ex.stdout if figure.stream == "stdout" else ex.stderr)
    if why is None and figure.name not in found:
        why = f"the {figure.parser} parser found no such figure on {figure.stream}"
    elif why is None and not finite_value(found[figure.name][0]):
        why = f"{found[figure.name][0]!r:.40} is not a finite number of at most {MAX_MAGNITUDE:g} in size"
    if why is not None:
        cut = ex.cut.get(figure.stream)
        return out, f"metric {figure.name}: {why}" + (
            f" ({cut})" if cut else ""
        ) + f"; stderr: {ex.stderr_tail()}"
    out.update((k, (float(v), u, h)) for k, (v, u, h) in found.items() if finite_value(v))
    return out, None


def _read_figure(figure: Figure, text: str) -> tuple[dict[str, tuple[Any, str, bool]], str | None]:
    """The figures in a program's output by the figure's regex, JSON pointer or parser, as read (a JSON
    number is not yet converted: an integer of 400 digits is no float), or why none was found."""
    if figure.source == "parser":
        return dict(PARSERS[str(figure.parser)].parse(text)), None
    if figure.source == "regex":
        m = re.search(figure.arg, text, re.MULTILINE)
        group = next(iter(re.compile(figure.arg).groupindex))
        if m is None:
            return {}, f"regex {figure.arg!r} on {figure.stream}: no match"
        try:
            return {figure.name: (float(m.group(group)), figure.unit, figure.higher_is_better)}, None
        except (TypeError, ValueError):
            return {}, f"regex {figure.arg!r} on {figure.stream}: {m.group(group)!r} is not a number"
    try:
        value = json_pointer(json.loads(text), figure.arg)
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        return {}, f"JSON pointer {figure.arg} on {figure.stream}: {type(exc).__name__} {str(exc)[:200]}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return {}, f"{figure.arg} is {value!r:.60}, not a number"
    return {figure.name: (value, figure.unit, figure.higher_is_better)}, None


def run(params: dict, iterations: int | None = None) -> dict:
    """The body of one worker result: the program executed `iterations` times, each time and figure kept."""
    return _run_declared(json.loads(params["spec"]), iterations or 1, execute)


def _run_declared(decl: dict, iterations: int, execute: Callable[..., Execution]) -> dict:
    """`run`'s body, each execution made by `execute` (argv, timeout_s, stdout=...): by this launcher, or
    the one the runner made itself (`direct_result`)."""
    from boardlab.workloads.ai_inference import _summary  # the one per-iteration summary of Python workloads

    figure = Figure(**decl["figure"])
    series: dict[str, list[float]] = {}
    units: dict[str, tuple[str, bool]] = {}
    times: list[int] = []
    errors: list[str] = []
    cuts: list[str] = []
    done: list[Execution] = []  # every execution that ran, failed ones included: their time was spent
    each = decl.get("prepare_each")
    reads_stdout = figure.source in ("regex", "json", "parser") and figure.stream == "stdout"
    for _ in range(iterations):
        if each:  # outside the execution's timing (bench --prepare: a cache dropped, a file restored)
            before = execute(each, decl["timeout_s"], stdout=False)
            if before.error:
                errors.append(f"prepare_each failed: {before.error}")
                break
        ex = execute(decl["argv"], decl["timeout_s"], stdout=reads_stdout)
        done.append(ex)
        if ex.error:
            errors.append(ex.error)
            break
        found, missing = figures(figure, ex)
        if missing:
            errors.append(missing)
            break
        times.append(ex.wall_ns)
        cut = ex.cut.get(figure.stream) if figure.source not in ("wall", "rusage") else None
        if cut:
            cuts.append(cut)
        for key, (value, unit, hib) in found.items():
            series.setdefault(key, []).append(value)
            units[key] = (unit, hib)
    metrics = {k: _summary(v, *units[k]) for k, v in series.items() if len(v) == len(times)}
    return {
        "ok": not errors,
        "errors": errors,
        "metrics": metrics if not errors else {},
        "iterations_ns": times,
        "info": {"argv": decl["argv"], "figure": dict(decl["figure"])},  # Figure.to_dict's, made once
        "warnings": _searched_in_part(figure, cuts, len(times)),
        "launched": _launched(done),
    }


def _launched(done: list[Execution]) -> dict:
    """The programs' own times (model.worker_result.LaunchedTimes): the run's time columns, the launcher's
    start-up and output reading left out."""
    return {
        "wall_ns": sum(ex.wall_ns for ex in done),
        "utime_us": sum(ex.rusage.get("utime_us", 0) for ex in done),
        "stime_us": sum(ex.rusage.get("stime_us", 0) for ex in done),
        "maxrss_kib": max((ex.rusage.get("maxrss_kib", 0) for ex in done), default=0),
        "executions": len(done),
    }


def _searched_in_part(figure: Figure, cuts: list[str], executions: int) -> list[str]:
    """The run's warning when its figure was read from part of the program's output, in some execution."""
    if not cuts:
        return []
    where = f" (in {len(cuts)} of {executions} executions)" if executions > 1 else ""
    return [f"metric {figure.name} was read from part of the output: {cuts[0]}{where}"]
