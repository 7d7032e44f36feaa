"""Escaping of user-supplied names (plan, condition and parameter names, stored strings) for each output.

A name comes from a plan file or a results database someone else wrote: on a terminal a raw ESC sequence
could clear the screen or retitle the window, a newline breaks a text table, a Markdown link could carry a
`javascript:` target, and a CSV cell starting with = + - @ is a formula to a spreadsheet (OWASP "CSV
injection"). HTML has its own escaping (html.escape at every site, `report.render.esc`), after `visible`.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL; tab included: it moves columns in a table as a newline moves rows. Then the
# invisible format characters: bidirectional overrides, embeddings and isolates (U+202A-202E, U+2066-2069,
# the marks U+200E/200F/061C) reorder what a terminal shows, so a name can display as another ("Trojan
# Source", CVE-2021-42574); zero-width and invisible ones (U+200B-200D, U+2060-2064, U+FEFF, U+180E, U+00AD)
# make two different names look the same; the line and paragraph separators U+2028/2029 break a line.
_FORMAT = "\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}]")
# a page (HTML, SVG) keeps its line breaks and tabs (a <pre> block shows them); the other controls are not
# text a page can show, and the format characters reorder or hide it there as they do on a terminal
_PAGE_INVISIBLE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{_FORMAT}]")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _escape_control(m: re.Match) -> str:
    c = m.group()
    if ord(c) > 0xFF:
        return f"\\u{ord(c):04x}"
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c, f"\\x{ord(c):02x}")


def term(text: object) -> str:
    """Text for a terminal or a plain-text file: control characters shown as \\n, \\t, \\xNN; bidirectional
    and invisible format characters as \\uNNNN."""
    return _CONTROL.sub(_escape_control, str(text))


def visible(text: object) -> str:
    """Text for a page, before its HTML escaping: what `term` does, but line breaks and tabs are kept."""
    return _PAGE_INVISIBLE.sub(_escape_control, str(text))


def csv_cell(value: object) -> object:
    """A CSV cell that a spreadsheet shows as text: a string starting with = + - @ (or tab, CR) gets a
    leading apostrophe, the OWASP rule. Numbers are left alone (a negative number is not a formula)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
