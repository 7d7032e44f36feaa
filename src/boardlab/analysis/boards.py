"""Several boards' campaigns of one plan side by side: a fleet run, or board files ingested into one store.

The boards of a campaign are the boards with a campaign of the same plan (same plan hash) in the store; each
board's latest such campaign is taken, the chosen campaign for its own board. Cells are matched by workload,
parameters and condition as in `compare_campaigns`. By default every other board is compared with one
reference board (the first listed), so a report of a lab's 100 boards makes 99 comparisons per cell, not
4,950; on request every pair of boards is compared (B against A, A the board listed first). Either way the
comparisons of the report form one correction family, as every report's comparisons do (docs/method.md
"Comparing a condition with its baseline").
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import replace

from boardlab.analysis import document as doc
from boardlab.analysis.compare import (
    _cell_id,
    _key,
    _side,
    finish_rows,
    median_point,
    pair_rows,
    unmatched,
)
from boardlab.analysis.comparedoc import verdict_table
from boardlab.analysis.records import CampaignAnalysis

# 2: "comparisons" and "reference"; by default each board against the reference only; 3: each side of a
# compared cell says how many of its runs the test read ("tested")
BOARDS_SCHEMA = 3


def board_campaign_ids(store, campaign_id: int, *, reference: str | None = None) -> list[int]:
    """The campaigns to set side by side with `campaign_id`: the reference board's first (the chosen
    campaign's board, or the board labelled `reference`), then the latest campaign of the same plan on
    every other board of the store, by board label."""
    from boardlab.errors import InputError

    chosen = store.campaign(campaign_id)
    latest = {int(chosen["board_id"]): chosen}  # board id -> its latest campaign row
    for row in store.campaigns():
        if row["plan_hash"] != chosen["plan_hash"] or row["board_id"] == chosen["board_id"]:
            continue
        prev = latest.get(row["board_id"])
        if prev is None or (row["started_unix_s"], row["id"]) > (prev["started_unix_s"], prev["id"]):
            latest[row["board_id"]] = row
    labels = {board_id: store.board(board_id)["label"] for board_id in latest}
    first = int(chosen["board_id"])
    if reference is not None:
        found = [b for b, label in labels.items() if label == reference]
        if not found:
            raise InputError(
                f"{store.path}: no board labelled {reference!r} ran this plan; its boards: "
                f"{', '.join(sorted(labels.values()))}"
            )
        first = found[0]
    others = sorted(
        (r for b, r in latest.items() if b != first), key=lambda r: (labels[r["board_id"]], r["id"])
    )
    return [int(latest[first]["id"]), *(int(r["id"]) for r in others)]


def _compared(a: CampaignAnalysis) -> CampaignAnalysis:
    """The analysis with only what `compare_boards` reads once it has the board's medians: each cell (its
    runs are typed columns, about 55 bytes a run), the A/A controls and who the board is."""
    return replace(a, comparisons=(), tail_comparisons=(), studies=(), inventory={}, environment={})


def compare_boards(
    analyses: Iterable[CampaignAnalysis], *, names: list[str] | None = None, all_pairs: bool = False
) -> dict:
    """The cross-board document: each cell's median per board, and B/A per cell for every other board B
    against the reference board A (the first of `analyses`), or for every pair of boards with `all_pairs`,
    corrected together. `analyses` are `CampaignAnalysis` of different boards, best a generator: each is
    compared with the reference as it comes and then dropped, so that memory holds one board's analysis
    and the reference's runs (all boards' runs with `all_pairs`, a value and an environment a run), not
    every board's analysis."""
    from boardlab.stats import adjust, family_method

    labels: list[str] = []
    sides: list[dict] = []
    kept: list[CampaignAnalysis] = []  # the reference (every board with all_pairs), as _compared keeps it
    cells: dict[tuple, dict] = {}
    pairs: list[dict] = []
    comps: list = []
    slots: list[list[int]] = []

    # how many board pairs the family will hold, as far as the names tell before the analyses arrive: it
    # sets how far each comparison's permutation p is drawn (compare.pair_rows)
    n = len(names) if names else 2
    board_pairs = n * (n - 1) // 2 if all_pairs else n - 1

    def compare(a: CampaignAnalysis, b: CampaignAnalysis) -> None:
        rows, pc, ps = pair_rows(a, b, seed=1000 * len(pairs), family_size=board_pairs * len(a.cells))
        pairs.append({"a": a.board_label, "b": b.board_label, "cells": rows, "unmatched": unmatched(a, b)})
        comps.extend(pc)
        slots.append(ps)

    # not enumerate(): its result tuple, kept for reuse, would hold a board's analysis while the next is made
    for a in analyses:
        if a.board_label in labels:
            raise ValueError(f"one campaign per board, got board {a.board_label} twice")
        sides.append(_side(names[len(labels)] if names else "db", a))
        labels.append(a.board_label)
        for c in a.cells:
            entry = cells.setdefault(_key(c), {**_cell_id(c), "unit": c.unit, "boards": {}})
            entry["boards"][a.board_label] = median_point(c)
        if kept and not all_pairs:
            compare(kept[0], a)
        elif not kept or all_pairs:
            kept.append(_compared(a))
        del a  # the whole analysis goes before the next board's is made
    for a, b in itertools.combinations(kept, 2) if all_pairs else ():  # in the order of the boards
        compare(a, b)
    method = family_method(len(comps))
    adjusted = iter(adjust(comps, method) if comps else ())
    for pair, ps in zip(pairs, slots, strict=True):
        pair["cells"] = finish_rows(pair["cells"], ps, [next(adjusted) for _ in ps])
    return {
        "schema": BOARDS_SCHEMA,
        "boards": sides,
        "comparisons": "all pairs" if all_pairs else "reference",
        "reference": None if all_pairs or not labels else labels[0],
        "ratio": "B / A: board B's median over board A's; cost_ratio > 1 means B is worse",
        "decision": "verdicts are decided on decision_ci, the 90% bootstrap interval of the cost ratio, "
        "against each cell's delta; p adjusted over every pair's comparisons together",
        "adjustment": method,
        "family_size": len(comps),
        "cells": list(cells.values()),
        "pairs": pairs,
    }


def boards_document(d: dict, title: str) -> doc.Document:
    """The cross-board report: who was measured, the cells side by side, the verdicts per board pair."""
    return doc.Document(title, (_who(d), _side_by_side(d), _verdicts(d)))


def _who(d: dict) -> doc.Section:
    from boardlab.analysis.format import fmt_time

    against = (
        "every pair of boards is compared"
        if d.get("comparisons") == "all pairs"
        else f"each board is compared with the reference board, {d['boards'][0]['board']}"
    )
    return doc.section(
        "Boards",
        doc.Prose(
            f"{len(d['boards'])} boards ran the same plan; each board's latest campaign of it is shown. "
            "B / A is board B's median over board A's for the same cell (workload, parameters, "
            f"condition); {against}."
        ),
        doc.Table(
            tuple(doc.Column(c) for c in ("board", "campaign", "status", "started", "boardlab")),
            tuple(
                (
                    b["board"],
                    str(b["campaign_id"]),
                    b["status"],
                    fmt_time(b["started_unix_s"]),
                    b["boardlab_version"],
                )
                for b in d["boards"]
            ),
        ),
    )


def _on_board(c: dict, label: str) -> str:
    from boardlab.analysis.format import fmt_interval, fmt_num

    v = c["boards"].get(label)
    if v is None:
        return "not run"
    if v["median"] is None:
        return f"no value (n={v['n']})"
    ci = f" {fmt_interval(*v['median_ci'])}" if v["median_ci"] else ""
    return f"{fmt_num(v['median'])}{ci} (n={v['n']})"


def _side_by_side(d: dict) -> doc.Section:
    from boardlab.analysis.format import section_labels, unit_label

    labels = [b["board"] for b in d["boards"]]
    names = section_labels((c["workload"], c["params"]) for c in d["cells"])
    return doc.section(
        "Cells side by side",
        doc.Prose(
            "Median per board with its 95% confidence interval and the number of valid runs.", small=True
        ),
        doc.Table(
            (
                doc.Column("workload"),
                doc.Column("condition"),
                doc.Column("metric"),
                *(doc.Column(label, numeric=True) for label in labels),
            ),
            tuple(
                (
                    name,
                    c["condition"],
                    f"{c['metric']} [{unit_label(c['unit'])}]",
                    *(_on_board(c, x) for x in labels),
                )
                for name, c in zip(names, d["cells"], strict=True)
            ),
        ),
    )


def _pair_rows(pair: dict) -> list[tuple]:
    from boardlab.analysis.format import fmt_interval, fmt_p, fmt_ratio, section_labels, verdict_text

    rows = []
    names = section_labels((c.workload, c.params) for c in pair["cells"])
    for name, c in zip(names, pair["cells"], strict=True):
        verdict = verdict_text(c.verdict, bool(c.confounded)) if c.verdict else (c.reason or "")
        if c.unstable:
            verdict += " (UNSTABLE: " + "; ".join(c.unstable) + ")"
        rows.append(
            (
                f"{pair['b']} / {pair['a']}",
                name,
                c.condition,
                fmt_ratio(c.ratio),
                fmt_interval(*c.decision_ci) if c.decision_ci else "",
                fmt_p(c.p_adjusted),
                verdict,
            )
        )
    return rows


def _verdicts(d: dict) -> doc.Section:
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(d["adjustment"], d["adjustment"])
    rows, missing = [], []
    for pair in d["pairs"]:
        rows += _pair_rows(pair)
        for side, label in (("a_only", pair["a"]), ("b_only", pair["b"])):
            missing += [
                f"{c['workload']} {json.dumps(c['params'], sort_keys=True)} under {c['condition']}: "
                f"only on {label} of {pair['a']} and {pair['b']}"
                for c in pair["unmatched"][side]
            ]
    which = (
        "every pair together" if d.get("comparisons") == "all pairs" else "every board against the reference"
    )
    return doc.section(
        "Verdicts per board pair",
        doc.Prose(
            "Verdicts are decided on the 90% decision interval of B / A against each workload's threshold "
            f"(the plan's `threshold`, default 2%, tails 10%); p adjusted by {method} over all "
            f"{d['family_size']} comparisons of this report ({which}). A cell whose A/A control failed on "
            "either board is marked unstable.",
            small=True,
        ),
        verdict_table(("pair (B / A)", "workload", "condition"), rows),
        doc.Items(tuple(missing)) if missing else None,
    )


__all__ = ["BOARDS_SCHEMA", "board_campaign_ids", "boards_document", "compare_boards"]
