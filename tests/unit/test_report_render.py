"""The document model laid out per format: the same words and digits in HTML, Markdown and text, each block
only where its `formats` says, and every string escaped for its format."""

from __future__ import annotations

import re

from boardlab.analysis import document as doc
from boardlab.report.render import render_document, render_sections

EVIL = "<script>alert(1)</script> | `x` [a](javascript:b)\x1b[2J"

TABLE = doc.Table(
    (doc.Column("cell"), doc.Column("median", "ns", True), doc.Column("note")),
    (("crc32", "1.661", "a note"), (EVIL, "110.7", "")),
    note_column="note",
)


def _all(sections):
    return {fmt: render_sections(sections, fmt) for fmt in ("html", "md", "text")}


def test_a_table_has_the_same_headers_and_digits_in_every_format():
    out = _all([doc.section("Cells", TABLE)])
    for fmt, text in out.items():
        assert "median [ns]" in text and "1.661" in text and "110.7" in text, fmt
    assert '<td class="num">1.661</td>' in out["html"]
    assert "| cell | median [ns] | note |" in out["md"] and "|---|---:|---|" in out["md"]
    # the note column: a line under its row in HTML, a column in Markdown, left out of the compact text
    assert "note: a note" in out["html"] and "a note" in out["md"] and "a note" not in out["text"]


def test_blocks_appear_only_in_their_formats():
    sections = [
        doc.section(
            "S",
            doc.Prose("everywhere"),
            doc.Prose("rich only", formats=doc.RICH),
            doc.Prose("text only", formats=frozenset({"text"})),
            doc.Figure(doc.BarsSpec(bars=[("a", 1.0)], unit="ns/B", title="bars")),
        )
    ]
    out = _all(sections)
    assert all("everywhere" in t for t in out.values())
    assert "rich only" in out["html"] and "rich only" in out["md"] and "rich only" not in out["text"]
    assert "text only" in out["text"] and "text only" not in out["html"] + out["md"]
    assert out["html"].count("<svg") == 1 and "<svg" not in out["md"] + out["text"]


def test_every_format_escapes_strings_from_plans_and_boards():
    out = _all([doc.section(EVIL, TABLE, doc.Items((EVIL,)), doc.Prose(EVIL, bold=("alert",)))])
    assert "<script>" not in out["html"] and "&lt;script&gt;" in out["html"]
    assert (
        "\\<script>" in out["md"]
        and not re.search(r"(?<!\\)<script", out["md"])
        and "](javascript" not in out["md"]
        and "\\|" in out["md"]
    )
    assert "\x1b" not in out["text"] and "\\x1b" in out["text"]


def test_a_document_has_its_title_and_a_card_per_headline_figure():
    d = doc.Document(
        "boardlab report: x",
        (
            doc.section(
                "Summary", doc.Facts((("crc32: ns_per_byte", "1.661 ns [1.639, 1.676]"),), cards=True)
            ),
        ),
    )
    html, md, text = (render_document(d, f) for f in ("html", "md", "text"))
    assert (
        html.startswith("<h1>boardlab report: x</h1>")
        and 'class="card-value">1.661 ns [1.639, 1.676]' in html
    )
    assert md.startswith("# boardlab report: x") and "- crc32: ns_per_byte: 1.661 ns [1.639, 1.676]" in md
    assert "crc32: ns_per_byte: 1.661 ns [1.639, 1.676]" in text
