"""One plan's campaigns on a board in the order they ran: each cell's median per campaign, what changed in the
environment between campaigns, and the steps between consecutive campaigns judged by the verdict machinery.

The order is the campaigns' arrival in the store (`Store.campaigns_of_plan`), never the board's wall clock,
which a board without a battery-backed clock sets back to 2000 at each boot; a campaign that started before
its predecessor by that clock is flagged "board clock went back" (`clock_went_back`).

A step is campaign k+1 against campaign k, cell by cell, with the pair routine of `compare_campaigns` and the
cross-board report (`compare.pair_rows` / `finish_rows`): B/A with its 90% decision interval against each
workload's threshold, and every step of the history (every board, every consecutive pair) corrected as one
family, as every report's comparisons are. A slowdown there is a regression, a speedup an improvement
(docs/method.md "History: steps between campaigns").
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from boardlab.analysis import document as doc
from boardlab.analysis.compare import (
    DECISION_WORDS,
    RATIO_WORDS,
    _key,
    finish_rows,
    median_point,
    pair_rows,
)
from boardlab.analysis.comparedoc import verdict_table
from boardlab.model.campaign import CommitIdentity

if TYPE_CHECKING:
    from boardlab.analysis.records import CampaignView, ComparisonRow

# 2: campaigns by arrival, clock_went_back, cells keyed by metric; 3: each campaign's commit; 4: each side of
# a step's cell says how many of its runs the test read ("tested", None for all of them)
HISTORY_SCHEMA = 4
DEFAULT_LAST = 10  # campaigns per board: bounds the family (and so keeps its power) and the reading time


def environment_facts(row) -> dict[str, str | None]:
    """What a campaign ran on, as short strings: the facts whose change a step may be due to."""
    inv = json.loads(row["inventory_json"] or row["board_inventory_json"] or "{}")
    env = json.loads(row["environment_json"] or "{}")
    kernel = inv.get("kernel") or {}
    build = env.get("kern_build") if isinstance(env.get("kern_build"), dict) else {}
    governors = [
        f"{p.get('name')}: {p.get('governor')}"
        for p in inv.get("cpufreq_policies") or ()
        if p.get("governor")
    ]
    compiler = " ".join(
        str(x) for x in (build.get("compiler"), build.get("flags") or build.get("cflags")) if x
    )
    return {
        "kernel": kernel.get("release"),
        "kernel build": kernel.get("version"),
        "preemption": kernel.get("preempt_model"),
        "kernel command line": kernel.get("cmdline"),
        "boardlab": row["boardlab_version"],
        "boardlab-kern": row["kern_version"],
        "compiler and flags": compiler or None,
        "governor": "; ".join(governors) or None,
        "board model": inv.get("model"),
        "firmware (device tree)": ", ".join(inv.get("compatible") or ()) or None,
        "commit": commit_of(row).words() or None,
    }


def commit_of(row) -> CommitIdentity:
    """The commit and branch a campaign row measured (`run --commit`; `load_history` adds them to its
    rows)."""
    return CommitIdentity(row.get("commit_sha"), row.get("commit_describe"), row.get("branch"))


def changes(before: dict | None, after: dict) -> list[str]:
    """'kernel: 6.1.0 -> 6.6.0' for every fact that differs from the campaign before."""
    if before is None:
        return []
    return [f"{k}: {before.get(k) or '?'} → {v or '?'}" for k, v in after.items() if before.get(k) != v]


def _campaign(row, facts: dict, prev: dict | None, prev_row) -> dict:
    return {
        "campaign_id": int(row["id"]),
        "started_unix_s": row["started_unix_s"],
        "status": row["status"],
        "boardlab_version": row["boardlab_version"],
        "label": row["label"],
        "commit": _commit_doc(commit_of(row)),
        "environment": facts,
        "changed": changes(prev, facts),
        "clock_went_back": clock_went_back(row, prev_row),
    }


def _commit_doc(identity: CommitIdentity) -> dict | None:
    return identity_doc(identity.sha, identity.describe, identity.branch)


def identity_doc(sha: str | None, describe: str | None, branch: str | None) -> dict | None:
    """A campaign's commit in a JSON document (history, serve's pages), None where none was given."""
    if not (sha or describe or branch):
        return None
    return {"sha": sha, "describe": describe, "branch": branch}


def _clock(row) -> dict:
    env = json.loads(row["environment_json"] or "{}")
    clock = env.get("clock") if isinstance(env, dict) else None
    return clock if isinstance(clock, dict) else {}


def clock_went_back(row, prev_row) -> str | None:
    """Why this campaign's wall-clock start lies before the one it followed ended (or started), or None.

    Campaigns are placed by arrival (`Store.campaigns_of_plan`); a start by the board's clock earlier than
    its predecessor's means the clock was set back (no battery-backed clock, NTP not yet answered, a manual
    change). Where both ran in one boot, the monotonic clock, which nobody sets, says how far apart they
    really were."""
    if prev_row is None:
        return None
    before = prev_row["finished_unix_s"] or prev_row["started_unix_s"]
    if row["started_unix_s"] >= before:
        return None
    from boardlab.analysis.format import fmt_time

    mine, theirs = _clock(row), _clock(prev_row)
    if mine.get("boot_id") and mine.get("boot_id") == theirs.get("boot_id"):
        apart = (mine["monotonic_ns"] - theirs["monotonic_ns"]) / 1e9
        evidence = f"in the same boot, {apart:,.0f} s later by the monotonic clock"
    else:
        evidence = "it arrived later in this store"
    return (
        f"board clock went back: campaign {int(row['id'])} started at {fmt_time(row['started_unix_s'])} by "
        f"the board's clock, before campaign {int(prev_row['id'])} ({fmt_time(before)}), which it followed "
        f"({evidence}); it is placed after it"
    )


def step_seed(b: CampaignView) -> int:
    """The seed of a step's comparisons: the later campaign's, so a step is the same in every history."""
    return 1000 * b.campaign_id


def step_pair(a: CampaignView, b: CampaignView) -> tuple[list, list, list]:
    """Campaign b against the campaign a before it (`compare.pair_rows`), not yet corrected."""
    # a step is computed once (and stored: summary.step) for every history it enters, so the draws of its
    # permutation p-values are set for a history of DEFAULT_LAST campaigns of these cells
    return pair_rows(a, b, seed=step_seed(b), family_size=(DEFAULT_LAST - 1) * max(1, len(a.cells)))


def steps_of(analyses: Sequence[CampaignView]) -> list[tuple[list, list, list]]:
    """The steps between one board's consecutive campaigns, computed now (`step_pair`); `summary.steps` reads
    the stored ones instead."""
    return [step_pair(a, b) for a, b in itertools.pairwise(analyses)]


def board_history(rows, analyses, steps: Sequence[tuple[list, list, list]]) -> tuple[dict, list, list]:
    """One board's series and its steps, not yet corrected: (board entry, comparisons, slots per step).
    `steps`: each step's `pair_rows`, between consecutive `analyses` (`steps_of`, `summary.steps`)."""
    campaigns, prev, prev_row = [], None, None
    for row in rows:
        facts = environment_facts(row)
        campaigns.append(_campaign(row, facts, prev, prev_row))
        prev, prev_row = facts, row
    cells: dict[tuple, dict] = {}
    for k, a in enumerate(analyses):
        for c in a.cells:
            entry = cells.setdefault(
                (*_key(c), c.metric, c.unit),  # a cell whose metric changed is another series
                {"workload": c.workload, "params": c.params, "condition": c.condition, "metric": c.metric,
                 "unit": c.unit, "higher_is_better": c.higher_is_better, "points": [None] * len(analyses)},
            )  # fmt: skip
            entry["points"][k] = median_point(c)
    from boardlab.analysis.records import HistoryStep

    entries, comps, slots = [], [], []
    for (a, b), (rows_k, ck, sk) in zip(itertools.pairwise(analyses), steps, strict=True):
        entries.append(HistoryStep(a.campaign_id, b.campaign_id, tuple(rows_k)))
        comps += ck
        slots.append(sk)
    entry = {
        "board": rows[0]["board_label"],
        "campaigns": campaigns,
        "cells": list(cells.values()),
        "steps": entries,
    }
    return entry, comps, slots


def build_history(
    per_board: list[tuple[list, list]], plan: str, steps: list[list[tuple[list, list, list]]] | None = None
) -> dict:
    """The history document of `per_board`: (campaign rows in time order, their analyses or summaries) per
    board, with each board's `steps` (stored ones from `summary.steps`; computed now when None), kept as
    `HistoryStep`s of `ComparisonRow`s (its JSON: `compare.plain`). Every step of every board is one
    correction family."""
    from boardlab.stats import adjust, family_method

    if steps is None:
        steps = [steps_of(analyses) for _, analyses in per_board]
    boards, comps, slots = [], [], []
    for (rows, analyses), board_steps in zip(per_board, steps, strict=True):
        entry, c, s = board_history(rows, analyses, board_steps)
        boards.append(entry)
        comps += c
        slots.append(s)
    method = family_method(len(comps))
    adjusted = iter(adjust(comps, method) if comps else ())
    for entry, board_slots in zip(boards, slots, strict=True):
        entry["steps"] = [
            replace(step, cells=tuple(finish_rows(step.cells, ps, [next(adjusted) for _ in ps])))
            for step, ps in zip(entry["steps"], board_slots, strict=True)
        ]
    return {
        "schema": HISTORY_SCHEMA,
        "plan": plan,
        "ratio": "each step is campaign B over the campaign A before it on the same board, cell by cell: "
        + RATIO_WORDS,
        "decision": "a step is a regression (slowdown) or an improvement (speedup) when its 90% decision "
        "interval lies beyond 1 +- delta and its p, adjusted over every step of this history, is below 0.05: "
        + DECISION_WORDS,
        "adjustment": method,
        "family_size": len(comps),
        "boards": boards,
        "regressions": found(boards, "slowdown"),
        "improvements": found(boards, "speedup"),
        "clock_went_back": [
            c["clock_went_back"] for b in boards for c in b["campaigns"] if c["clock_went_back"]
        ],
    }


def found(boards: list[dict], verdict: str) -> list[dict]:
    """Every step with this verdict: board, the campaigns, the cell, B/A and its interval."""
    out = []
    for b in boards:
        for step in b["steps"]:
            for c in step.cells:
                if c.verdict == verdict:
                    out.append(
                        {"board": b["board"], "from": step.from_id, "to": step.to_id, "workload": c.workload,
                         "params": c.params, "condition": c.condition, "metric": c.metric,
                         "ratio": c.ratio, "decision_ci": _listed(c.decision_ci), "p_adjusted": c.p_adjusted,
                         "confounded": c.confounded, "unstable": _listed(c.unstable)}
                    )  # fmt: skip
    return out


def _listed(values: tuple | None) -> list | None:
    """A row's tuple as its JSON list (a history's own entries are plain data, as its JSON has them)."""
    return None if values is None else list(values)


def bisect(per_board: list[tuple[list, list]]) -> list[dict]:
    """`history --bisect`: per board, each cell slower in the last campaign shown than in the first (their
    comparison as `boardlab compare` makes it: B/A, 90% decision interval against the cell's threshold, p
    corrected over the cells the two share), and the first campaign from which it is slower than in that first
    one, found as `asv find` finds it: by bisection, assuming a cell that became slower stays slower (log2 N
    comparisons, each corrected over its cells). The campaign before it is the last one not slower: its commit
    and the found one's bound the change."""
    return [
        entry for rows, analyses in per_board if len(analyses) > 1 for entry in _bisect_board(rows, analyses)
    ]


def _bisect_board(rows: list, analyses: list) -> list[dict]:
    from boardlab.analysis.compare import compare_campaigns

    memo: dict[int, dict[tuple, ComparisonRow]] = {}

    def rows_at(k: int) -> dict[tuple, ComparisonRow]:  # campaign k against the first, by series key
        if k not in memo:
            memo[k] = {_row_key(c): c for c in compare_campaigns(analyses[0], analyses[k])["cells"]}
        return memo[k]

    def slower(k: int, key: tuple) -> bool:
        row = rows_at(k).get(key)
        return row is not None and row.verdict == "slowdown"

    last = len(analyses) - 1
    out = []
    for key, row in rows_at(last).items():
        if row.verdict == "slowdown":
            lo, hi = _bisected(lambda k, key=key: slower(k, key), last)
            out.append(_bisect_entry(rows, row, rows_at(hi)[key], lo, hi))
    return out


def _bisected(slower, last: int) -> tuple[int, int]:
    """(the last campaign index not slower, the first slower) between 0 (the reference) and `last`
    (slower)."""
    lo, hi = 0, last
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if slower(mid) else (mid, hi)
    return lo, hi


def _bisect_entry(rows, at_last: ComparisonRow, at_found: ComparisonRow, lo: int, hi: int) -> dict:
    def campaign(k: int) -> dict:
        return {"campaign_id": int(rows[k]["id"]), "label": rows[k]["label"],
                "commit": _commit_doc(commit_of(rows[k]))}  # fmt: skip

    return {
        "board": rows[0]["board_label"],
        "workload": at_last.workload,
        "params": at_last.params,
        "condition": at_last.condition,
        "metric": at_last.metric,
        "against": campaign(0),
        "first_slower": campaign(hi),
        "last_not_slower": campaign(lo),
        "ratio": at_found.ratio,
        "decision_ci": _listed(at_found.decision_ci),
        "p_adjusted": at_found.p_adjusted,
        "ratio_last": at_last.ratio,
    }


def load_history(store, plan: str, board: str | None, *, last: int = DEFAULT_LAST) -> list[list[dict]]:
    """The rows of the plan's last `last` campaigns per board, in arrival order, each with its commit: the
    caller reads each campaign's summary (`boardlab.summary.analysis_view`, serve's cached reader of them)
    and gives them to `build_history` beside these rows."""
    rows = store.campaigns_of_plan(plan, board, limit=last)
    ids = store.campaign_identities([int(r["id"]) for r in rows])
    by_board: dict[str, list] = {}
    for r in rows:
        sha, describe, branch = ids.get(int(r["id"]), (None, None, None))
        row = {
            **{k: r[k] for k in r.keys()},
            "commit_sha": sha,
            "commit_describe": describe,
            "branch": branch,
        }
        by_board.setdefault(r["board_label"], []).append(row)
    return list(by_board.values())


# ---- the document ------------------------------------------------------------------------------------------


def _campaign_table(board: dict) -> doc.Table:
    from boardlab.analysis.format import fmt_time

    return doc.Table(
        (doc.Column("#"), doc.Column("campaign"), doc.Column("started"), doc.Column("status"),
         doc.Column("label"), doc.Column("commit"), doc.Column("what changed")),
        tuple(
            (str(i + 1), str(c["campaign_id"]), fmt_time(c["started_unix_s"]), c["status"], c["label"] or "",
             commit_words(c), _what_changed(c, i))
            for i, c in enumerate(board["campaigns"])
        ),
    )  # fmt: skip


def commit_words(campaign: dict) -> str:
    """A history campaign's commit as the tables show it ('v1.4-3-gabc1234 (main)'), '' where none."""
    c = campaign.get("commit") or {}
    return CommitIdentity(c.get("sha"), c.get("describe"), c.get("branch")).words()


def _series_key(c: dict) -> tuple:
    """A series' key (a history's "cells" entry): its cell and metric."""
    return c["workload"], json.dumps(c["params"], sort_keys=True), c["condition"], c["metric"]


def _row_key(r: ComparisonRow) -> tuple:
    """A step's row by the key of its series (`_series_key`)."""
    return r.workload, json.dumps(r.params, sort_keys=True), r.condition, r.metric


def _what_changed(c: dict, i: int) -> str:
    said = ("; ".join(c["changed"]) or "nothing recorded") if i else "(first shown)"
    return f"{c['clock_went_back']}; {said}" if c["clock_went_back"] else said


def _step_marks(board: dict) -> dict[tuple, dict[int, str]]:
    """cell key -> {campaign index: 'slowdown' | 'speedup'} for the steps into that campaign."""
    marks: dict[tuple, dict[int, str]] = {}
    for k, step in enumerate(board["steps"], start=1):
        for c in step.cells:
            if c.verdict in ("slowdown", "speedup"):
                marks.setdefault(_row_key(c), {})[k] = c.verdict
    return marks


def _series_table(board: dict) -> doc.Table:
    from boardlab.analysis.format import fmt_interval, fmt_num, section_labels, unit_label

    names = section_labels((c["workload"], c["params"]) for c in board["cells"])
    marks = _step_marks(board)
    sign = {"slowdown": " [REGRESSION]", "speedup": " [improvement]"}

    def point(p: dict | None, mark: str | None) -> str:
        if p is None:
            return "not run"
        if p["median"] is None:
            return f"no value (n={p['n']})"
        ci = f" {fmt_interval(*p['median_ci'])}" if p["median_ci"] else ""
        return f"{fmt_num(p['median'])}{ci} (n={p['n']})" + (sign[mark] if mark else "")

    rows, classes = [], []
    for name, c in zip(names, board["cells"], strict=True):
        m = marks.get(_series_key(c), {})
        rows.append((name, c["condition"], f"{c['metric']} [{unit_label(c['unit'])}]",
                     *(point(p, m.get(k)) for k, p in enumerate(c["points"]))))  # fmt: skip
        classes.append({3 + k: f"v-{v}" for k, v in m.items()})
    n = len(board["campaigns"])
    return doc.Table(
        (doc.Column("workload"), doc.Column("condition"), doc.Column("metric"),
         *(doc.Column(f"#{k + 1}", numeric=True) for k in range(n))),
        tuple(rows),
        cell_classes=tuple(classes),
    )  # fmt: skip


def _figures(board: dict) -> doc.Multiples | None:
    from boardlab.analysis.format import section_labels, unit_label

    names = section_labels((c["workload"], c["params"]) for c in board["cells"])
    figures = []
    for name, c in zip(names, board["cells"], strict=True):
        pts = [(k + 1.0, p["median"] if p else None) for k, p in enumerate(c["points"])]
        errs = [tuple(p["median_ci"]) if p and p["median_ci"] else None for p in c["points"]]
        if sum(1 for _, y in pts if y is not None) < 2:
            continue
        figures.append(
            doc.Figure(doc.LinePlotSpec(
                lines=[doc.Line(c["condition"], pts, errs)], title=f"{name} @ {c['condition']}",
                x_label="campaign #", y_label=f"{c['metric']} [{unit_label(c['unit'])}]",
                x_integer=True, width=380, height=220, legend=False, title_size=12,
            ))
        )  # fmt: skip
    return doc.Multiples(tuple(figures)) if figures else None


def _steps_table(d: dict) -> doc.Table | None:
    from boardlab.analysis.format import cell_label, fmt_interval, fmt_p, fmt_ratio

    rows, classes = [], []
    for kind, label in (("regressions", "regression"), ("improvements", "improvement")):
        for s in d[kind]:
            verdict = label + (" (confounded)" if s["confounded"] else "")
            if s["unstable"]:
                verdict += " (UNSTABLE: " + "; ".join(s["unstable"]) + ")"
            rows.append((s["board"], f"{s['from']} → {s['to']}", cell_label(s["workload"], s["params"]),
                         s["condition"], fmt_ratio(s["ratio"]), fmt_interval(*s["decision_ci"]),
                         fmt_p(s["p_adjusted"]), verdict))  # fmt: skip
            classes.append("v-slowdown" if kind == "regressions" else "v-speedup")
    if not rows:
        return None
    return verdict_table(("board", "campaigns", "workload", "condition"), rows, classes)


def _step_list(d: dict) -> doc.Table | None:
    """Every step of every board with its verdicts counted, so a history with no regression still shows
    what it compared."""
    from boardlab.analysis.verdicts import tally_words

    rows, classes = [], []
    for b in d["boards"]:
        for s in b["steps"]:
            counts: dict[str, int] = {}
            for c in s.cells:
                kind = c.verdict or "none"
                counts[kind] = counts.get(kind, 0) + 1
            rows.append((b["board"], f"{s.from_id} → {s.to_id}", str(len(s.cells)),
                         tally_words({"counts": counts})))  # fmt: skip
            classes.append("v-slowdown" if counts.get("slowdown") else "")
    if not rows:
        return None
    return doc.Table(
        (
            doc.Column("board"),
            doc.Column("campaigns"),
            doc.Column("cells", numeric=True),
            doc.Column("verdicts"),
        ),
        tuple(rows),
        title="Every step",
        row_classes=tuple(classes),
    )


def _bisect_section(d: dict) -> doc.Section | None:
    from boardlab.analysis.format import cell_label, fmt_interval, fmt_ratio

    if "bisect" not in d:
        return None
    rows = []
    for b in d["bisect"]:

        def said(c: dict) -> str:
            return f"{c['campaign_id']} {commit_words(c)}".strip()

        rows.append((b["board"], cell_label(b["workload"], b["params"]), b["condition"], said(b["against"]),
                     said(b["first_slower"]), said(b["last_not_slower"]), fmt_ratio(b["ratio"]),
                     fmt_interval(*b["decision_ci"])))  # fmt: skip
    return doc.section(
        "Bisect: where each slowed cell became slower",
        doc.Prose(f"{len(rows)} cell(s) slower in the last campaign shown than in the first." if rows else
                  "No cell is slower in the last campaign shown than in the first.", strong=bool(rows)),
        doc.Table((doc.Column("board"), doc.Column("workload"), doc.Column("condition"),
                   doc.Column("against"), doc.Column("first slower"), doc.Column("last not slower"),
                   doc.Column("B / A", numeric=True), doc.Column("90% decision interval", numeric=True)),
                  tuple(rows)) if rows else None,
        doc.Prose("Each cell of the last campaign is compared with the first campaign shown (as "
                  "`boardlab compare` compares two campaigns); a slower one is bisected, as `asv find` does, "
                  "for the first campaign slower than that first one, assuming it stays slower once it is. "
                  "B / A is that campaign's against the first.", small=True),
    )  # fmt: skip


def history_document(d: dict, title: str) -> doc.Document:
    """The history report: the steps found first, then per board its campaigns and each cell over time."""
    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(d["adjustment"], d["adjustment"])
    n_reg, n_imp = len(d["regressions"]), len(d["improvements"])
    n_steps = sum(len(b["steps"]) for b in d["boards"])
    summary = doc.section(
        "Steps between campaigns",
        doc.Prose(
            f"{n_reg} regression(s) and {n_imp} improvement(s) in {n_steps} step(s) between consecutive "
            f"campaigns of one board ({d['family_size']} cells compared).",
            strong=bool(n_reg),
        ),
        *(doc.Prose(why, strong=True) for why in d.get("clock_went_back", ())),
        _step_list(d),
        _steps_table(d),
        doc.Prose(
            "Each step is campaign B against the campaign A before it, cell by cell: B / A with its 90% "
            "decision interval against the workload's threshold (the plan's `threshold`, default 2%), p "
            f"adjusted by {method} over every step of this history. Campaigns run on different days were not "
            "interleaved: a step includes whatever changed between them (the board, its temperature, the "
            "environment), and each campaign's A/A control bounds how much its board drifted within it; a "
            "step whose A/A control failed on either side is marked unstable.",
            small=True,
        ),
    )
    sections = [summary]
    bisected = _bisect_section(d)
    if bisected is not None:
        sections.append(bisected)
    for b in d["boards"]:
        sections.append(doc.section(f"Board {b['board']}", _campaign_table(b), anchor=f"board-{b['board']}"))
        sections.append(
            doc.section(
                "Each cell over time",
                doc.Prose(
                    "Median per campaign with its 95% confidence interval and the valid runs; a step into a "
                    "campaign is marked where it is a regression or an improvement.",
                    small=True,
                ),
                _series_table(b),
                _figures(b),
                level=3,
            )
        )
    return doc.Document(title, tuple(sections))


__all__ = ["HISTORY_SCHEMA", "bisect", "build_history", "history_document", "load_history"]
