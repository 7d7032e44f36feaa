"""The format a command writes: `--format` when given, else what the output file's suffix names.

Why. `report -o r.md` wrote HTML into r.md (the format came from `--format` alone, HTML by default): a user
reads the file name as the format, and so does the next program that opens the file. A suffix that names
another format than `--format` is refused rather than guessed at: one of the two is a mistake.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath

from boardlab.errors import InputError

REPORT_SUFFIXES = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md", ".txt": "text"}
EXPORT_SUFFIXES = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
HISTORY_SUFFIXES = {**REPORT_SUFFIXES, ".xml": "junit"}


def named_format(output: str | None, suffixes: Mapping[str, str]) -> str | None:
    """The format the output file's suffix names, or None (stdout, a directory, an unknown suffix)."""
    if not output or output == "-":
        return None
    return suffixes.get(PurePath(output).suffix.lower())


def chosen_format(given: str | None, output: str | None, suffixes: Mapping[str, str], default: str) -> str:
    """`given` (the `--format` option, None when not given), else the format `output`'s suffix names, else
    `default`; a `given` that the suffix contradicts is an InputError naming both and the way out."""
    named = named_format(output, suffixes)
    if given is None:
        return named or default
    if named is not None and named != given:
        own = ", ".join(s for s, f in suffixes.items() if f == given) or "another suffix"
        raise InputError(
            f"-o {output} names a {named} file but --format is {given}: drop --format (the suffix chooses) "
            f"or name the file {own}"
        )
    return given
