"""`boardlab history` for a CI system: the latest step of each board (its last campaign against the one
before) as JUnit XML (`--format junit`: one test case per cell, a regression a `<failure>`) and as GitHub
Actions workflow commands (`--format github`: `::error` per regression, `::notice` per improvement), both
from the history document (`analysis.history.build_history`), so they say what its text says.

GitLab reads the JUnit file (`artifacts: reports: junit:`) into a merge request's test summary; GitHub and
Jenkins read it through their JUnit plugins. docs/lab.md has a nightly job for each."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from boardlab.analysis.format import cell_label, fmt_interval, fmt_p, fmt_ratio
from boardlab.analysis.history import commit_words
from boardlab.report.escape import term

if TYPE_CHECKING:
    from boardlab.analysis.records import ComparisonRow, HistoryStep


def latest_steps(d: dict) -> list[tuple[dict, HistoryStep | None, dict | None, dict | None]]:
    """(board, its latest step or None, the step's earlier campaign, its later one) per board of `d`."""
    out = []
    for board in d["boards"]:
        step = board["steps"][-1] if board["steps"] else None
        by_id = {c["campaign_id"]: c for c in board["campaigns"]}
        out.append(
            (board, step, by_id.get(step.from_id) if step else None, by_id.get(step.to_id) if step else None)
        )
    return out


def cell_name(c: ComparisonRow) -> str:
    return f"{cell_label(c.workload, c.params)} @ {c.condition}: {c.metric}"


def _campaign_words(c: dict | None) -> str:
    if c is None:
        return "?"
    commit = commit_words(c)
    return f"campaign {c['campaign_id']}" + (f" (commit {commit})" if commit else "")


def step_sentence(board: dict, row: ComparisonRow, a: dict | None, b: dict | None) -> str:
    """'regression on board X: CELL: B / A 0.9038 (90% decision interval ...) from campaign 2 (commit ...) to
    campaign 3 (commit ...)'."""
    words = {"slowdown": "regression", "speedup": "improvement", None: "no verdict"}
    kind = words.get(row.verdict) or str(row.verdict).replace("_", " ")
    ci = fmt_interval(*row.decision_ci) if row.decision_ci else "–"
    return (
        f"{kind} on board {board['board']}: {cell_name(row)}: B / A {fmt_ratio(row.ratio)} (90% decision "
        f"interval of the cost ratio {ci}, p adjusted {fmt_p(row.p_adjusted)}) from {_campaign_words(a)} to "
        f"{_campaign_words(b)}"
    )


def junit_xml(d: dict) -> str:
    """The latest step of each board as a JUnit document: a test suite per board, a test case per cell."""
    total = failures = 0
    root = ET.Element("testsuites", name=term(f"boardlab history {d['plan']}"))
    for board, step, a, b in latest_steps(d):
        suite = ET.SubElement(root, "testsuite", name=term(f"{d['plan']} on {board['board']}"))
        props = ET.SubElement(suite, "properties")
        for key, c in (("from", a), ("to", b)):
            if c is not None:
                ET.SubElement(props, "property", name=f"{key}_campaign", value=str(c["campaign_id"]))
                ET.SubElement(props, "property", name=f"{key}_commit", value=term(commit_words(c)))
        counts = _cases(suite, board, step, a, b, d["plan"])
        suite.set("tests", str(counts[0]))
        suite.set("failures", str(counts[1]))
        suite.set("skipped", str(counts[2]))
        suite.set("errors", "0")
        total, failures = total + counts[0], failures + counts[1]
    root.set("tests", str(total))
    root.set("failures", str(failures))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _cases(suite: ET.Element, board: dict, step: HistoryStep | None, a, b, plan: str) -> tuple[int, int, int]:
    """The suite's test cases: (tests, failures, skipped)."""
    if step is None:
        ET.SubElement(suite, "system-out").text = term(
            f"board {board['board']}: one campaign of {plan} shown, so no step to judge"
        )
        return 0, 0, 0
    tests = failed = skipped = 0
    for row in step.cells:
        case = ET.SubElement(suite, "testcase", classname=term(f"boardlab.{plan}.{board['board']}"),
                             name=term(cell_name(row)), time="0")  # fmt: skip
        tests += 1
        said = term(step_sentence(board, row, a, b))
        if row.verdict == "slowdown":
            failure = ET.SubElement(case, "failure", type="regression", message=said)
            failure.text = said + (f"; unstable: {term('; '.join(row.unstable))}" if row.unstable else "")
            failed += 1
        elif row.verdict is None:
            ET.SubElement(case, "skipped", message=term(f"not judged: {row.reason or 'no comparison'}"))
            skipped += 1
        else:
            ET.SubElement(case, "system-out").text = said
    return tests, failed, skipped


def _data(text: str) -> str:
    """A workflow command's message: %, CR and LF escaped as GitHub's runner reads them."""
    return term(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(d: dict) -> str:
    """GitHub Actions workflow commands for the latest step of each board: `::error` per regression,
    `::notice` per improvement, and one `::notice` when there is neither."""
    lines = []
    for board, step, a, b in latest_steps(d):
        for row in step.cells if step else ():
            level = {"slowdown": "error", "speedup": "notice"}.get(row.verdict or "")
            if level is not None:
                title = f"boardlab {'regression' if level == 'error' else 'improvement'}: {cell_name(row)}"
                lines.append(f"::{level} title={_property(title)}::{_data(step_sentence(board, row, a, b))}")
    if not lines:
        boards = ", ".join(b["board"] for b in d["boards"])
        said = _data(f"no regression in the latest step of {d['plan']} on {boards}")
        lines.append(f"::notice title=boardlab history::{said}")
    return "\n".join(lines) + "\n"
