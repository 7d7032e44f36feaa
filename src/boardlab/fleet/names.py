"""Where a name from outside becomes a path: a labgrid place (the coordinator accepts any name and, by
default, authenticates nobody), an entry of a board's file list and the `--remote-dir` the board's shell
reads. `path_name` is the one way such a name becomes a directory or file name, here and on the board;
`remote_root` checks the one remote path the user types. Nothing else in the fleet joins an outside name to
a path."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from boardlab.errors import InputError

# A plain name is used as it is: what labs call their boards (bbb-01, rpi4_2, odroid.xu3). No leading `.`
# (hidden, `.`, `..`) or `-` (an option to the board's tools).
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
_NOT_PLAIN = re.compile(r"[^A-Za-z0-9_.-]")
# Any other name is its readable part, `+` and this many hex digits of the raw name's sha256: no plain name
# holds a `+`, so a mapped name never meets a plain one, and two mapped names only meet if their hashes do
# (2^-64 by chance; a second preimage of 64 bits is out of reach).
HASH_HEX = 16
_READABLE_MAX = 40
# A remote directory's parts: what the board's shell, labgrid's whitespace split and scp's remote globbing
# all read as plain characters.
_REMOTE_PART = re.compile(r"[A-Za-z0-9_.+,:=@-]+")


class UnsafeName(InputError):
    """A name from outside that cannot name a directory: `.`, `..`, a separator or a control character."""


def path_name(raw: str, what: str) -> str:
    """The one path component for `raw` (a place's or a file's name; `what` says which, for the error).

    Refused, because no mapping would leave them meaning what they say: the empty name, `.`, `..`, a name
    with a `/` and one with NUL or another control character. A plain name is kept; any other (spaces,
    `;`, quotes, non-ASCII, too long) becomes its readable part plus a short hash of the whole raw name, so
    `a b` and `a;b` stay two directories."""
    bad = _refusal(raw)
    if bad:
        raise UnsafeName(
            f"{what} {raw!r}: {bad}, so it cannot name a directory (it would lead out of it); "
            "rename it (labgrid-client -p OLD ... to create a place with a plain name)"
        )
    if _PLAIN.fullmatch(raw):
        return raw
    readable = _NOT_PLAIN.sub("_", raw).lstrip(".-")[:_READABLE_MAX]
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]
    return f"{readable}+{digest}"


def _refusal(raw: str) -> str | None:
    if raw in ("", ".", ".."):
        return "is empty" if not raw else f"is {raw!r}"
    if "/" in raw:
        return "holds a path separator '/'"
    ctl = next((c for c in raw if unicodedata.category(c) == "Cc"), None)
    if ctl is not None:
        return f"holds the control character {ctl!r}"
    return None


def remote_root(raw: str) -> str:
    """`--remote-dir` as the board's commands use it: absolute, each part letters, digits and `_.+,:=@-`
    (never `.` or `..`), without its trailing `/`. It reaches the board's shell, so anything the shell or
    labgrid's whitespace split would read (spaces, `;`, `$()`, backquotes, newlines, globs) is refused."""
    parts = raw.split("/")
    bad = next((p for p in parts[1:] if p and (p in (".", "..") or not _REMOTE_PART.fullmatch(p))), None)
    if not raw.startswith("/") or bad is not None:
        why = f"the part {bad!r} is not allowed" if bad is not None else "not an absolute path"
        raise InputError(
            f"--remote-dir {raw!r}: {why}; give an absolute path whose parts are letters, digits and "
            "_.+,:=@- (not . or ..), e.g. /var/tmp/boardlab-fleet: the board's shell reads it"
        )
    return raw.rstrip("/")


def remote_place_dir(root: str, place: str) -> str:
    """The place's directory on the board, under the checked `--remote-dir`."""
    return f"{remote_root(root)}/{path_name(place, 'place')}"
