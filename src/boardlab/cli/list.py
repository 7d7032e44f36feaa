"""`boardlab list`: every workload with its support status, parameters and metrics."""

from __future__ import annotations

import json
import sys

from boardlab.model.units import plain_number

DESCRIPTION = (
    "List every workload boardlab can run here; unsupported ones show why. --conditions lists the condition "
    "kinds a plan may put around a workload, with their parameters and whether this board supports them."
)


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print a versioned JSON document")
    parser.add_argument("--family", help="only workloads of this family (e.g. scimark, mem, compress)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show parameters and metrics")
    parser.add_argument("--presets", action="store_true", help="list the bundled campaign presets instead")
    parser.add_argument(
        "--conditions",
        action="store_true",
        help="list the condition kinds instead, with their parameters and support on this board",
    )
    parser.add_argument(
        "--root",
        default="/",
        metavar="DIR",
        help="with --conditions: judge support from /proc and /sys below DIR (a copied tree); tools are "
        "still looked up on this machine's PATH",
    )


def _range(p) -> str:
    if p.choices:
        return "{" + ",".join(p.choices) + "}"
    if p.min is not None or p.max is not None:
        lo = "" if p.min is None else plain_number(p.min)
        hi = "" if p.max is None else plain_number(p.max)
        return f"[{lo}..{hi}]" + "".join(f"|{w}" for w in p.words)
    if p.words:
        return f"{p.type}|" + "|".join(p.words)
    return p.type


def _conditions(args) -> int:
    from boardlab.conditions import condition_kinds
    from boardlab.model import SCHEMA_VERSION
    from boardlab.platform import inventory

    info = inventory(args.root)  # InputError (exit 2) for a root that is not a board tree
    kinds = []
    for name, kind in condition_kinds().items():
        support = getattr(kind, "support", None)
        reason, limits = support(info) if support else (None, ())
        kinds.append(
            {
                "name": name,
                "summary": kind.summary,
                "supported": reason is None,
                "reason": None if reason is None else f"unsupported: {reason}",
                "limits": list(limits),
                "params": [p.to_dict() for p in kind.params],
            }
        )
    if args.json:
        json.dump({"schema": SCHEMA_VERSION, "root": info.root, "conditions": kinds}, sys.stdout, indent=2)
        print()
        return 0
    width = max(len(k["name"]) for k in kinds)
    print(f"{'KIND':<{width}}  {'STATUS':<11}  SUMMARY")
    for k in kinds:
        print(f"{k['name']:<{width}}  {'ok' if k['supported'] else 'unsupported':<11}  {k['summary']}")
        pad = " " * (width + 2)
        if k["reason"]:
            print(f"{pad}{k['reason']}")
        for limit in k["limits"]:
            print(f"{pad}note: {limit}")
        for p in k["params"]:
            unit = f" ({p['unit']})" if p["unit"] else ""
            default = (
                "(required)"
                if p["required"]
                else f"default {p['default']}"
                if p["default"] is not None
                else "optional"
            )
            spec = next(s for s in condition_kinds()[k["name"]].params if s.name == p["name"])
            print(f"{pad}  {p['name']}{unit}  {_range(spec)}  {default}  {p['help']}")
    print('\nuse one in a plan: [[conditions]] name = "..." kind = "KIND" params = { ... }')
    return 0


def _presets(args) -> int:
    from boardlab.campaign.plan import preset_description, preset_names
    from boardlab.model import SCHEMA_VERSION

    presets = [{"name": n, "description": preset_description(n)} for n in preset_names()]
    if args.json:
        print(json.dumps({"schema": SCHEMA_VERSION, "presets": presets}, indent=2))
        return 0
    width = max(len(p["name"]) for p in presets)
    for p in presets:
        print(f"{p['name']:<{width}}  {p['description']}")
    print("\nrun one with: boardlab run --preset NAME")
    return 0


def _check_listing(args) -> None:
    """One listing at a time, and only its own options: another's would be ignored, the listing read as
    its answer (--presets --family mem as the presets of mem)."""
    from boardlab.errors import InputError

    if args.presets and args.conditions:
        raise InputError("--presets and --conditions are two listings: give one of them")
    listing = "--presets" if args.presets else "--conditions" if args.conditions else None
    for given, option in ((args.family, "--family"), (args.verbose, "-v/--verbose")):
        if given and listing:
            raise InputError(f"{option} goes with the workloads' listing, not {listing}: drop one of them")
    if args.root != "/" and not args.conditions:  # the listing shown would be this machine's
        why = (
            "presets are the same on every board"
            if args.presets
            else "a workload's support is this machine's"
        )
        raise InputError(f"--root goes with --conditions: {why}")


def run(args) -> int:
    from boardlab.errors import InputError
    from boardlab.model import SCHEMA_VERSION
    from boardlab.workloads import all_workloads

    _check_listing(args)
    if args.presets:
        return _presets(args)
    if args.conditions:
        return _conditions(args)
    workloads = [w for w in all_workloads() if not args.family or w.family == args.family]
    if args.family and not workloads:  # an empty table, exit 0, read as "nothing of that family here"
        families = sorted({w.family for w in all_workloads()})
        raise InputError(f"--family {args.family}: no such family; families: {', '.join(families)}")
    if args.json:
        json.dump(
            {"schema": SCHEMA_VERSION, "workloads": [w.to_dict() for w in workloads]}, sys.stdout, indent=2
        )
        print()
        return 0
    width = max((len(w.name) for w in workloads), default=10)
    print(f"{'WORKLOAD':<{width}}  {'STATUS':<11}  {'PRIMARY METRIC':<28}  SUMMARY")
    for w in workloads:
        status = "ok" if w.supported else "unsupported"
        metric = f"{w.primary_metric.name} ({w.primary_metric.unit})" if w.metrics else "-"
        print(f"{w.name:<{width}}  {status:<11}  {metric:<28}  {w.summary}")
        if not w.supported:
            print(f"{'':<{width}}  reason: {w.unsupported_reason}")
        if args.verbose:
            for p in w.params:
                unit = f" {p.unit}" if p.unit else ""
                print(f"{'':<{width}}    param  {p.name}={p.default}{unit}  {_range(p)}  {p.help}")
            for m in w.metrics:
                better = "higher" if m.higher_is_better else "lower"
                print(f"{'':<{width}}    metric {m.name} [{m.unit}, {better} is better]  {m.help}")
    return 0
