"""A short program's pid reaches the monitor with its end (the launcher reaps it as it ends and tells both in
one write): the monitor then reads nothing of /proc for it, and what it records is what reading the gone
process's tree records (nothing of the tree, the children files taken as there). On the VM fixture tree; no
process is started."""

from __future__ import annotations

from boardlab.monitor.sampler import Monitor
from boardlab.platform import sampling

from helpers import SYSFS

GONE = 999_999  # no such process in the fixture's /proc


def _stable(summary: dict) -> dict:
    """The summary without the monitor's own clocks."""
    return {k: v for k, v in summary.items() if k not in ("monitor_cpu_s", "monitor_wall_s")}


def _run(ended: bool):
    m = Monitor(SYSFS / "vm", interval_s=10.0)
    try:
        m.prepare(0)
        m.start(GONE, 0, ended=ended)
        return m.stop()
    finally:
        m.close()


def test_a_program_reaped_before_it_is_named_is_not_looked_for_and_records_the_same(monkeypatch):
    read = _run(ended=False)  # the pid looked for, as for a program that may still run

    def refuse(*_a, **_k):
        raise AssertionError("a reaped program's tree was read")

    monkeypatch.setattr(sampling, "TreeReader", refuse)
    monkeypatch.setattr(sampling, "has_children_files", refuse)
    told = _run(ended=True)
    assert _stable(told.summary) == _stable(read.summary)
    assert [s[0] for s in told.series] == [s[0] for s in read.series]
    assert told.summary["worker_tree"] == {
        "launcher_left_out": False,
        "processes_max": 1,
        "children_from": "task children files",
    }
    assert not any(key.startswith("worker.") for key, _t, _v in told.series)


def test_a_program_not_known_to_have_ended_is_looked_for(monkeypatch):
    made: list[int] = []
    real = sampling.TreeReader

    def counted(src, pid, **kw):
        made.append(pid)
        return real(src, pid, **kw)

    monkeypatch.setattr(sampling, "TreeReader", counted)
    _run(ended=False)
    assert made == [GONE]
