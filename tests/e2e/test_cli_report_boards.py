"""`boardlab report --across-boards`: one plan's campaigns on several boards of one store side by side, with
verdicts of every board against a reference board (or of every pair, --all-pairs) corrected as one family."""

from __future__ import annotations

import re

from helpers import make_campaign_db, run_cli


def _store_of_boards(tmp_path, speeds: dict[str, float]):
    files = [make_campaign_db(tmp_path / f"{b}.db", board=b, n=6, speed=s, seed=3) for b, s in speeds.items()]
    store = tmp_path / "lab.db"
    done = run_cli("ingest", *map(str, files), "--db", str(store))
    assert done.returncode == 0, done.stderr
    return store


def _pairs(md: str) -> set[str]:
    return set(re.findall(r"^\| (board-\w / board-\w) \|", md, re.M))


def _family(md: str) -> int:
    return int(re.search(r"over all (\d+) comparisons of this report", md).group(1))


def test_three_boards_side_by_side_with_verdicts_per_pair(tmp_path):
    store = _store_of_boards(tmp_path, {"board-a": 1.0, "board-b": 2.0, "board-c": 1.0})
    args = ("report", "--db", str(store), "--board", "board-a", "--across-boards", "--format", "md")
    out = run_cli(*args, "--all-pairs")
    assert out.returncode == 0, out.stderr
    md = out.stdout
    for heading in ("## Boards", "## Cells side by side", "## Verdicts per board pair"):
        assert heading in md
    # the reference board first, then the others by label; every pair once
    assert md.index("| board-a |") < md.index("| board-b |") < md.index("| board-c |")
    assert _pairs(md) == {"board-b / board-a", "board-c / board-a", "board-c / board-b"}
    rows = [r for r in md.splitlines() if re.match(r"^\| board-\w / board-\w \|", r)]
    # board-b runs twice as fast: against a and c every cell decides (speedup for time, the mirror for
    # throughput); a and c are the same board speed: never a slowdown or speedup between them
    b_rows = [r for r in rows if "board-b" in r.split("|")[1]]
    assert b_rows and all(("speedup" in r or "slowdown" in r) for r in b_rows)
    ca = [r for r in rows if r.startswith("| board-c / board-a |")]
    assert ca and not any(("speedup" in r or "slowdown" in r) for r in ca)
    # one family for the whole report: every pair's comparisons counted together
    decided = [r for r in rows if re.search(r"(speedup|slowdown|no change|inconclusive) \|$", r)]
    assert _family(md) == len(decided)
    # by default each board against the reference only: n - 1 pairs, the same rows for them, one family of
    # two thirds the size
    ref = run_cli(*args)
    assert ref.returncode == 0, ref.stderr
    assert _pairs(ref.stdout) == {"board-b / board-a", "board-c / board-a"}
    assert "compared with the reference board, board-a" in ref.stdout
    assert _family(ref.stdout) * 3 == _family(md) * 2
    ref_rows = [r for r in ref.stdout.splitlines() if r.startswith("| board-b / board-a |")]
    assert [r.split("|")[2:5] for r in ref_rows] == [
        r.split("|")[2:5] for r in rows if r.startswith("| board-b / board-a |")
    ]  # the same cells and ratios; only p's correction family differs


def test_a_named_reference_board_and_the_flags_refused_where_they_mean_nothing(tmp_path):
    store = _store_of_boards(tmp_path, {"board-a": 1.0, "board-b": 2.0, "board-c": 1.0})
    out = run_cli(
        "report", "--db", str(store), "--board", "board-a", "--across-boards", "--reference-board", "board-c",
        "--format", "md",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert _pairs(out.stdout) == {"board-a / board-c", "board-b / board-c"}
    assert out.stdout.index("| board-c |") < out.stdout.index("| board-a |") < out.stdout.index("| board-b |")
    unknown = run_cli(
        "report", "--db", str(store), "--across-boards", "--reference-board", "board-z", "--format", "md"
    )
    assert unknown.returncode == 2 and "'board-z'" in unknown.stderr
    assert "board-a, board-b, board-c" in unknown.stderr and "Traceback" not in unknown.stderr
    alone = run_cli("report", "--db", str(store), "--all-pairs", "--format", "md")
    assert alone.returncode == 2 and "--across-boards" in alone.stderr


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
