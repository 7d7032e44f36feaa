"""The analysis records and the study contract: what `analysis.core` computes from a stored campaign (a run,
a cell, a comparison, the A/A control, the campaign), what a campaign's stored summary keeps of it
(`KeptAnalysis`) and what compare, history and serve read of either (`CampaignView`) and make of two
(`ComparisonRow`), what a study reads (`StudyContext`), what it provides (`Study`, the protocol of a module in
`analysis.studies.STUDIES`) and how its result is carried (`StudyResult`).

This module is the contract between the analysis and its study plugins: `analysis.core` and the registry
(`analysis.studies`) import it, and it imports neither of them, nor any study, so there is no import cycle
between the analysis and its plugins (tests/unit/test_layering.py).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from boardlab.analysis.cellruns import Remember, StoredRuns, computed_now
from boardlab.analysis.format import cell_label, condition_text
from boardlab.analysis.runs import MEASURED, OK, VALID, RunTable
from boardlab.model.facts import CellFacts, WorkloadFacts
from boardlab.stats import CellSummary, Comparison, RunEnvironment
from boardlab.stats.threshold import family_method_name

if TYPE_CHECKING:
    from boardlab.analysis.document import Section
    from boardlab.store import Store


# The most measured runs of a cell that a comparison between two campaigns reads (a history's step, `compare`,
# the cross-board report): more than this many, and a sample of this many spread over the campaign. Beyond
# it a side's runs hardly narrow the interval (a step from a 50-run cell against 2,048 runs has an interval
# 1.2% wider than against infinitely many), while reading them made a step cost the larger campaign's size:
# about 3 s against a campaign of 10^6 runs, and its stored summary 63 MB. docs/method.md "History".
COMPARED_RUNS = 2048


@dataclass(frozen=True)
class CellAnalysis:
    cell_id: int
    key: str
    workload: str
    params: dict[str, Any]
    condition: str
    baseline: str | None  # the condition this cell is compared with; None for a baseline cell
    metric: str
    unit: str
    higher_is_better: bool
    # every attempt, in run order, column by column: held, or read from the store when used (a report
    # streaming its cells: `analyze(runs_budget=...)`)
    runs: RunTable | StoredRuns
    summary: CellSummary | None  # over valid runs; None below MIN_RUNS_FOR_SUMMARY
    summary_reason: str | None
    facts: CellFacts = CellFacts()  # what its plan entry says of it: its thresholds, its compare pairing

    @property
    def values(self) -> tuple[float, ...]:
        """The valid runs' values, in run order (built on each call: keep it while you use it)."""
        return tuple(self.runs.values())

    def environments(self) -> Sequence[RunEnvironment]:
        """The confounders of the runs of `values`, in the same order."""
        return self.runs.environments()

    def compared_runs(self) -> RunTable:
        """The runs a comparison with another campaign's cell reads (`compare.pair_rows`, and what a stored
        summary keeps): every run, or where more than COMPARED_RUNS are measured, that many of them spread
        evenly over the campaign (`RunTable.thinned`), with every run still counted."""
        table = self.runs if isinstance(self.runs, RunTable) else self.runs.table()
        return table.thinned(COMPARED_RUNS)

    @property
    def compared_sample(self) -> int | None:
        """How many runs `compared_runs` holds where it is a sample (more than COMPARED_RUNS measured), else
        None; counted, not read: a stored summary's cell holds its sample already."""
        return COMPARED_RUNS if self.n_valid > COMPARED_RUNS else None

    @property
    def label(self) -> str:
        return cell_label(self.workload, self.params)

    @property
    def condition_text(self) -> str:
        """Its condition as a reader reads it, from the parts its plan declared (`format.condition_text`)."""
        return condition_text(self.condition, self.facts.condition)

    @property
    def n_valid(self) -> int:
        """The runs of `values` (counted, not read)."""
        return self.runs.count(MEASURED)

    @property
    def n_invalid(self) -> int:
        return self.runs.count(OK, VALID)

    @property
    def n_failed(self) -> int:
        return self.runs.count(lacks=OK)


@dataclass(frozen=True)
class ComparisonAnalysis:
    workload: str
    params: dict[str, Any]
    label: str
    condition: str
    baseline: str
    metric: str
    unit: str
    comparison: Comparison | None
    reason: str | None  # why there is no comparison
    # Set when the A/A control of this comparison's reference cell said slowdown or speedup: why the
    # verdict cannot be trusted and what to do (docs/method.md "A/A control").
    unstable: str | None = None
    delta_source: str = ""  # where the threshold came from (the plan, or the default)
    cell_key: str = ""  # the compared cell's key and its reference's: which two cells, without parsing labels
    baseline_key: str = ""
    compared: str = ""  # the `compare` parameter whose values this compares ("": condition vs baseline)
    tail: bool = False  # compared on the p99 (`metric` is then the tail's), not on the runs' medians


@dataclass(frozen=True)
class PairSide:
    """One side of a compared pair of cells (`ComparisonRow.a`, `.b`): its valid runs and their median, in
    the cell's unit (None where it has no valid run), and the runs the test read where that is fewer
    (`tested`: a sample, `CellAnalysis.compared_runs`; None where it read all of them)."""

    n: int
    median: float | None
    tested: int | None = None


@dataclass(frozen=True)
class ComparisonRow:
    """One cell of campaign A matched in campaign B (`compare.pair_rows`): which cell, each side's runs and
    median, and B/A with its intervals, test and verdict once the comparisons are corrected (`finish_rows`;
    None until then, and where the pair has no comparison, `reason` says why). What `boardlab compare`, the
    cross-board report and a history's steps show, and what a stored step keeps (`summary.step`, through
    `model.records`). The fields are named and ordered as the JSON documents' keys (`plain`)."""

    workload: str
    params: dict[str, Any]
    condition: str
    metric: str
    unit: str
    higher_is_better: bool
    a: PairSide
    b: PairSide
    ratio: float | None = None
    ratio_ci: tuple[float, float] | None = None  # 95%, of B/A
    cost_ratio: float | None = None  # > 1: B is worse
    cost_ratio_ci: tuple[float, float] | None = None  # 95%, shown
    decision_ci: tuple[float, float] | None = None  # 90%, decided on
    delta: float | None = None  # the threshold, a fraction of the ratio (A's cell's)
    delta_source: str | None = None
    test: str | None = None
    test_method: str | None = None
    test_words: str | None = None
    estimator: str | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    verdict: str | None = None
    confounded: bool | None = None
    reasons: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    reason: str | None = None  # why there is no comparison
    unstable: tuple[str, ...] | None = None  # each side's failed A/A control, "A: remedy"

    def plain(self) -> dict[str, Any]:
        """The row in the JSON documents (`compare --json`, `history --json`, serve's .json twins): its fields
        by name in order, each side {"n", "median", "tested"}, intervals and lists as JSON lists."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, PairSide):
                value = {"n": value.n, "median": value.median, "tested": value.tested}
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


@dataclass(frozen=True)
class HistoryStep:
    """One step of a history (`analysis.history`): campaign `to_id` against the campaign `from_id` before it
    on the same board, its cells compared as `compare.pair_rows` compares two campaigns."""

    from_id: int
    to_id: int
    cells: tuple[ComparisonRow, ...]

    def plain(self) -> dict[str, Any]:
        """The step in `history --json` and serve's history twin: {"from", "to", "cells"}."""
        return {"from": self.from_id, "to": self.to_id, "cells": [c.plain() for c in self.cells]}


@dataclass(frozen=True)
class AAControl:
    """The A/A control of one reference cell: its baseline runs labelled A1 and A2 alternately by the
    schedule before the first run, compared with each other by the same rule as every comparison.
    Expected: no change or inconclusive. Not part of the report's correction family: uncorrected, it errs
    towards calling a workload unstable, the safe side for a control."""

    cell_id: int
    workload: str
    params: dict[str, Any]
    label: str
    condition: str
    metric: str
    unit: str
    n_a1: int
    n_a2: int
    comparison: Comparison | None
    reason: str | None  # why there is no A/A verdict

    @property
    def kind(self) -> str:
        if self.comparison is None:
            return "insufficient" if self.n_a1 or self.n_a2 else "not labelled"
        return self.comparison.verdict.kind

    @property
    def unstable(self) -> bool:
        return self.comparison is not None and self.comparison.verdict.kind in ("slowdown", "speedup")

    @property
    def remedy(self) -> str | None:
        if not self.unstable:
            return None
        assert self.comparison is not None
        c = self.comparison
        return (
            f"the A/A control says {c.verdict.kind} (A2/A1 cost ratio {c.cost_ratio:.3f}, decision interval "
            f"[{c.decision_ci.low:.3f}, {c.decision_ci.high:.3f}]) although both halves ran the same "
            "condition: the board drifted or was not quiet during the campaign. Check the drift column, the "
            "gate's waits and the temperatures, quiet the board (stop other work, fix the frequency, let it "
            "cool), then run the campaign again"
            if c.decision_ci is not None
            else f"the A/A control says {c.verdict.kind}"
        )


@dataclass(frozen=True)
class CampaignAnalysis:
    campaign_id: int
    name: str
    status: str
    plan_source: str
    plan_text: str
    boardlab_version: str
    started_unix_s: float
    finished_unix_s: float | None
    board_label: str
    inventory: dict
    environment: dict  # checks and capabilities at the start
    monitor: dict  # the monitor's own cost
    order: str
    cells: tuple[CellAnalysis, ...]
    comparisons: tuple[ComparisonAnalysis, ...]
    notes: dict = field(default_factory=dict)
    # The p99 against the baseline, for workloads with `tail_samples` (stats.tails: per-run or pooled with a
    # cluster bootstrap), in the same correction family as the medians.
    tail_comparisons: tuple[ComparisonAnalysis, ...] = ()
    aa_controls: tuple[AAControl, ...] = ()
    family_size: int = 0  # every comparison with a verdict, medians and tails together
    family_adjustment: str = "holm"  # "holm" up to 50 comparisons, "bh" above
    # The studies that apply to this campaign (analysis.studies), each with its typed record, in report order.
    studies: tuple[StudyResult, ...] = ()
    # "" when each cell's compare pairing was stored with the campaign; else how it was derived (by workload
    # name from the stored plan: a campaign stored by an older boardlab), which the report says.
    pairing_source: str = ""
    # what the campaign stored of its workloads (analysis/specs.py): what its document reads of them
    workloads: WorkloadFacts = field(default_factory=WorkloadFacts)

    def condition_text(self, name: str) -> str:
        """A condition of this campaign as a reader reads it: its cells' `condition_text`. A comparison's side
        that is no cell's condition is as it is: a parameter's value (`size_bytes=4096 @policy0 1.4 GHz`,
        made in the reader's words), or a reference no cell ran under (no parts to read)."""
        return self._condition_texts.get(name, name)

    @functools.cached_property
    def _condition_texts(self) -> dict[str, str]:
        return {c.condition: c.condition_text for c in self.cells}

    def study_sections(self) -> list[Section]:
        """Every applying study's sections of the document, in the registry's order."""
        return [sec for r in self.studies for sec in r.sections(self)]

    @property
    def shown_by_studies(self) -> dict[int, str]:
        """cell id -> where a study's section shows it (instead of the generic boxplots)."""
        return {cid: r.shown_as for r in self.studies for cid in r.shows}

    def study(self, module: str) -> Any:
        """The record of the study `module` (e.g. `boardlab.analysis.studies.energy.__name__`), or None."""
        return next((r.record for r in self.studies if r.study == module), None)

    @property
    def family_text(self) -> str:
        return (
            f"{family_method_name(self.family_adjustment)} over all {self.family_size} comparisons of this "
            "report (medians and tails together)"
        )

    @property
    def adjusted_text(self) -> str:
        """How the p-values were adjusted, as a clause; a report where no comparison had runs on both sides
        adjusted none, and says so rather than "over all 0 comparisons"."""
        if self.family_size == 0:
            return "no p adjusted: no comparison has valid runs on both sides"
        return f"p adjusted by {self.family_text}"

    @property
    def unstable_workloads(self) -> list[AAControl]:
        return [c for c in self.aa_controls if c.unstable]

    @property
    def conditions(self) -> list[str]:
        seen: list[str] = []
        for c in self.cells:
            if c.condition not in seen:
                seen.append(c.condition)
        return seen

    @property
    def warnings(self) -> list[dict]:
        return [c for c in self.environment.get("checks") or [] if c.get("status") != "OK"]

    def kept(
        self, runs_stored: int, verdicts: dict[str, Any], remember: Remember = computed_now
    ) -> KeptAnalysis:
        """What the campaign's summary keeps of this analysis, computed from its `runs_stored` runs, with the
        tally of its `verdicts` (`analysis.verdicts.verdict_tally`, which reads this module); `remember`: a
        cell's runs kept while they are the same (`cellruns.GrowingTables.remembered`)."""
        # a summary keeps the runs compare and history read of each cell: tables, not the store's
        cells = tuple(
            dataclasses.replace(c, runs=remember("compared runs", (c.cell_id,), (), c.compared_runs))
            for c in self.cells
        )
        return KeptAnalysis(
            self.campaign_id, self.name, self.status, self.board_label, self.boardlab_version,
            self.started_unix_s, self.plan_text, cells, self.aa_controls, verdicts, runs_stored,
        )  # fmt: skip


class CampaignView(Protocol):
    """What compare (`compare.pair_rows`, `compare_campaigns`), the history and serve's pages read of a
    campaign: a `CampaignAnalysis` computed now and the `KeptAnalysis` of its stored summary alike, with the
    same cell and A/A control records."""

    @property
    def campaign_id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def board_label(self) -> str: ...
    @property
    def boardlab_version(self) -> str: ...
    @property
    def started_unix_s(self) -> float: ...
    @property
    def plan_text(self) -> str: ...
    @property
    def cells(self) -> Sequence[CellAnalysis]: ...
    @property
    def aa_controls(self) -> Sequence[AAControl]: ...


@dataclass(frozen=True)
class KeptAnalysis:
    """What a campaign's stored summary keeps of its analysis (boardlab.summary, through the record codec of
    `model.records`): the campaign's identity, its cells with every run and their summaries, its A/A controls,
    and the tally of its verdicts that a list of campaigns shows (`analysis.verdicts.verdict_tally`). Not
    kept: the comparisons, studies and environment, which only the report reads, and the report's document is
    kept beside it. A `CampaignView`."""

    campaign_id: int
    name: str
    status: str
    board_label: str
    boardlab_version: str
    started_unix_s: float
    plan_text: str
    cells: tuple[CellAnalysis, ...]
    aa_controls: tuple[AAControl, ...]
    verdicts: dict[str, Any]
    runs_stored: int  # the campaign's runs when it was computed: a step between two is kept for these counts


@dataclass(frozen=True)
class StudyContext:
    """What a study may read: the store (through its methods only), the campaign, its analysed cells and what
    the campaign stored of its workloads (`workloads`: their roles, tails, curves, histograms)."""

    store: Store
    campaign_id: int
    cells: tuple[CellAnalysis, ...]
    inventory: dict
    environment: dict
    workloads: WorkloadFacts = field(default_factory=WorkloadFacts)


@dataclass(frozen=True)
class StudyResult:
    """One applying study: its module (the plugin), its section title, its typed record, and the cells its
    section shows (the generic run-value boxplots then point there instead of drawing them again)."""

    study: str
    title: str
    record: Any
    shows: tuple[int, ...] = ()
    shown_as: str = ""  # where those cells are shown, e.g. "per model in the AI inference section below"
    covers: tuple[
        int, ...
    ] = ()  # the cells the study is about (its `shows`, or more): the summary card's groups

    def sections(self, analysis: CampaignAnalysis) -> list[Section]:
        return list(study_module(self.study).sections(analysis, self.record))


@runtime_checkable
class Study(Protocol):
    """What a module named in `analysis.studies.STUDIES` provides (docs/extending.md "A report study").

    Optional, read with `getattr`: `SHOWN_AS` (where its section shows the cells), `shows(record)` (the ids
    of the cells its section shows) and `covers(record)` (the cells it is about, default: `shows`)."""

    TITLE: str  # the section title

    def applies(self, ctx: StudyContext) -> bool:
        """Whether the campaign has what the study reads, from the stored data or the workloads' stored
        facts (`ctx.workloads`), never from a workload's name."""
        ...

    def analyze(self, ctx: StudyContext) -> Any:
        """A typed frozen record read through `ctx.store`'s methods, or None: nothing to show after all."""
        ...

    def sections(self, analysis: CampaignAnalysis, record: Any) -> Iterable[Section]:
        """What the report shows, in the document model (`analysis.document`)."""
        ...


def study_module(name: str) -> Study:
    """The study plugin `name` (a module named in `STUDIES`), imported on first use."""
    return cast(Study, importlib.import_module(name))
