"""Report studies as plugins: one module per study, one line per study in `STUDIES` (the report's order).

A study module provides (the `Study` protocol of `analysis.records`, the contract this registry and the
studies share; it imports neither):

- `TITLE`: its section title ("Real-time latency");
- `applies(ctx: StudyContext) -> bool`: whether the campaign has what it reads, decided from the stored data
  or the workloads' specs as the campaign stored them (`ctx.workloads`), never from a workload's name;
- `analyze(ctx) -> record`: reads the store through `ctx.store`'s methods and returns a typed frozen record;
- `sections(analysis: CampaignAnalysis, record) -> Iterable[document.Section]`: what the report shows;
- optionally `shows(record) -> Iterable[int]`: the ids of the cells its section shows, which the generic
  run-value boxplots then only point to;
- optionally `covers(record) -> Iterable[int]`: the ids of the cells the study is about, when more than it
  shows (the summary card groups its headline figures by study; default: `shows`).

Nothing outside a study's module names the study: the analysis carries each result as a `StudyResult` and
the renderers lay out whatever sections it yields (docs/extending.md, "Add a report study").
"""

from __future__ import annotations

from boardlab.analysis.records import StudyContext, StudyResult, study_module

STUDIES = (
    "boardlab.analysis.studies.curves",
    "boardlab.analysis.studies.rt",
    "boardlab.analysis.studies.ai",
    "boardlab.analysis.studies.energy",
    "boardlab.analysis.studies.governor",
    "boardlab.analysis.studies.stream",
    "boardlab.analysis.studies.services",
    "boardlab.analysis.studies.series",
)


def run_studies(ctx: StudyContext, studies: tuple[str, ...] = STUDIES) -> tuple[StudyResult, ...]:
    """Every study that applies to the campaign, analysed, in registry order."""
    out = []
    for name in studies:
        module = study_module(name)
        if not module.applies(ctx):
            continue
        record = module.analyze(ctx)
        if record is None:  # applies, but found nothing to show after all
            continue
        shows = tuple(module.shows(record)) if hasattr(module, "shows") else ()
        shown_as = getattr(module, "SHOWN_AS", f"in the {module.TITLE} section below")
        covers = tuple(module.covers(record)) if hasattr(module, "covers") else shows
        out.append(StudyResult(name, module.TITLE, record, shows, shown_as, covers))
    return tuple(out)
