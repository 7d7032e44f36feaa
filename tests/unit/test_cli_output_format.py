"""The format a command writes: --format, else the output's suffix, else the command's default."""

from __future__ import annotations

import pytest

from boardlab.cli.output_format import EXPORT_SUFFIXES, HISTORY_SUFFIXES, REPORT_SUFFIXES, chosen_format
from boardlab.errors import InputError


@pytest.mark.parametrize(
    ("given", "output", "expected"),
    [
        (None, "r.md", "md"),
        (None, "dir/R.HTML", "html"),  # the suffix's case does not matter
        (None, "r.txt", "text"),
        (None, "-", "html"),  # stdout names no format
        (None, None, "html"),
        (None, "r.unknown", "html"),
        ("md", "r.markdown", "md"),
        ("text", "-", "text"),
        ("md", "notes", "md"),  # no suffix: --format alone
    ],
)
def test_report_formats(given, output, expected):
    assert chosen_format(given, output, REPORT_SUFFIXES, "html") == expected


def test_a_suffix_that_contradicts_format_is_refused_with_the_way_out():
    with pytest.raises(InputError) as err:
        chosen_format("html", "out/r.md", REPORT_SUFFIXES, "html")
    assert str(err.value) == (
        "-o out/r.md names a md file but --format is html: drop --format (the suffix chooses) or name the "
        "file .html, .htm"
    )


def test_export_and_history_suffixes():
    assert chosen_format(None, "runs.csv", EXPORT_SUFFIXES, "json") == "csv"
    assert chosen_format(None, "runs.parquet", EXPORT_SUFFIXES, "json") == "parquet"
    assert chosen_format(None, "parts", EXPORT_SUFFIXES, "parquet") == "parquet"  # --partition's DIR
    assert chosen_format(None, "h.xml", HISTORY_SUFFIXES, "text") == "junit"
    with pytest.raises(InputError, match="names a csv file but --format is json"):
        chosen_format("json", "runs.csv", EXPORT_SUFFIXES, "json")
