"""A cell's runs held column by column (analysis/runs.py): what goes in reads back, run by run and column by
column, in a few bytes a run; and `analyze` keeps exactly what the store holds."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics

import pytest

from boardlab.analysis.document import Points
from boardlab.analysis.runs import (
    INVALID_VALUE,
    MEASURED,
    OK,
    VALID,
    RunPoint,
    RunTable,
    Strings,
)
from boardlab.stats import RunEnvironment

from helpers import make_campaign_db


def _point(i: int, **kw) -> RunPoint:
    base = dict(
        run_id=1000 + i,
        seq=i,
        repetition=i // 2,
        value=1.5 + i,
        valid=True,
        ok=True,
        invalid_reason=None,
        error=None,
        wall_ns=2_000_000 + i,
        environment=RunEnvironment(1.2e6 + i, 45000.0, False),
        warmup_capped=None,
        aa_arm=("A1", "A2")[i % 2],
        user_us=10 * i,
        system_us=None,
    )
    return RunPoint(**{**base, **kw})


MIXED = [
    _point(0),
    _point(1, value=None, valid=False, invalid_reason="load did not run"),  # invalid, no value
    _point(2, valid=False, invalid_reason="too hot"),  # invalid with a value
    _point(3, value=None, valid=False, ok=False, error="exit 1", environment=RunEnvironment()),  # failed
    _point(4, value=math.nan, warmup_capped=True, environment=RunEnvironment(None, None, True)),
    _point(5, value=None, warmup_capped=False),  # valid without a value
    _point(6, run_id=2**40, seq=2**33, wall_ns=2**62, user_us=2**40, system_us=0, aa_arm=None),  # 8-byte ints
    _point(7, invalid_reason="load did not run", valid=False, value=-0.0),
]


def test_every_run_reads_back_as_it_went_in():
    table = RunTable.of_points(MIXED)
    got = list(table)
    assert len(table) == len(MIXED)
    for want, have in zip(MIXED, got, strict=True):
        if want.value is not None and math.isnan(want.value):  # NaN != NaN: the rest equal, the value a NaN
            assert have.value is not None and math.isnan(have.value)
            have = dataclasses.replace(have, value=want.value)
        assert have == want
    assert table[6].run_id == 2**40 and table.run_id.typecode == "q"  # widened where a value needs it


def test_the_accessors_select_what_the_runs_say():
    table = RunTable.of_points(MIXED)
    measured = [p for p in MIXED if p.valid and p.value is not None]
    assert table.seqs().tolist() == [p.seq for p in measured] and table.seqs().typecode == table.seq.typecode
    got = table.values()
    assert got.typecode == "d" and len(got) == len(measured) == 3 and math.isnan(got[1])
    assert [v for v in got if v == v] == [p.value for p in measured if p.value == p.value]
    assert list(table.environments()) == [p.environment for p in measured]
    invalid = [p.value for p in MIXED if not p.valid and p.value is not None]
    assert list(table.values(INVALID_VALUE)) == invalid
    assert list(table.select(table.run_id, VALID)) == [p.run_id for p in MIXED if p.valid]
    assert table.strings(table.aa_arm) == [p.aa_arm for p in measured]
    assert table.known(table.user_us) == [p.user_us for p in measured if p.user_us is not None]
    assert table.known(table.mean_freq_khz, VALID) == [
        p.environment.mean_freq_khz for p in MIXED if p.valid and p.environment.mean_freq_khz is not None
    ]
    assert table.count(OK, VALID) == sum(p.ok and not p.valid for p in MIXED) == 3
    assert table.count(lacks=OK) == 1 and table.count(MEASURED) == 3


def test_time_medians_and_counts_are_computed_once_a_table_and_stay_out_of_its_record():
    """A table is never changed after it is built, so its time medians are kept on it (serve's worker keeps
    a running campaign's unchanged tables): asked again, the same answer without a second pass; the kept
    answer is no field, so neither equality, a copy nor the summary's record sees it."""
    from boardlab.model.records import to_plain

    table = RunTable.of_points(MIXED)
    plain = to_plain(table)
    first = table.time_medians()
    measured = [p for p in MIXED if p.valid and p.value is not None]
    assert first == tuple(
        statistics.median(x for p in measured if (x := getattr(p, name)) is not None)
        for name in ("user_us", "system_us", "wall_ns")
    )
    assert table.time_medians() is first
    counts = table._flag_counts
    assert table.count(OK, VALID) == 3 and table._flag_counts is counts  # the flags counted once too
    assert to_plain(table) == plain and table == RunTable.of_points(MIXED)
    assert dataclasses.replace(table).time_medians() == first


def test_environments_are_columns_read_as_records():
    """A comparison's arms hold their confounders as three columns, each run's record built when read."""
    envs = [RunEnvironment(1.0, 2.0, False), RunEnvironment(), RunEnvironment(3.5, None, True)]
    got = RunTable.of_points([_point(i, environment=e) for i, e in enumerate(envs)]).environments()
    assert [c.typecode for c in (got.mean_freq_khz, got.max_temp_mc, got.throttled)] == ["d", "d", "b"]
    assert list(got) == envs and [got[i] for i in range(3)] == envs and got[-1] == envs[-1]
    assert got[1:] == envs[1:] and len(got) == 3


def test_repeated_strings_cost_a_code_per_run_and_widen_past_256():
    col = Strings.of(["a", None, "b", "a", "a"])
    assert col.codes.typecode == "B" and [col[i] for i in range(5)] == ["a", None, "b", "a", "a"]
    assert col.counts() == [("a", 3), ("b", 1)]  # first seen first, None not counted
    many = Strings.of(f"reason {i}" for i in range(300))
    assert many.codes.typecode == "H" and many[299] == "reason 299"


def test_a_typical_run_costs_under_64_bytes():
    """The point of the table: 10^6 runs in tens of MB (a RunPoint per run was about 600 bytes)."""
    n = 20_000
    table = RunTable.of_points(
        _point(
            i, environment=RunEnvironment(1.2e6 + i % 97, 40000.0 + i % 13, i % 50 == 0), user_us=12_345 + i
        )
        for i in range(n)
    )
    columns = [getattr(table, f.name) for f in dataclasses.fields(table) if f.name != "omitted"]
    arrays = [c.codes if isinstance(c, Strings) else c for c in columns]
    per_run = sum(a.buffer_info()[1] * a.itemsize for a in arrays) / n
    assert 40 < per_run < 64, per_run


def test_points_read_as_the_tuples_they_hold():
    from boardlab.model.records import to_plain as plain

    pts = Points([1, 2, 3], [0.5, 0.25, 0.125])
    assert list(pts) == [(1.0, 0.5), (2.0, 0.25), (3.0, 0.125)] and len(pts) == 3 and pts[-1] == (3.0, 0.125)
    assert list(pts[1:]) == [(2.0, 0.25), (3.0, 0.125)]
    assert plain(pts) == plain([(1.0, 0.5), (2.0, 0.25), (3.0, 0.125)])  # the stored document: unchanged
    with pytest.raises(ValueError, match="3 x values for 2 y values"):
        Points([1, 2, 3], [1, 2])


def test_the_analysis_keeps_every_stored_run_of_a_cell(tmp_path):
    """Each cell's table against the store's own rows: every field as stored, the monitor's and rusage's
    JSON as the store's one derivation reads it (model.run.run_columns)."""
    from boardlab.analysis.core import analyze
    from boardlab.model.run import run_columns
    from boardlab.store import Store

    db = make_campaign_db(tmp_path / "c.db", n=6)
    with Store.open(db, create=False) as store:
        a = analyze(store, 1)
        rows = {c.cell_id: store.cell_runs(c.cell_id) for c in a.cells}
        raw = {i: (json.loads(m), json.loads(ru or "{}")) for i, m, ru in
               store.conn.execute("SELECT id, monitor_json, rusage_json FROM runs")}  # fmt: skip
    assert sum(len(r) for r in rows.values()) == sum(len(c.runs) for c in a.cells) > 0
    for c in a.cells:
        for p, r in zip(c.runs, rows[c.cell_id], strict=True):
            cols = run_columns(*raw[r["id"]])
            assert (p.run_id, p.seq, p.repetition, p.value, p.valid, p.ok, p.wall_ns) == (
                r["id"], r["seq"], r["repetition"], r["value"], bool(r["valid"]), bool(r["ok"]), r["wall_ns"]
            )  # fmt: skip
            assert (p.invalid_reason, p.error, p.aa_arm) == (r["invalid_reason"], r["error"], r["aa_arm"])
            assert (p.user_us, p.system_us) == (cols.user_us, cols.system_us)
            env = p.environment
            assert (env.mean_freq_khz, env.max_temp_mc, env.throttled) == (
                cols.mean_freq_khz, cols.max_temp_mc, cols.throttled
            )  # fmt: skip
        assert c.values == tuple(p.value for p in c.runs if p.valid and p.value is not None)
