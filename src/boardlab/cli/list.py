"""`boardlab list`: every workload with its support status, parameters and metrics."""

from __future__ import annotations

import json
import sys

HELP = "list workloads (with support status, parameters and metrics)"
DESCRIPTION = "List every workload boardlab can run here; unsupported ones show why."


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print a versioned JSON document")
    parser.add_argument("--family", help="only workloads of this family (e.g. scimark, mem, compress)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show parameters and metrics")
    parser.add_argument("--presets", action="store_true", help="list the bundled campaign presets instead")


def _range(p) -> str:
    if p.choices:
        return "{" + ",".join(p.choices) + "}"
    if p.min is not None and p.max is not None:
        return f"[{p.min:g}..{p.max:g}]"
    return p.type


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


def run(args) -> int:
    from boardlab.model import SCHEMA_VERSION
    from boardlab.workloads import all_workloads

    if args.presets:
        return _presets(args)
    workloads = [w for w in all_workloads() if not args.family or w.family == args.family]
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
