"""`boardlab report --across-boards`: one plan's campaigns on several boards of one store side by side, with
verdicts per board pair corrected as one family."""

from __future__ import annotations

import re

from helpers import make_campaign_db, run_cli


def _store_of_boards(tmp_path, speeds: dict[str, float]):
    files = [make_campaign_db(tmp_path / f"{b}.db", board=b, n=6, speed=s, seed=3) for b, s in speeds.items()]
    store = tmp_path / "lab.db"
    done = run_cli("ingest", *map(str, files), "--db", str(store))
    assert done.returncode == 0, done.stderr
    return store


def test_three_boards_side_by_side_with_verdicts_per_pair(tmp_path):
    store = _store_of_boards(tmp_path, {"board-a": 1.0, "board-b": 2.0, "board-c": 1.0})
    out = run_cli("report", "--db", str(store), "--board", "board-a", "--across-boards", "--format", "md")
    assert out.returncode == 0, out.stderr
    md = out.stdout
    for heading in ("## Boards", "## Cells side by side", "## Verdicts per board pair"):
        assert heading in md
    # the reference board first, then the others by label; every pair once
    assert md.index("| board-a |") < md.index("| board-b |") < md.index("| board-c |")
    pairs = set(re.findall(r"^\| (board-\w / board-\w) \|", md, re.M))
    assert pairs == {"board-b / board-a", "board-c / board-a", "board-c / board-b"}
    rows = [r for r in md.splitlines() if re.match(r"^\| board-\w / board-\w \|", r)]
    # board-b runs twice as fast: against a and c every cell decides (speedup for time, the mirror for
    # throughput); a and c are the same board speed: never a slowdown or speedup between them
    b_rows = [r for r in rows if "board-b" in r.split("|")[1]]
    assert b_rows and all(("speedup" in r or "slowdown" in r) for r in b_rows)
    ca = [r for r in rows if r.startswith("| board-c / board-a |")]
    assert ca and not any(("speedup" in r or "slowdown" in r) for r in ca)
    # one family for the whole report: every pair's comparisons counted together
    n = int(re.search(r"over all (\d+) comparisons of this report", md).group(1))
    assert n == len([r for r in rows if re.search(r"(speedup|slowdown|no change|inconclusive) \|$", r)])


def test_text_and_html_formats_and_a_single_board_is_refused(tmp_path):
    store = _store_of_boards(tmp_path, {"board-a": 1.0, "board-b": 1.5})
    text = run_cli("report", "--db", str(store), "--across-boards", "--format", "text")
    assert text.returncode == 0 and "Verdicts per board pair" in text.stdout, text.stderr
    out = tmp_path / "boards.html"
    html = run_cli("report", "--db", str(store), "--across-boards", "-o", str(out))
    assert html.returncode == 0, html.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "board-a / board-b" in page  # the latest (b) is A
    single = make_campaign_db(tmp_path / "one.db", board="board-a", n=6)
    refused = run_cli("report", "--db", str(single), "--across-boards", "--format", "md")
    assert refused.returncode == 2
    assert "one board only" in refused.stderr and "boardlab ingest" in refused.stderr
