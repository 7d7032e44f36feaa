"""`boardlab governor`: the DVFS lab of the governor study (snoop sweep, labels, tree, daemon, simulator)."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from boardlab.errors import InputError, MeasurementError

DESCRIPTION = (
    "Reproduce the governor study on any board with cpufreq, or on the built-in big.LITTLE simulator: sweep "
    "memory latency across both clusters' frequencies (sweep), label slow cells with one-sided Welch t-tests "
    "(label), train a depth-2/3 decision tree and export it to C (train), drive scaling_setspeed with a "
    "userspace governor (run), and compare policies on traces for time, energy and EDP (simulate)."
)
SOC_NAMES = ("exynos5422", "am335x")
T1, T2, CCI_SOURCE = 2.0689, 0.02, "policy0=3,policy4=4"  # anti-snoop's defaults: the study's, on its board
ANTI_SNOOP_ONLY = ("tree", "t1", "t2", "cci_source")


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="governor_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser(
        "sweep",
        help="the snoop sweep: expand the OPP grid, write its plan (the snoop-sweep preset's), or "
        "simulate it",
    )
    p.add_argument("--root", help="without --sim: the board tree to read cpufreq from (default /)")
    p.add_argument(
        "--cluster", metavar="POLICY", help="only the grid with the task on this policy (e.g. policy0)"
    )
    p.add_argument(
        "--plan-out",
        metavar="FILE",
        help="without --sim: write the campaign plan of the grid (run it with `boardlab run FILE`)",
    )
    p.add_argument(
        "--bus-hz",
        metavar="HZ|max|min|record",
        help="with --plan-out: fix the memory-controller devfreq at this frequency (default: record it)",
    )
    p.add_argument("--sim", choices=SOC_NAMES, help="measure the grid on the simulator instead of a board")
    p.add_argument(
        "--out", metavar="FILE", help="with --sim: write the sweep (every run of every cell) as JSON"
    )
    p.add_argument(
        "--db",
        metavar="FILE",
        help="with --sim: store the sweep as a campaign (marked simulated) for `boardlab report`",
    )
    p.add_argument("--runs", type=int, help="with --sim, not --quick: runs per cell (default 10)")
    p.add_argument("--quick", action="store_true", help="with --sim: every other size, 6 runs per cell")
    p.add_argument("--json", action="store_true", help="print the grid or the sweep summary as JSON")

    p = sub.add_parser(
        "label", help="label each sweep cell slow / not slow (one-sided Welch t-test vs other at max)"
    )
    p.add_argument("sweep", nargs="?", help="a sweep JSON (`governor sweep --sim ... --out`); or give --db")
    p.add_argument(
        "--db", help="a results database holding a snoop-sweep campaign (labels are stored with it)"
    )
    p.add_argument("--campaign", type=int, help="with --db: the campaign id (default: the latest)")
    p.add_argument("--out", metavar="FILE", required=True, help="write the labels (JSON)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance after correction (default 0.05)")
    p.add_argument(
        "--min-effect", type=float, default=0.02, help="smallest slowdown worth a label (default 0.02 = 2%%)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = sub.add_parser("train", help="train the depth-2/3 decision tree on labelled cells; export JSON and C")
    p.add_argument("labels", help="a labels JSON (`governor label --out`)")
    p.add_argument("--depth", type=int, choices=(2, 3), default=3, help="tree depth (default 3)")
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds over cells (default 5)")
    p.add_argument(
        "--out", metavar="FILE", required=True, help="write the tree, its thresholds and its CV (JSON)"
    )
    p.add_argument("--c-out", metavar="FILE", help="write the tree as a C function (plain if/else, integers)")
    p.add_argument(
        "--db", help="also store the tree with this campaign of a results database (for its report)"
    )
    p.add_argument("--campaign", type=int, help="with --db: the campaign id (default: the latest)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = sub.add_parser("run", help="the userspace governor daemon (scaling_setspeed under userspace)")
    p.add_argument(
        "--policy", required=True, choices=("ondemand", "conservative", "schedutil-like", "anti-snoop")
    )
    p.add_argument(
        "--root", default="/", help="the tree to govern (default /; a simulator or fixture copy in tests)"
    )
    p.add_argument(
        "--sampling-ms", type=float, default=120.0, help="sampling period (default 120, the study's)"
    )
    p.add_argument("--duration-s", type=float, help="stop after this long (default: until Ctrl-C or SIGTERM)")
    p.add_argument("--tree", metavar="FILE", help="anti-snoop: a tree JSON from `governor train`")
    p.add_argument(
        "--t1", type=float, help=f"anti-snoop without --tree: cci_congestion threshold (default {T1:g})"
    )
    p.add_argument(
        "--t2", type=float, help=f"anti-snoop without --tree: memory_access threshold (default {T2:g})"
    )
    p.add_argument(
        "--cci-source",
        help=f"anti-snoop: CCI-400 slave interface per policy (default Exynos 5422: {CCI_SOURCE})",
    )
    p.add_argument("--json", action="store_true", help="print the daemon's summary as JSON when it stops")
    p.add_argument("--no-recover", action="store_true", help=argparse_suppress())
    from boardlab.cli.run import add_wait_arguments

    add_wait_arguments(p)

    p = sub.add_parser("simulate", help="compare the policies on the simulator's traces: time, energy, EDP")
    p.add_argument("--soc", choices=SOC_NAMES, default="exynos5422")
    p.add_argument("--trace", action="append", help="a trace name (repeatable; default all)")
    p.add_argument(
        "--tree", metavar="FILE", help="the anti-snoop tree (default: trained here on a simulated sweep)"
    )
    p.add_argument(
        "--sampling-ms", type=float, default=10.0, help="the daemon's sampling period (default 10)"
    )
    p.add_argument("--html", metavar="FILE", help="also write the comparison as a self-contained HTML page")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def run(args) -> int:
    return {"sweep": _sweep, "label": _label, "train": _train, "run": _run, "simulate": _simulate}[
        args.governor_command
    ](args)


def _write(args, name: str, text: str) -> None:
    """Writes the output the user named in option `name` (out: --out): a new path or a regular file that
    is none of the command's inputs (refused with exit 2 otherwise, naming the option), replaced
    atomically; "-" is standard output."""
    from boardlab.export import write_output

    write_output(getattr(args, name), text.encode(), protect=_inputs(args), option=_option(name))


def _check_outputs(args, *names: str) -> None:
    """The outputs named, refused before the work rather than after it, and before a first one is written
    while a second would be refused."""
    from boardlab.export import check_output, refuse_shared_outputs

    given = [name for name in names if getattr(args, name, None)]
    for name in given:
        check_output(getattr(args, name), protect=_inputs(args), option=_option(name))
    refuse_shared_outputs((_option(n), getattr(args, n)) for n in given if getattr(args, n) != "-")


def _inputs(args) -> list[str]:
    return [
        p for p in (getattr(args, k, None) for k in ("db", "sweep", "labels", "tree")) if isinstance(p, str)
    ]


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


JSON_MAX_BYTES = 256 << 20  # a full sweep is a few MB; this bounds what a wrong path can cost


def _read_json(path: str, what: str) -> dict:
    """The JSON object of a regular file: a FIFO would block, /dev/zero would fill the memory, and a
    results database (binary) or a JSON array is not what a governor step wrote."""
    from boardlab.userfile import read_user_file

    data = read_user_file(
        path, what=what, give=f"the {what} JSON written by boardlab", max_bytes=JSON_MAX_BYTES
    )
    try:
        doc = json.loads(data.decode())
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}): give the {what} JSON") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not JSON (line {exc.lineno}): give the {what} written by boardlab"
        ) from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: a JSON {type(doc).__name__}, not the {what} object written by boardlab")
    return doc


def _open_campaign(db: str, campaign: int | None, *, write: bool = False):
    """The database read-only, or locked for writing (`label` stores its labels beside the campaign)."""

    from boardlab.store import Store

    if write and not os.path.lexists(db):
        raise InputError(f"{db}: no such results database")
    store = Store.open(db, create=write)
    ids = [r["id"] for r in store.campaigns()]
    if not ids:
        raise InputError(f"{db}: no campaign in this database")
    if campaign is None:
        return store, ids[-1]
    if campaign not in ids:
        raise InputError(f"--campaign {campaign}: not in {db}; campaigns: {', '.join(map(str, ids))}")
    return store, campaign


def _soc(name: str):
    from boardlab.governor.opp import SOCS

    return SOCS[name]


# ---- sweep ----


def _sweep(args) -> int:
    from boardlab.governor import sweep

    _check_sweep_options(args)
    _check_outputs(args, "out", "plan_out")
    if args.sim:
        return _simulated_sweep(args)
    from boardlab.platform.inventory import inventory
    from boardlab.platform.sysroot import SysRoot

    sr = SysRoot(args.root or "/")
    sr.require_board_tree()
    info = inventory(sr)
    try:
        grids = sweep.expand(info, args.cluster)
    except sweep.Unsupported as exc:
        print(f"boardlab governor sweep: unsupported: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise InputError(f"--cluster: {exc}") from None
    if args.plan_out:
        _write_sweep_plan(args, grids)
    out: list[dict[str, Any]] = [
        {
            "this_policy": g.this_policy,
            "this_cpus": list(g.this_cpus),
            "this_khz": list(g.this_khz),
            "other_policy": g.other_policy,
            "other_khz": list(g.other_khz),
            "cells_per_workload": len(g.pairs()),
            "memory_devfreq": g.bus_device,
            "memory_devfreq_hz": list(g.bus_hz),
        }
        for g in grids
    ]
    if args.json:
        print(json.dumps({"schema": 1, "grids": out, "plan": args.plan_out}))
    else:
        for g in out:
            other = f" x {g['other_policy']} {len(g['other_khz'])} OPPs" if g["other_policy"] else ""
            print(
                f"{g['this_policy']} (CPUs {g['this_cpus']}): {len(g['this_khz'])} OPPs{other} = "
                f"{g['cells_per_workload']} frequency pairs x {len(sweep.PATTERNS) * len(sweep.SIZES_BYTES)} "
                "mem.latency cells"
            )
        if args.plan_out:
            print(f"plan written to {args.plan_out}; run it with `boardlab run {args.plan_out} --db FILE`")
    return 0


SIM_ONLY = ("out", "runs", "quick")  # the simulated sweep's options (--db: below, with its own advice)
BOARD_ONLY = ("plan_out", "bus_hz", "root")  # the board's grid and its plan


def _check_sweep_options(args) -> None:
    """The options of the other kind of sweep were ignored, as if they had been used: each is refused."""
    if not args.sim and args.db:
        raise InputError("--db: the sweep is stored as a campaign with --sim; on a board run its plan "
                         "(`boardlab run --preset snoop-sweep --db FILE`)")  # fmt: skip
    others = [n for n in (BOARD_ONLY if args.sim else SIM_ONLY) if getattr(args, n) not in (None, False)]
    if others:
        where = f"not with --sim {args.sim}" if args.sim else "only with --sim"
        raise InputError(f"{', '.join(map(_option, others))}: {where}")
    if args.runs is not None and args.quick:
        raise InputError(f"--runs {args.runs} and --quick: give one (--quick runs 6 per cell)")
    if args.bus_hz is not None and not args.plan_out:
        raise InputError(f"--bus-hz {args.bus_hz}: --bus-hz goes with --plan-out (the plan fixes it)")


def _simulated_sweep(args) -> int:
    """`governor sweep --sim`: the snoop sweep on a simulated SoC, stored as a campaign (--db) or written as
    cells (--out), with its per-size summary."""
    from boardlab.governor import sweep

    runs = 6 if args.quick else 10 if args.runs is None else args.runs
    if not 2 <= runs <= 10000:  # a t-test needs 2; 10^20 filled the memory before the first cell ended
        raise InputError(f"--runs {runs}: expected 2 (what a t-test needs) to 10000 runs per cell")
    soc = _soc(args.sim)
    if args.cluster is not None and args.cluster not in [c.policy for c in soc.clusters]:
        raise InputError(
            f"--cluster: the {soc.name} simulator has {', '.join(c.policy for c in soc.clusters)}"
        )
    sizes = sweep.SIZES_BYTES[::2] if args.quick else sweep.SIZES_BYTES
    if args.db:
        return _sweep_campaign(args, soc, sizes, runs)
    print(f"simulating the snoop sweep on {soc.model}: {len(sizes)} sizes x {len(sweep.PATTERNS)} patterns x "
          f"OPP grid, {runs} runs per cell", file=sys.stderr)  # fmt: skip
    cells = sweep.simulate(soc, sizes=sizes, repetitions=runs, this_policy=args.cluster)
    doc = {
        "schema": sweep.SWEEP_SCHEMA,
        "source": f"simulator {soc.name} (model, not a measurement of a board)",
        "soc": soc.name,
        "cells": [c.to_json() for c in cells],
    }
    if args.out:
        _write(args, "out", json.dumps(doc))
    summary = _sweep_summary(cells)
    if args.json:
        print(
            json.dumps(
                {
                    "schema": 1,
                    "source": doc["source"],
                    "out": args.out,
                    "cells": len(cells),
                    "by_size": summary,
                }
            )
        )
    else:
        print(
            f"{len(cells)} cells" + (f" written to {args.out}" if args.out else " (not written: give --out)")
        )
        for row in summary:
            print(
                f"  {row['this_policy']} {row['pattern']:6} {row['size_bytes']:>10} B: ns/access "
                f"{row['min_ns']:.1f}..{row['max_ns']:.1f}; worst slowdown vs other at max "
                f"{100 * (row['worst_ratio'] - 1):.0f}%"
            )
    return 0


def _write_sweep_plan(args, grids) -> None:
    """`--plan-out`: the sweep of one cluster as a plan file (the bus frequency checked against the board)."""
    from boardlab.governor import sweep

    if len(grids) > 1:
        raise InputError(
            f"--plan-out: this board has {len(grids)} clusters; choose the task's with --cluster "
            f"({', '.join(g.this_policy for g in grids)}) and write one plan per cluster"
        )
    given = args.bus_hz or "record"
    bus: int | str = int(given) if given.isdigit() else given
    reason = sweep.check_bus(grids[0], bus)
    if reason:
        raise InputError(f"--bus-hz: {reason}")
    _write(args, "plan_out", sweep.plan_toml(grids[0], bus_hz=bus))


def _sweep_campaign(args, soc, sizes, runs: int) -> int:
    """--sim --db: the simulated sweep as a campaign `boardlab report` renders (heatmaps, labelled
    simulated)."""
    from boardlab.campaign import simulated as sim_campaign
    from boardlab.governor import sweep
    from boardlab.store import Store

    if args.out:
        raise InputError("--out and --db: give one (--db stores the sweep as a campaign, --out as JSON)")
    store = Store.open(args.db, create=True)
    try:
        print(f"simulating the snoop sweep on {soc.model} into {args.db}: {len(sizes)} sizes x "
              f"{len(sweep.PATTERNS)} patterns x OPP grid, {runs} runs per cell",
              file=sys.stderr)  # fmt: skip
        w = sim_campaign.write(store, soc, this_policy=args.cluster, sizes=sizes, repetitions=runs)
    finally:
        store.close()
    if args.json:
        print(json.dumps({"schema": 1, "db": args.db, "campaign": w.campaign_id, "simulated": soc.name,
                          "conditions": w.conditions, "cells": w.cells, "runs": w.runs}))  # fmt: skip
    else:
        print(
            f"campaign {w.campaign_id} (simulated {soc.name}, the task on {w.grid.this_policy}): "
            f"{w.conditions} conditions, {w.cells} cells, {w.runs} runs written to {args.db}; "
            f"`boardlab governor label --db {args.db}` labels it, `boardlab report --db {args.db}` shows it"
        )
    return 0


def _sweep_summary(cells) -> list[dict]:
    groups: dict[tuple, list] = {}
    for c in cells:
        groups.setdefault((c.this_policy, c.pattern, c.size_bytes), []).append(c)
    out = []
    for (pol, pattern, size), cs in groups.items():
        means = {(c.this_khz, c.other_khz): sum(c.ns_per_access) / len(c.ns_per_access) for c in cs}
        tops: dict[int, tuple[int, float]] = {}
        for (t, o), m in means.items():
            if o is not None and (t not in tops or o > tops[t][0]):
                tops[t] = (o, m)
        worst = max((m / tops[t][1] for (t, o), m in means.items() if t in tops), default=1.0)
        out.append({"this_policy": pol, "pattern": pattern, "size_bytes": size, "min_ns": min(means.values()),
                    "max_ns": max(means.values()), "worst_ratio": worst})  # fmt: skip
    return out


# ---- label / train ----


def _load_cells(path: str):
    from boardlab.governor.sweep import SWEEP_SCHEMA, SweepCell

    doc = _read_json(path, "sweep")
    if doc.get("schema") != SWEEP_SCHEMA or not isinstance(doc.get("cells"), list):
        raise InputError(
            f"{path}: not a sweep (schema {SWEEP_SCHEMA} with 'cells'); write one with `governor sweep --out`"
        )
    try:
        return doc, [SweepCell.from_json(c) for c in doc["cells"]]
    except (TypeError, AttributeError) as exc:  # a cell that is not an object has no keys (AttributeError)
        raise InputError(f"{path}: a cell has the wrong keys ({exc})") from None


def _check_campaign(args) -> None:
    """--campaign picks a campaign of --db: alone it was ignored, as if the command had used it."""
    if args.campaign is not None and not args.db:
        raise InputError(f"--campaign {args.campaign}: --campaign goes with --db (give the database too)")


def _open_sweep_campaign(args):
    """The --db campaign locked for writing, with its sweep cells: a campaign that holds no sweep (a noop
    one) is refused, by label and by train alike, before anything is written."""
    from boardlab.analysis.specs import workload_facts
    from boardlab.governor import store_io

    store, campaign_id = _open_campaign(args.db, args.campaign, write=True)
    cells = store_io.sweep_from_store(store, campaign_id, workload_facts(store, campaign_id))
    if not cells:
        raise InputError(
            f"{args.db}: campaign {campaign_id} has no valid mem.latency runs under snoop-sweep "
            "conditions (userspace frequencies fixed per policy in kHz, as `governor sweep --plan-out` "
            "writes them)"
        )
    return store, campaign_id, cells


def _label(args) -> int:
    from boardlab.governor import label

    _check_campaign(args)
    if not 0 < args.alpha < 1:
        raise InputError("--alpha: expected a level in (0, 1), e.g. 0.05")
    if not 0 <= args.min_effect < 1:
        raise InputError("--min-effect: expected a fraction in [0, 1), e.g. 0.02")
    if (args.sweep is None) == (args.db is None):
        raise InputError(
            "give a sweep JSON file or --db DB (a snoop-sweep campaign), not both and not neither"
        )
    _check_outputs(args, "out")
    if args.db:
        from boardlab.governor import store_io

        store, campaign_id, cells = _open_sweep_campaign(args)
        doc = {"source": f"campaign {campaign_id} of {args.db}"}
    else:
        doc, cells = _load_cells(args.sweep)
    labels = label.label(cells, alpha=args.alpha, min_effect=args.min_effect)
    n_tests = sum(lab.p is not None for lab in labels)
    out = {
        "schema": label.LABEL_SCHEMA,
        "source": doc.get("source"),
        "soc": doc.get("soc"),
        "test": "one-sided Welch t-test of ns/access vs the same cell with the other cluster at its maximum",
        "alpha": args.alpha,
        "min_effect": args.min_effect,
        "correction": "holm" if n_tests <= label.HOLM_MAX else "benjamini-hochberg",
        "cells": [dict(lab.to_json(), features=label.features(lab)) for lab in labels],
    }
    _write(args, "out", json.dumps(out))
    if args.db:
        store_io.save_artifact(store, campaign_id, store_io.LABELS, out)
    n_slow = sum(lab.slow for lab in labels)
    if args.json:
        print(json.dumps({"schema": 1, "out": args.out, "cells": len(labels), "tests": n_tests,
                          "slow": n_slow, "correction": out["correction"]}))  # fmt: skip
    else:
        print(f"{n_slow} of {n_tests} tested cells slow ({out['correction']}-corrected alpha {args.alpha}, "
              f"minimum effect {100 * args.min_effect:g}%); labels written to {args.out}")  # fmt: skip
    return 0


def _train(args) -> int:
    from boardlab.governor import tree

    _check_campaign(args)
    _check_outputs(args, "out", "c_out")
    doc = _read_json(args.labels, "labels")
    from boardlab.governor.label import LABEL_SCHEMA

    cells = doc.get("cells")
    if (
        doc.get("schema") != LABEL_SCHEMA
        or not isinstance(cells, list)
        or not all(isinstance(c, dict) and "label" in c for c in cells)
    ):
        raise InputError(
            f"{args.labels}: not labels (schema {LABEL_SCHEMA}); write them with `governor label --out`"
        )
    rows = [c for c in cells if c.get("features") and c.get("welch_t") is not None]
    if not rows:
        raise InputError(
            f"{args.labels}: no labelled cell with counter features (counters unsupported on that board?)"
        )
    X = [tree.quantize(c["features"]) for c in rows]
    y = [int(c["label"] == "slow") for c in rows]
    if len(set(y)) < 2:
        raise MeasurementError(
            f"{args.labels}: every cell has the same label ({'slow' if y[0] else 'not slow'}); "
            "nothing to learn"
        )
    groups = [(c["pattern"], c["size_bytes"], c["this_policy"], c["this_khz"], c["other_khz"]) for c in rows]
    cells = len(set(groups))
    if not 2 <= args.folds <= cells:  # a fold holds whole cells: beyond, folds are empty (10^20 never ended)
        raise InputError(f"--folds {args.folds}: expected 2 to {cells}, the labelled cells with features")
    # the database checked (there, a sweep campaign) before the outputs are written, not after
    store, campaign_id, _ = _open_sweep_campaign(args) if args.db else (None, None, None)
    cv = tree.cross_validate(X, y, groups, k=args.folds, max_depth=args.depth)
    t = tree.fit(X, y, max_depth=args.depth)
    out = {
        **tree.to_json(t),
        "depth": t.depth(),
        "trained_on": {
            "labels": args.labels,
            "cells": len(rows),
            "slow": sum(y),
            "source": doc.get("source"),
        },
        "cross_validation": cv,
        "training_confusion": tree.confusion(t, X, y),
    }
    _write(args, "out", json.dumps(out, indent=1))
    if args.c_out:
        _write(args, "c_out", tree.to_c(t))
    if store is not None and campaign_id is not None:
        from boardlab.governor import store_io

        store_io.save_artifact(store, campaign_id, store_io.TREE, out)
    if args.json:
        print(
            json.dumps(
                {
                    "schema": 1,
                    "out": args.out,
                    "c_out": args.c_out,
                    "cross_validation": cv,
                    "tree": out["tree"],
                }
            )
        )
    else:
        c = cv["confusion"]
        print(f"tree of depth {t.depth()} on {len(rows)} cells ({sum(y)} slow); {cv['k']}-fold CV accuracy "
              f"{100 * cv['accuracy']:.1f}%")  # fmt: skip
        print(
            f"  confusion (held out): slow predicted slow {c['true_slow']}, not slow predicted slow "
            f"{c['false_slow']}, slow predicted not slow {c['false_not_slow']}, not slow predicted not slow "
            f"{c['true_not_slow']}"
        )
        print(_describe_tree(out["tree"], "  "))
        print(f"written to {args.out}" + (f" and {args.c_out}" if args.c_out else ""))
    return 0


def _describe_tree(node: dict, pad: str) -> str:
    from boardlab.analysis.format import fmt_value

    if "leaf" in node:
        return f"{pad}-> {node['leaf'].replace('_', ' ')}"
    return "\n".join(
        [
            f"{pad}if {node['feature']} <= {fmt_value(node['threshold_value'])}:",
            _describe_tree(node["le"], pad + "  "),
            f"{pad}else:",
            _describe_tree(node["gt"], pad + "  "),
        ]
    )


def load_rule(path: str | None, t1: float, t2: float):
    """A tree file -> predicate on a daemon Sample; without one, the study's T1/T2 rule."""
    from boardlab.governor import policies, tree

    if path is None:
        return policies.thresholds_rule(t1, t2), f"thresholds T1={t1:g} T2={t2:g}"
    doc = _read_json(path, "tree")
    try:
        t = tree.from_json(doc)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # a node of the wrong JSON type too
        raise InputError(f"{path}: not a tree from `governor train` ({exc})") from None
    return tree_rule(t), f"tree {path}"


def tree_rule(t):
    from boardlab.governor import tree

    def slow(s) -> bool:
        # The managed cluster is the "other" of the sweep; the task's cluster is "this".
        row = {"cci_congestion": s.cci_congestion, "memory_access": s.memory_access, "load": s.load_pct,
               "this_khz": s.other_khz or 0, "other_khz": s.cur_khz}  # fmt: skip
        return bool(t.predict(tree.quantize(row)))

    return slow


# ---- run ----


def _check_sampling(ms: float) -> None:
    """The daemon's period: nan was taken (and written as NaN into --json), inf overflowed the sleep, and a
    period of a nanosecond had the simulator step a trace for hours."""
    if not 1 <= ms <= 3_600_000:
        raise InputError(f"--sampling-ms {ms:g}: expected 1 to 3600000 ms")


def _check_run_options(args) -> dict[str, int]:
    """Every option of `governor run`, before the tree is read: bad input is exit 2 on any machine, not
    "unsupported" (exit 1) where cpufreq is missing. Returns the --cci-source map."""
    from boardlab.cli.run import check_wait

    _check_sampling(args.sampling_ms)
    if args.duration_s is not None and not 0 < args.duration_s <= 1e9:  # nan, inf and -1 ran
        raise InputError(
            f"--duration-s {args.duration_s:g}: expected a positive number of seconds (leave it out to run "
            "until Ctrl-C)"
        )
    check_wait(args)
    given = [_option(k) for k in ANTI_SNOOP_ONLY if getattr(args, k) is not None]
    if args.policy != "anti-snoop" and given:  # another policy ignored them, as if they had been used
        raise InputError(f"{', '.join(given)}: only with --policy anti-snoop, not {args.policy}")
    for name in ("t1", "t2"):
        value = getattr(args, name)
        if value is not None and not 0 <= value < float("inf"):  # nan compared false: nothing was slow
            raise InputError(f"--{name} {value:g}: expected a finite threshold of 0 or more")
    return _cci_source(args.cci_source or CCI_SOURCE)


def _cci_source(text: str) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (kv.split("=", 1) for kv in text.split(","))}
    except ValueError:
        raise InputError("--cci-source: expected POLICY=N pairs, e.g. policy0=3,policy4=4") from None


def _run(args) -> int:
    from boardlab.conditions.journal import RestoreJournal
    from boardlab.governor import daemon
    from boardlab.platform import cpufreq
    from boardlab.platform.sysroot import SysRoot

    source = _check_run_options(args)
    sr = SysRoot(args.root)
    sr.require_board_tree()
    t1, t2 = T1 if args.t1 is None else args.t1, T2 if args.t2 is None else args.t2
    slow, rule_text = load_rule(args.tree, t1, t2) if args.policy == "anti-snoop" else (None, "")
    try:  # cpufreq first: without it nothing else matters
        daemon.Daemon(sr, args.policy, RestoreJournal(sr)).check(counters=False)
    except daemon.Unsupported as exc:
        print(f"boardlab governor run: unsupported: {exc}", file=sys.stderr)
        return 1
    counters = None
    if args.policy == "anti-snoop":
        counters = daemon.sim_counters(sr)
        if counters is None:
            clusters = {p.name: p.related_cpus or p.cpus for p in cpufreq.read_policies(sr)}
            missing = [p for p in clusters if p not in source]
            if clusters and missing:
                raise InputError(f"--cci-source: no CCI slave interface given for {missing[0]}")
            try:
                counters = daemon.perf_counters(sr, clusters, source)
            except daemon.Unsupported as exc:
                print(f"boardlab governor run: unsupported: {exc}", file=sys.stderr)
                return 1
    _die_with_parent()
    # Standalone, the daemon changes the board's settings as a campaign does: it takes the system lock the
    # same way. Started by a campaign (--no-recover, the governor-daemon condition) the campaign holds it.
    from boardlab.cli.run import take_system_lock

    lock = None if args.no_recover else take_system_lock(sr, f"governor daemon {args.policy}", args)
    try:
        return _govern(args, daemon.Daemon(sr, args.policy, RestoreJournal(sr), counters=counters, slow=slow),
                       rule_text)  # fmt: skip
    finally:
        if lock is not None:
            lock.release()


def _govern(args, d, rule_text: str) -> int:
    """The daemon from its checks to its summary, under the system lock; restores what it wrote."""
    from boardlab.governor import daemon

    journal = d.journal
    try:
        d.check()
    except daemon.Unsupported as exc:
        print(f"boardlab governor run: unsupported: {exc}", file=sys.stderr)
        return 1
    if not args.no_recover:  # the governor-daemon condition runs inside a campaign that already recovered
        from boardlab.conditions.journal import failures

        left = failures(journal.recover())  # what a killed run left, before this one changes anything
        if left:
            print(
                "boardlab governor run: a killed run left settings that could not be restored: "
                + "; ".join(f"{r.detail}: {r.failed}" for r in left),
                file=sys.stderr,
            )
            return 1

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    wall = 0.0
    interrupted = False
    try:
        d.start()
        print(f"governing {', '.join(d.names)} with {args.policy}"
              + (f" ({rule_text})" if rule_text else "")
              + f" every {args.sampling_ms:g} ms; Ctrl-C to stop and restore", file=sys.stderr)  # fmt: skip
        try:
            wall = daemon.run_forever(d, args.sampling_ms / 1000, args.duration_s)
        except KeyboardInterrupt:
            interrupted = True
    except (OSError, RuntimeError) as exc:  # a write the kernel refused, a policy bug: restored below
        raise MeasurementError(f"the governor daemon stopped: {exc}") from None
    finally:
        # A second Ctrl-C or SIGTERM must not cut the restore short.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            restored = d.stop()
        finally:
            signal.signal(signal.SIGTERM, old)
            signal.signal(signal.SIGINT, old_int)
    summary = {"schema": 1, "policy": args.policy, "root": args.root, "wall_s": round(wall, 3),
               **d.stats.to_json(wall), "restored": restored, "interrupted": interrupted}  # fmt: skip
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{summary['samples']} samples, {summary['setspeed_writes']} setspeed writes; own CPU time "
              f"{summary['cpu_s']:.3f} s ({summary['cpu_us_per_sample']} us per sample, "
              f"{summary['cpu_share_pct']}% of the wall time)")  # fmt: skip
        for r in restored:
            print(f"restored {r}")
    return 0


def _die_with_parent() -> None:
    """Started by a campaign (the governor-daemon condition): SIGTERM when it dies, so the daemon still
    restores its writes if the campaign is SIGKILLed."""
    import ctypes

    parent = os.environ.get("BOARDLAB_PARENT_PID")
    if not parent or not parent.isdigit():
        return
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):
        os.kill(os.getpid(), signal.SIGTERM)


# ---- simulate ----


def _simulate(args) -> int:
    from boardlab.governor import evaluate, label, sweep, tree

    soc = _soc(args.soc)
    _check_sampling(args.sampling_ms)
    _check_outputs(args, "html")
    if args.tree:
        slow, rule_text = load_rule(args.tree, 0, 0)
    elif len(soc.clusters) > 1:
        print("training the anti-snoop tree on a simulated sweep (give --tree to use yours)", file=sys.stderr)
        labs = label.label(sweep.simulate(soc, sizes=sweep.SIZES_BYTES[::2], repetitions=6))
        rows = [(lab, f) for lab in labs if (f := label.features(lab))]
        t = tree.fit([tree.quantize(f) for _, f in rows], [int(lab.slow) for lab, _ in rows])
        slow, rule_text = tree_rule(t), "a tree trained here on a simulated sweep"
    else:
        slow, rule_text = None, "none (single cluster)"
    try:
        res = evaluate.compare(
            soc, args.trace, slow=slow, sampling_s=args.sampling_ms / 1000,
            progress=lambda m: print(f"  simulating {m}", file=sys.stderr),
        )  # fmt: skip
    except ValueError as exc:
        raise InputError(f"--trace: {exc}") from None
    res["anti_snoop_rule"] = rule_text
    from boardlab.report.simulation import simulation_html, simulation_text

    if args.html:
        _write(args, "html", simulation_html(res))
    if args.json:
        print(json.dumps(res))
        return 0
    print(simulation_text(res), end="")
    return 0
