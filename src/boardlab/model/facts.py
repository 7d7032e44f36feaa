"""What analysis knows of a campaign's workloads, stored with the campaign.

A report is made from the database alone, on any host: the host that renders it may have another build of
boardlab-kern, or none. So the runner stores, when the campaign starts, the analysis facts of every workload
of its catalog (family, metrics, tails, histograms, roles, curves, composite membership) and what the board's
power sources allow the services scenario, as the campaign artifact `WORKLOAD_FACTS`; analysis reads only
that. Every workload of the catalog is stored, not only the campaign's: a composite is shown only when all
its members were measured, which needs the whole membership.

What belongs to a cell rather than to its workload (the practical thresholds its plan entry sets: two entries
of one workload may set two; the cell its entry's `compare` parameter compares it with; whether the metric
it is judged on is a tail, as the metric's spec declares) is stored per cell key, with the campaign's run
order, as the campaign artifact `CELL_FACTS`.

What one analysis reads is a `WorkloadFacts`, made from one campaign's artifact and handed to whatever needs
it (the analysis's studies through their context, the document through the analysis): nothing of it is kept
in the process, so one process analysing campaigns of two builds gives each its own facts. A campaign stored
before the runner stored facts gets them written once by the program that opens its store
(`boardlab.campaign.facts.derive_missing`); where that cannot write, its workloads read as plain ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from boardlab.model.workload import MetricSpec, ParamSpec, ParamType, WorkloadSpec

WORKLOAD_FACTS = "workload-facts"  # the campaign artifact's name
WORKLOAD_FACTS_SCHEMA = 1
CELL_FACTS = "cell-facts"  # the campaign artifact of each cell's facts, by cell key
# 2 adds each cell's compare pairing and the run order, 3 its metric's tail-ness; 1 (thresholds only) and 2
# still read, their cells' tail-ness unknown (None) for the reader to derive
CELL_FACTS_SCHEMA = 3


@dataclass(frozen=True)
class WorkloadFacts:
    """What one campaign stored of its workloads (the artifact `WORKLOAD_FACTS`, read): each workload's spec
    as analysis reads it, by name, and the services scenario's energy statement. Empty (`stored` False) for
    a campaign stored without them: its workloads are plain ones (no roles, tails or composites)."""

    specs: Mapping[str, WorkloadSpec] = field(default_factory=lambda: MappingProxyType({}))
    energy_reason: str | None = None
    stored: bool = False

    def __post_init__(self) -> None:  # a read-only view of a copy: nobody changes another's facts
        object.__setattr__(self, "specs", MappingProxyType(dict(self.specs)))

    def spec_of(self, workload: str) -> WorkloadSpec | None:
        return self.specs.get(workload)

    def has_role(self, workload: str, role: str) -> bool:
        spec = self.specs.get(workload)
        return spec is not None and role in spec.roles

    def cell_param(self, workload: str, params: Mapping[str, Any], name: str) -> Any:
        """A cell's parameter as it ran: its plan's value, else the workload's default as the campaign stored
        it (`spec_facts`' param_defaults), else None (not known: a campaign stored before defaults were)."""
        if name in params:
            return params[name]
        spec = self.specs.get(workload)
        param = None if spec is None else spec.param(name)
        return None if param is None else param.default

    def tail_samples(self, workload: str) -> bool:
        spec = self.specs.get(workload)
        return spec is not None and spec.tail_samples

    def catalog(self) -> dict[str, WorkloadSpec]:
        """Every workload whose facts the campaign stored (the whole catalog of the boardlab that ran it)."""
        return dict(self.specs)


def _metric(m: dict) -> MetricSpec:
    return MetricSpec(
        m["name"], m["unit"], bool(m["higher_is_better"]), m.get("kind", "rate"), m.get("phase")
    )


def spec_facts(spec: WorkloadSpec) -> dict:
    """The part of a workload's spec that analysis reads, as JSON."""
    return {
        "name": spec.name,
        "family": spec.family,
        "summary": spec.summary,
        "runner": spec.runner,
        "metrics": [
            {
                "name": m.name,
                "unit": m.unit,
                "higher_is_better": m.higher_is_better,
                "kind": m.kind,
                "phase": m.phase,
            }
            for m in spec.metrics
        ],
        "tail_samples": spec.tail_samples,
        "tail_metric": spec.tail_metric,
        "tail_count_metric": spec.tail_count_metric,
        "sample_histogram": spec.sample_histogram,
        "roles": list(spec.roles),
        "throughput_curve": None if spec.throughput_curve is None else list(spec.throughput_curve),
        "composite": spec.composite,
        # what a cell whose plan left a parameter out ran with (a study keys its cells by it)
        "param_defaults": {p.name: p.default for p in spec.params if p.default is not None},
    }


def spec_from_facts(d: dict) -> WorkloadSpec:
    """A spec with what analysis reads (no hooks: nothing launches a stored workload)."""
    curve = d.get("throughput_curve")
    return WorkloadSpec(
        name=d["name"],
        family=d["family"],
        summary=d.get("summary", ""),
        runner=d.get("runner", ""),
        metrics=tuple(_metric(m) for m in d.get("metrics", ())),
        tail_samples=bool(d.get("tail_samples")),
        tail_metric=d.get("tail_metric"),
        tail_count_metric=d.get("tail_count_metric"),
        sample_histogram=d.get("sample_histogram"),
        roles=tuple(d.get("roles", ())),
        throughput_curve=None if curve is None else (str(curve[0]), str(curve[1]), float(curve[2])),
        composite=d.get("composite"),
        params=tuple(_default_param(name, v) for name, v in (d.get("param_defaults") or {}).items()),
    )


def _default_param(name: str, default: Any) -> ParamSpec:
    """A stored default as the parameter analysis reads: its name and default (type from the value)."""
    kinds: dict[type, ParamType] = {bool: "bool", int: "int", float: "float", str: "str"}
    if type(default) not in kinds:
        raise ValueError(f"parameter {name}: a default of type {type(default).__name__}")
    return ParamSpec(name, kinds[type(default)], default)


def facts_document(specs: Iterable[WorkloadSpec], *, energy_reason: str | None) -> dict:
    """The artifact: every workload's facts by name, and the services scenario's energy statement for this
    board (how it measures energy per message, or why it cannot)."""
    return {
        "schema": WORKLOAD_FACTS_SCHEMA,
        "workloads": {s.name: spec_facts(s) for s in sorted(specs, key=lambda s: s.name)},
        "energy_reason": energy_reason,
    }


def read_facts_document(doc: dict) -> WorkloadFacts:
    """The stored facts; ValueError for a document this boardlab cannot read."""
    if not isinstance(doc, dict) or doc.get("schema") != WORKLOAD_FACTS_SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ValueError(
            f"workload facts of schema {got!r}; this boardlab reads schema {WORKLOAD_FACTS_SCHEMA}"
        )
    try:
        specs = {name: spec_from_facts(d) for name, d in doc["workloads"].items()}
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"workload facts are malformed ({type(exc).__name__}: {exc})") from None
    return WorkloadFacts(specs, doc.get("energy_reason"), stored=True)


@dataclass(frozen=True)
class ComparePair:
    """A cell compared by its plan entry's `compare` parameter: with the cell at that parameter's first value
    in the same entry (same workload, condition and other parameters), `baseline_key`."""

    param: str
    baseline_key: str
    baseline_value: Any  # the parameter's first value in the entry: what the baseline's label says


@dataclass(frozen=True)
class ConditionPart:
    """One part of a cell's condition as its plan declared it: a kind ("governor", "isolation", "workload",
    ...) and its params. What a study reads of a condition's structure, in place of its name."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:  # read-only: a study reads the plan's params, never changes them
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __reduce__(self):
        """Pickled as a dict (a mappingproxy cannot be): analyses cross to and from serve's and ingest's
        worker processes."""
        return (ConditionPart, (self.kind, dict(self.params)))


def condition_parts(condition: Mapping[str, Any]) -> tuple[ConditionPart, ...]:
    """A condition as the store keeps it with each cell (`ConditionSpec.to_dict`, the cells' condition_json)
    as its parts; one stored without `parts` is its own single part."""
    parts = condition.get("parts") or [{"kind": condition.get("kind"), "params": condition.get("params")}]
    return tuple(ConditionPart(str(p["kind"]), p.get("params") or {}) for p in parts)


@dataclass(frozen=True)
class CellFacts:
    """What the plan entry that produced a cell says of it for analysis: its practical threshold and tail
    threshold (fractions, 0.02 = 2%; None = the default for its metric) and its compare pairing (None: the
    entry compares no parameter, or the cell is at its first value). `derived`: the thresholds were not stored
    with the campaign but read from its stored plan by workload name (a campaign stored before cells carried
    them), which cannot tell two entries of one workload apart. `tail`: the cell's metric is a tail (p99 and
    above, or a maximum), as its spec declares; None in a document stored before cells carried it, until the
    analysis derives it (`analysis.core.cell_facts`). `condition`: the parts of its condition as the plan
    declared them; not in the `CELL_FACTS` document, since the store keeps them with every cell (its
    condition_json) and has since its first schema."""

    threshold: float | None = None
    tail_threshold: float | None = None
    derived: bool = False
    compare: ComparePair | None = None
    tail: bool | None = None
    condition: tuple[ConditionPart, ...] = ()


@dataclass(frozen=True)
class StoredCellFacts:
    """The artifact read: each cell's facts by key, and the campaign's run order. `order` None: a schema-1
    document, which stored the thresholds alone (no pairing, no order: the reader derives them). `schema`:
    the document's; below CELL_FACTS_SCHEMA its cells' `tail` is None."""

    cells: dict[str, CellFacts]
    order: str | None
    schema: int = CELL_FACTS_SCHEMA


def _pair_doc(pair: ComparePair | None) -> dict | None:
    if pair is None:
        return None
    return {"param": pair.param, "baseline": pair.baseline_key, "value": pair.baseline_value}


def cell_facts_document(cells: Mapping[str, CellFacts], order: str) -> dict:
    """The artifact: each cell's facts by cell key, and the campaign's run order."""
    return {
        "schema": CELL_FACTS_SCHEMA,
        "order": order,
        "cells": {
            key: {
                "threshold": f.threshold,
                "tail_threshold": f.tail_threshold,
                "compare": _pair_doc(f.compare),
                "tail": f.tail,
            }
            for key, f in sorted(cells.items())
        },
    }


def read_cell_facts_document(doc: dict) -> StoredCellFacts:
    """The stored cell facts (schema 1 to 3); ValueError for a document this boardlab cannot read."""
    schema = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
    if schema not in (1, 2, CELL_FACTS_SCHEMA):
        raise ValueError(
            f"cell facts of schema {schema!r}; this boardlab reads schema 1 to {CELL_FACTS_SCHEMA}"
        )
    try:
        cells = {
            key: CellFacts(
                _fraction(d["threshold"]),
                _fraction(d["tail_threshold"]),
                compare=_read_pair(d["compare"]) if schema >= 2 else None,
                tail=_read_tail(d["tail"]) if schema >= 3 else None,
            )
            for key, d in doc["cells"].items()
        }
        order = None if schema == 1 else doc["order"]
        if order is not None and not isinstance(order, str):
            raise ValueError(f"the run order must be a name, not {order!r}")
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise ValueError(f"cell facts are malformed ({type(exc).__name__}: {exc})") from None
    return StoredCellFacts(cells, order, schema)


def _read_tail(value) -> bool | None:
    """A cell's tail-ness; null for a cell kept from an older document that the run rewriting it lacked."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"a cell's tail is true, false or null, not {value!r}")
    return value


def _read_pair(d) -> ComparePair | None:
    if d is None:
        return None
    if not isinstance(d["param"], str) or not isinstance(d["baseline"], str):
        raise ValueError(f"a compare pairing names a parameter and a cell key, not {d!r}")
    if not isinstance(d["value"], str | int | float):  # a plan's parameter value: a scalar (bool is an int)
        raise ValueError(f"a compare pairing's value is a parameter value, not {d['value']!r}")
    return ComparePair(d["param"], d["baseline"], d["value"])


def _fraction(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 10:
        raise ValueError(f"a threshold must be a fraction between 0 and 10, not {value!r}")
    return float(value)
