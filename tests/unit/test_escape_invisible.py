"""Bidirectional and invisible format characters never reach a terminal raw: a name holding U+202E (right-
to-left override) displays as another name ("Trojan Source", CVE-2021-42574), a zero-width space makes two
names look alike. The text and Markdown renderers and every CLI message share `term`."""

from __future__ import annotations

import pytest

from boardlab.analysis import document as doc
from boardlab.report.escape import term
from boardlab.report.render import render_sections

from helpers import run_cli

pytestmark = pytest.mark.spawns  # starts processes: not in make test-unit

INVISIBLE = [
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",  # embeddings and overrides
    "\u2066", "\u2067", "\u2068", "\u2069",  # isolates
    "\u200e", "\u200f", "\u061c",  # direction marks
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u180e", "\u00ad",  # zero-width, invisible
    "\u2028", "\u2029",  # line and paragraph separators
]  # fmt: skip


@pytest.mark.parametrize("ch", INVISIBLE)
def test_term_shows_each_invisible_character_as_its_code_point(ch):
    out = term(f"cell{ch}name")
    code = f"\\x{ord(ch):02x}" if ord(ch) <= 0xFF else f"\\u{ord(ch):04x}"
    assert ch not in out and out == f"cell{code}name"


def test_visible_text_is_left_alone():
    text = "crc32 é ü 中文 ✓ 1.5 µs"
    assert term(text) == text


def test_text_and_markdown_reports_escape_a_bidi_override():
    evil = "gzip\u202e6-level\u200b"
    table = doc.Table((doc.Column("cell"), doc.Column("median", "ns", True)), ((evil, "1.0"),))
    for fmt in ("md", "text"):
        out = render_sections([doc.section(evil, table, doc.Items((evil,)))], fmt)
        assert "\u202e" not in out and "\u200b" not in out, fmt
        assert "gzip\\u202e6-level\\u200b" in out, fmt


def test_a_cli_error_naming_a_path_escapes_it(tmp_path):
    missing = tmp_path / "results\u202egol.db"
    proc = run_cli("report", "--db", str(missing), "-o", str(tmp_path / "r.html"), timeout=60)
    assert proc.returncode == 2
    assert "\u202e" not in proc.stderr and "results\\u202egol.db" in proc.stderr


def test_html_reports_and_their_svg_show_the_code_points_and_keep_line_breaks():
    from boardlab.report.plot.axes import esc as svg_esc
    from boardlab.report.render import esc

    evil = "gzip\u202e6-level\u200b<b>"
    table = doc.Table((doc.Column("cell"), doc.Column("median", "ns", True)), ((evil, "1.0"),))
    pre = doc.Preformatted("line one\n\tline two\u2066")
    out = render_sections([doc.section(evil, table, doc.Items((evil,)), pre)], "html")
    assert not any(c in out for c in INVISIBLE), out
    assert "gzip\\u202e6-level\\u200b&lt;b&gt;" in out and "line one\n\tline two\\u2066" in out
    for ch in INVISIBLE:
        assert ch not in esc(f"a{ch}b") and ch not in svg_esc(f"a{ch}b"), repr(ch)
    assert esc("x\x1b[2Jy\x00") == "x\\x1b[2Jy\\x00" and esc(None) == ""
