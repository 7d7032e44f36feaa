"""The document of a comparison of two campaigns (`compare_campaigns`'s dict, its cells `ComparisonRow`s), for
`boardlab serve`'s compare page: who was compared, each cell's B / A with its 90% decision interval and
verdict, the cells on one side only."""

from __future__ import annotations

from collections.abc import Sequence

from boardlab.analysis import document as doc

# What every verdict table ends with: the ratio, the interval the verdict is decided on, the test, the verdict
VERDICT_COLUMNS = (
    doc.Column("B / A", numeric=True),
    doc.Column("90% decision interval", numeric=True),
    doc.Column("p (adjusted)", numeric=True),
    doc.Column("verdict"),
)


def verdict_table(names: Sequence[str], rows: Sequence[tuple], row_classes: Sequence[str] = ()) -> doc.Table:
    """A table of verdicts: a column per name of `names` (what a row compares) and then `VERDICT_COLUMNS`."""
    return doc.Table(
        tuple(doc.Column(n) for n in names) + VERDICT_COLUMNS,
        tuple(rows),
        row_classes=tuple(row_classes),
        emphasis_column="verdict",
    )


def compare_document(d: dict, title: str) -> doc.Document:
    from boardlab.analysis.format import (
        cell_label,
        fmt_interval,
        fmt_num,
        fmt_p,
        fmt_ratio,
        fmt_time,
        unit_label,
        verdict_text,
    )

    method = {"holm": "Holm", "bh": "Benjamini-Hochberg"}.get(d["adjustment"], d["adjustment"])
    who = doc.Table(
        (doc.Column("side"), doc.Column("campaign"), doc.Column("name"), doc.Column("board"),
         doc.Column("status"), doc.Column("started"), doc.Column("boardlab")),
        tuple((side.upper(), str(d[side]["campaign_id"]), d[side]["name"], d[side]["board"],
               d[side]["status"], fmt_time(d[side]["started_unix_s"]), d[side]["boardlab_version"])
              for side in ("a", "b")),
    )  # fmt: skip
    rows, classes = [], []
    for c in d["cells"]:  # each a ComparisonRow
        verdict = verdict_text(c.verdict, bool(c.confounded)) if c.verdict else (c.reason or "")
        if c.unstable:
            verdict += " (UNSTABLE: " + "; ".join(c.unstable) + ")"
        rows.append((cell_label(c.workload, c.params), c.condition, f"{c.metric} [{unit_label(c.unit)}]",
                     fmt_num(c.a.median), fmt_num(c.b.median), fmt_ratio(c.ratio),
                     fmt_interval(*c.decision_ci) if c.decision_ci else "", fmt_p(c.p_adjusted),
                     verdict))  # fmt: skip
        classes.append(f"v-{c.verdict}" if c.verdict in ("slowdown", "speedup") else "")
    cells = doc.Table(
        (doc.Column("workload"), doc.Column("condition"), doc.Column("metric"),
         doc.Column("A median", numeric=True), doc.Column("B median", numeric=True), *VERDICT_COLUMNS),
        tuple(rows),
        row_classes=tuple(classes),
        emphasis_column="verdict",
    )  # fmt: skip
    only = [
        f"{cell_label(c['workload'], c['params'])} @ {c['condition']}: only in {side[0].upper()}"
        for side in ("a_only", "b_only")
        for c in d["unmatched"][side]
    ]
    return doc.Document(
        title,
        (
            doc.section("Campaigns compared", who),
            doc.section(
                "Cells",
                doc.Prose(
                    "B / A is median(B) / median(A) for the same cell; verdicts are decided on the 90% "
                    "decision interval of the cost ratio against each workload's threshold, p adjusted by "
                    f"{method} over {d['family_size']} cells. A cell whose A/A control failed on either side "
                    "is marked unstable.",
                    small=True,
                ),
                cells,
                doc.Items(tuple(only)) if only else None,
            ),
        ),
    )
