"""`boardlab bench CMD [CMD ...]`: commands benchmarked head to head in one line, as hyperfine spells it, and
measured as boardlab measures: the commands become one program workload's `command` parameter (compared
with the first), each `--under` condition is compared with the baseline, and the plan this writes runs
through the same runner as `boardlab run` (fresh pinned runs, interleaved, monitored, stored, analysed with
the corrected verdicts). Nothing here measures: the campaign is kept in --db like any other, so `report`,
`history` and `serve` read it.
"""

from __future__ import annotations

import json
import shlex
import sys

DESCRIPTION = (
    "Benchmark one or more commands, each run as a fresh pinned program execution, interleaved, under the "
    "baseline and each --under condition: each command's median with its 95% CI, each command against the "
    "first ('B is 1.52 [1.49, 1.55] times slower than A') and each condition against the baseline with its "
    "verdict, and the runs' outlier, bimodality and drift warnings. The number of runs is the power advice's "
    "(80% power to detect a 5% effect), or --runs N. The campaign is an ordinary one in --db (written as a "
    "plan: --plan-out keeps it), so `boardlab report`, `history` and `serve` work on it."
)
DEFAULT_DB = "boardlab.db"
MAX_COMMANDS = 200  # commands after the parameters are expanded
SHELL_TOKENS = set("|&;<>()")


def add_arguments(parser) -> None:
    from boardlab.cli.run import add_full_check_argument, add_wait_arguments

    parser.add_argument(
        "commands", nargs="+", metavar="CMD", help="a command line, split as a shell splits it"
    )
    parser.add_argument(
        "-n", "--command-name", action="append", default=[], metavar="NAME",
        help="a name for each command, in order (default: the command line)",
    )  # fmt: skip
    parser.add_argument(
        "--under", action="append", default=[], metavar="CONDITION",
        help="also run every command under this condition, compared with the baseline: a condition of a "
        "preset (e.g. memcpy-same) or KIND:VALUE or KIND:KEY=VALUE,... (stressor:cpu, "
        "stressor:stressor=vm,workers=2); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--prepare", metavar="CMD", help="run before each execution of every command, outside its timing"
    )
    parser.add_argument(
        "-P", "--parameter-scan", nargs=3, metavar=("NAME", "MIN", "MAX"),
        help="run each command for NAME = MIN, MIN + step, ..., MAX, written {NAME} in the commands",
    )  # fmt: skip
    parser.add_argument(
        "-D", "--parameter-step-size", metavar="STEP", help="the scan's step (default 1; needed for decimals)"
    )
    parser.add_argument(
        "-L", "--parameter-list", nargs=2, action="append", default=[], metavar=("NAME", "VALUES"),
        help="run each command for each of VALUES (comma-separated), written {NAME}; repeatable, each time "
        "with another NAME (and not --parameter-scan's)",
    )  # fmt: skip
    parser.add_argument(
        "--threads", default="1", metavar="1|N|none",
        help="the CPUs each execution may use: 1 (default: pinned to one CPU, as boardlab pins), N (pinned "
        "to the last N online CPUs, for a program of N threads), none (not pinned)",
    )  # fmt: skip
    parser.add_argument(
        "--runs", type=int, metavar="N", help="runs per command and condition (default: the power advice)"
    )
    parser.add_argument(
        "-S", "--shell", metavar="SHELL",
        help="run each command through SHELL -c (its start-up is then measured with it); by default no shell "
        "runs, and a command using shell syntax is refused",
    )  # fmt: skip
    parser.add_argument(
        "--idle-gate", action="store_true",
        help="before each run, wait for other load below 5%% (at most 30 s), as plans do by default",
    )  # fmt: skip
    parser.add_argument("--db", default=DEFAULT_DB, help=f"results database (default {DEFAULT_DB})")
    parser.add_argument("--name", help="the campaign's plan name (default bench- and a hash of the commands)")
    parser.add_argument(
        "--plan-out", metavar="FILE", help="also write the plan this runs (`boardlab run FILE` runs it again)"
    )
    parser.add_argument(
        "--export-json", metavar="FILE", help="the result as JSON (`results` in hyperfine's layout)"
    )
    parser.add_argument("--export-markdown", metavar="FILE", help="the result as Markdown tables")
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    parser.add_argument("--quiet", action="store_true", help="print only failures and the result")
    parser.add_argument("--label", metavar="TEXT", help="as `run --label`")
    parser.add_argument("--commit", metavar="auto|SHA", help="as `run --commit`")
    parser.add_argument("--branch", metavar="NAME", help="as `run --branch`")
    parser.add_argument("--source-dir", metavar="DIR", help="as `run --source-dir`")
    add_wait_arguments(parser)
    add_full_check_argument(parser)


# ---- the commands, with their parameters ----


def _scan_values(args) -> list[str]:
    from decimal import Decimal, InvalidOperation

    from boardlab.errors import InputError

    name, lo_t, hi_t = args.parameter_scan
    try:
        lo, hi = Decimal(lo_t), Decimal(hi_t)
        step = Decimal(args.parameter_step_size or "1")
        if not all(d.is_finite() for d in (lo, hi, step)):  # a nan cannot be compared (InvalidOperation)
            raise InvalidOperation
    except InvalidOperation:
        raise InputError(
            f"--parameter-scan {name} {lo_t} {hi_t}: MIN, MAX (and -D STEP) must be numbers"
        ) from None
    if step <= 0 or hi < lo or (hi - lo) / step > 1000:
        raise InputError(
            f"--parameter-scan {name}: expected MIN <= MAX, a positive step and at most 1000 values"
        )
    if args.parameter_step_size is None and (lo != lo.to_integral() or hi != hi.to_integral()):
        raise InputError(f"--parameter-scan {name} {lo_t} {hi_t}: decimals need -D STEP")
    out, v = [], lo
    while v <= hi:
        out.append(str(v.normalize()) if v != v.to_integral() else str(int(v)))
        v += step
    return out


def _parameters(args) -> list[tuple[str, list[str]]]:
    """(name, values) of --parameter-scan or each --parameter-list, as hyperfine takes them."""
    import re

    from boardlab.errors import InputError

    if args.parameter_step_size is not None and not args.parameter_scan:
        raise InputError("--parameter-step-size is the step of --parameter-scan: give that too")
    given = []  # (option, name, values)
    if args.parameter_scan:
        given.append(("--parameter-scan", args.parameter_scan[0], _scan_values(args)))
    for name, values in args.parameter_list:
        given.append(("--parameter-list", name, values.split(",")))
    _check_names_once(given)
    params = [(name, values) for _, name, values in given]
    for name, values in params:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise InputError(f"parameter {name!r}: expected a name of letters, digits and _")
        if not all(values) or len(set(values)) != len(values):
            raise InputError(
                f"parameter {name}: expected distinct, non-empty values, found {','.join(values)!r}"
            )
        if not any(f"{{{name}}}" in c for c in args.commands):
            raise InputError(f"parameter {name}: no command uses {{{name}}}; write it where the value goes")
    return params


def _check_names_once(given: list[tuple[str, str, list[str]]]) -> None:
    """A name given twice would be substituted with its first values only, the second silently dropped."""
    from boardlab.errors import InputError

    for i, (option, name, _) in enumerate(given):
        again = next((o for o, n, _ in given[i + 1 :] if n == name), None)
        if again:
            raise InputError(
                f"parameter {name}: given twice ({option} {name} and {again} {name}); give it once, with "
                f"all its values (-L {name} V1,V2,...)"
            )


def expand(args) -> list[tuple[str, str]]:
    """(name, command line) of every command with every combination of the parameters' values."""
    import itertools

    from boardlab.errors import InputError

    if args.command_name and len(args.command_name) != len(args.commands):
        raise InputError(
            f"-n/--command-name: {len(args.command_name)} names for {len(args.commands)} commands"
        )
    params = _parameters(args)
    out: list[tuple[str, str]] = []
    for i, command in enumerate(args.commands):
        name = args.command_name[i] if args.command_name else command
        for combo in itertools.product(*(values for _, values in params)):
            line, label = command, name
            for (p, _), v in zip(params, combo, strict=True):
                line, label = line.replace(f"{{{p}}}", v), label.replace(f"{{{p}}}", v)
            out.append((label, line))
    lines = [line for _, line in out]
    if len(set(lines)) != len(lines):
        raise InputError("the same command line twice: each command must differ from the others")
    if len(out) > MAX_COMMANDS:
        raise InputError(f"{len(out)} commands after the parameters: at most {MAX_COMMANDS}")
    return out


def _words(line: str, what: str) -> list[str]:
    """A command line split into words as a POSIX shell splits them; shell syntax (pipes, redirections,
    expansions) is refused with the fix, since no shell runs it."""
    from boardlab.errors import InputError

    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        words = shlex.split(line)
    except ValueError as exc:
        raise InputError(f"{what} {line!r}: cannot be split into words ({exc}); balance its quotes") from None
    if not words:
        raise InputError(f"{what} {line!r}: names no program")
    syntax = [t for t in tokens if t and set(t) <= SHELL_TOKENS] + [c for c in ("$", "`") if c in line]
    if syntax:
        raise InputError(
            f"{what} {line!r} uses shell syntax ({syntax[0]}) but no shell runs it: give --shell sh (its "
            "start-up is then measured with the command), or write a script and bench that"
        )
    return words


def _check_runnable(argv0: str, what: str) -> None:
    import shutil

    from boardlab.errors import InputError

    if shutil.which(argv0) is None:
        raise InputError(
            f"{what}: {argv0}: not found on PATH (nor an executable path); install it or fix the name"
        )


# ---- the plan ----


def _typed(text: str):
    """A KIND:KEY=VALUE value as TOML would type it: integer, number, boolean, else string."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def condition_table(spec: str) -> dict:
    """--under SPEC: a condition of a preset (by name), or KIND:VALUE (the kind's first parameter) or
    KIND:KEY=VALUE,... ; the [[conditions]] table it becomes."""
    import tomllib

    from boardlab.campaign.plan import preset_names, preset_text
    from boardlab.conditions import condition_kinds
    from boardlab.errors import InputError

    kinds = condition_kinds()
    kind, sep, rest = spec.partition(":")
    if not sep:
        for preset in preset_names():
            for c in tomllib.loads(preset_text(preset)).get("conditions", []):
                if c.get("name") == spec:
                    return {k: v for k, v in c.items() if k not in ("workloads", "baseline")}
        raise InputError(
            f"--under {spec}: no preset has a condition of that name; give KIND:VALUE or KIND:KEY=VALUE,... "
            f"with a kind of: {', '.join(sorted(k for k in kinds if k != 'baseline'))}"
        )
    if kind not in kinds or kind == "baseline":
        raise InputError(
            f"--under {spec}: unknown condition kind {kind!r}; kinds: {', '.join(sorted(kinds))}"
        )
    params: dict = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:  # KIND:VALUE: the kind's first parameter (a stressor's stressor)
            key, value = kinds[kind].params[0].name, item
        if key in params:
            raise InputError(f"--under {spec}: {key} given twice")
        params[key] = _typed(value)
    return {"name": spec, "kind": kind, "params": params}


def pinning(threads: str, online: tuple[int, ...]) -> tuple[object, str]:
    """--threads as the plan's [runs] cpu, and how the output says it."""
    from boardlab.errors import InputError

    if threads == "none":
        return "none", "not pinned (--threads none): the scheduler places each execution"
    if not threads.isdigit() or int(threads) < 1:
        raise InputError(f"--threads {threads!r}: expected 1, a number of CPUs, or none")
    n = int(threads)
    if n == 1:
        return "auto", "pinned to one CPU (--threads 1; a program running N threads wants --threads N)"
    if n > len(online):
        raise InputError(
            f"--threads {n}: this board has {len(online)} online CPUs; give at most that, or none"
        )
    cpus = list(online[-n:])
    return cpus, f"pinned to CPUs {', '.join(map(str, cpus))} (--threads {n})"


def plan_text(args, commands: list[tuple[str, str]], conditions: list[dict], cpu, repetitions: int) -> str:
    """The plan this bench runs (campaign.benchplan): `boardlab run` runs it the same."""
    from boardlab.campaign.benchplan import BenchPlan
    from boardlab.campaign.benchplan import plan_text as text

    prepare: tuple[str, ...] = ()
    if args.prepare:
        prepare = (args.shell, "-c", args.prepare) if args.shell else tuple(_words(args.prepare, "--prepare"))
    return text(
        BenchPlan(
            commands=tuple(line for _, line in commands),
            conditions=tuple(conditions),
            repetitions=repetitions,
            cpu=cpu,
            shell=args.shell,
            idle_gate=args.idle_gate,
            prepare_each=prepare,
            # --runs N: N runs of every cell, as hyperfine runs each command N times; the power advice's
            # count is per arm, the reference shared by several comparisons getting more (docs/method.md)
            allocation="equal" if args.runs is not None else "sqrt",
            name=args.name,
            comment=f"written by boardlab bench: {shlex.join(sys.argv[1:])}",
        )
    )


# ---- running it ----


def _plan(args, text: str, catalog: dict):
    from boardlab.campaign.plan import PlanError, parse_plan
    from boardlab.errors import InputError

    try:
        return parse_plan(text, f"bench ({args.name or 'generated'})", catalog)
    except PlanError as exc:
        raise InputError(_in_options(exc, args)) from None


def _in_options(exc, args) -> str:
    """A refusal of the plan bench generated, in the words the user typed: its `conditions[k]` is the k-th
    distinct --under (0 the baseline); the plan's own place is kept at the end."""
    from boardlab.campaign.plan import dotted

    path, unders = exc.path, list(dict.fromkeys(args.under))
    if path[:1] != ("conditions",) or len(path) < 2 or not 1 <= path[1] <= len(unders):
        return str(exc)
    k, rest = path[1], dotted(path[2:])
    where = f"{unders[k - 1]}: {rest}" if rest else unders[k - 1]
    return f"--under {where}: {exc.detail} (conditions[{k}] of the plan it generates)"


def _repetitions(args, commands, conditions, cpu, catalog) -> tuple[int, str]:
    """--runs, else the power advice for this plan (campaign.reach: 80% power to detect 2.5 x the 2%
    threshold at the CV of earlier runs of these cells in --db, else an assumed one)."""
    from boardlab.campaign.plan import plan_catalog
    from boardlab.campaign.reach import summarize_plan
    from boardlab.errors import InputError

    if args.runs is not None:
        if not 2 <= args.runs <= 10000:
            raise InputError(f"--runs {args.runs}: expected 2 to 10000")
        return args.runs, "--runs"
    plan = _plan(args, plan_text(args, commands, conditions, cpu, 5), catalog)
    d = summarize_plan(plan, plan_catalog(plan, catalog), db=args.db, root="/").to_dict()
    if not d["power"]:
        return 10, "one command under the baseline alone: no comparison, 10 runs"
    return d["repetitions_for_power"], f"the power advice: {d['power'][0]['advice']}"


def run(args) -> int:
    from boardlab.campaign.identity import resolve
    from boardlab.campaign.plan import plan_catalog
    from boardlab.cli.run import check_campaign_options, execute_plan
    from boardlab.platform.cpu import online_cpus
    from boardlab.workloads import all_workloads

    check_campaign_options(args)
    commands = expand(args)
    _check_outputs(args)
    for name, line in commands:
        words = [args.shell] if args.shell else _words(line, "command")
        _check_runnable(words[0], f"command {name!r}")
    if args.prepare:
        _check_runnable(args.shell or _words(args.prepare, "--prepare")[0], "--prepare")
    conditions = [condition_table(spec) for spec in dict.fromkeys(args.under)]
    cpu, pinned = pinning(args.threads, tuple(online_cpus("/")))
    identity = resolve(args.commit, args.branch, args.source_dir)
    catalog = {w.name: w for w in all_workloads()}
    n, basis = _repetitions(args, commands, conditions, cpu, catalog)
    text = plan_text(args, commands, conditions, cpu, n)
    plan = _plan(args, text, catalog)
    catalog = plan_catalog(plan, catalog)  # and the command's program
    if args.plan_out:
        from boardlab.export import write_output

        write_output(args.plan_out, text.encode(), protect=[args.db], option="--plan-out")
    args.root, args.monitor_hz = "/", 10.0
    if not args.quiet:
        print(f"{plan.name}: {len(commands)} command(s) x {1 + len(conditions)} condition(s), {n} runs each "
              f"({basis}); {pinned}", file=sys.stderr)  # fmt: skip
    got = execute_plan(plan, catalog, args, identity, fresh=True)
    if isinstance(got, int):
        return got
    outcome, progress = got
    return _report(args, outcome, dict(commands), n, basis, pinned, progress)


def _report(args, outcome, names_by_line: dict, n: int, basis: str, pinned: str, progress) -> int:
    from boardlab.analysis import analyze
    from boardlab.analysis.bench import bench_document, bench_result
    from boardlab.report.escape import term
    from boardlab.store import Store

    with Store.open(args.db, create=False) as store:
        analysis = analyze(store, outcome.campaign_id)
    names = {line: name for name, line in names_by_line.items()}
    facts = {"db": args.db, "runs_per_cell": n, "runs_basis": basis, "pinning": pinned,
             "shell": args.shell, "idle_gate": args.idle_gate, "runs_done": outcome.runs_done,
             "loop_s": outcome.loop_s}  # fmt: skip
    d = bench_result(analysis, names, facts)
    if args.export_json:
        _write(args.export_json, json.dumps(d, indent=1, allow_nan=False) + "\n", args.db, "--export-json")
    if args.export_markdown:
        from boardlab.report.render import render_document

        _write(args.export_markdown, render_document(bench_document(d), "md"), args.db, "--export-markdown")
    if args.json:
        print(json.dumps(d, allow_nan=False))
    else:  # on stderr beside an output on stdout (--export-json -), which then holds that document alone
        out = sys.stderr if any(path == "-" for _, path in _outputs(args)) else sys.stdout
        print("\n".join(term(line) for line in text_of(d).splitlines()), file=out)
        print(f"campaign {outcome.campaign_id} in {term(args.db)}: boardlab report --db "
              f"{shlex.quote(term(args.db))} --campaign {outcome.campaign_id} -o report.html",
              file=out)  # fmt: skip
    if progress.measured_nothing:
        print(f"boardlab bench: all {progress.failures} runs failed: nothing was measured", file=sys.stderr)
        return 1
    return 0


def _outputs(args) -> list[tuple[str, str]]:
    """(option, path) of each output given besides --db; "-" is stdout."""
    given = (("--plan-out", args.plan_out), ("--export-json", args.export_json),
             ("--export-markdown", args.export_markdown))  # fmt: skip
    return [(option, path) for option, path in given if path]


def _check_outputs(args) -> None:
    """The outputs are refused before the campaign, not after its runs (which the store keeps): each must
    be writable, no two may be one file (only the last written would be left; a new --db is not yet there
    for check_output to see), and stdout holds one document."""
    from boardlab.errors import InputError
    from boardlab.export import check_output, refuse_shared_outputs

    outputs = _outputs(args)
    for option, path in outputs:
        check_output(path, protect=[args.db], option=option)
    dashes = [option for option, path in outputs if path == "-"]
    if len(dashes) + args.json > 1:
        both = [f"{option} -" for option in dashes] + ["--json"] * args.json
        fix = dashes if args.json else dashes[1:]
        raise InputError(
            f"{' and '.join(both)} each write a document to stdout, where they would run together: give "
            f"{' and '.join(fix)} a FILE"
        )
    refuse_shared_outputs([(option, path) for option, path in outputs if path != "-"] + [("--db", args.db)])


def _write(path: str, text: str, db: str, option: str) -> None:
    from boardlab.export import check_output, write_output

    check_output(path, protect=[db], option=option)  # again: the path may have changed during the runs
    write_output(path, text.encode(), protect=[db], option=option)


def text_of(d: dict) -> str:
    """The terminal's result: each command's median with its CI per condition, each comparison with its
    verdict, then the warnings."""
    from boardlab.analysis.format import fmt_interval, fmt_num

    lines = []
    for name in dict.fromkeys(c["name"] for c in d["cells"]):
        lines.append(f"{name}:")
        for c in (c for c in d["cells"] if c["name"] == name):
            ci = f"95% CI {fmt_interval(*c['median_ci'])}" if c["median_ci"] else "no CI (fewer than 6 runs)"
            lines.append(
                f"  {c['condition']:<16} median {fmt_num(c['median'])} {c['unit']}  {ci}  ({c['n']} runs)"
            )
    lines += [comparison_sentence(x) for x in d["comparisons"]]
    lines += [f"warning: {c['name']} @ {c['condition']}: {w}" for c in d["cells"] for w in c["warnings"]]
    lines += [f"warning: {x['b']} against {x['a']} @ {x['b_condition']}: {f}" for x in d["comparisons"]
              for f in x["flags"] if not f.startswith(("bimodal", "drift"))]  # fmt: skip
    return "\n".join(lines)


def comparison_sentence(x: dict) -> str:
    """'B is 1.52 [1.49, 1.55] times slower than A (under baseline): slowdown'."""
    from boardlab.analysis.format import fmt_interval, fmt_ratio

    if x["kind"] == "command":
        who, than, where = x["b"], x["a"], f" (under {x['b_condition']})"
    else:
        who, than, where = f"{x['b']} under {x['b_condition']}", f"under {x['a_condition']}", ""
    if x["ratio"] is None:
        return f"{who} against {than}{where}: no comparison ({x['reason'] or 'no valid runs'})"
    ratio, ci, word = x["ratio"], x["ratio_ci"], "slower"
    if ratio < 1:
        ratio, ci, word = 1 / ratio, [1 / ci[1], 1 / ci[0]] if ci else None, "faster"
    interval = f" {fmt_interval(*ci)}" if ci else ""
    verdict = (x["verdict"] or "no verdict").replace("_", " ")
    return f"{who} is {fmt_ratio(ratio)}{interval} times {word} than {than}{where}: {verdict}"
