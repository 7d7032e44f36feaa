"""Error types shared by every layer. The CLI maps them to exit codes; nothing else exits."""

EXIT_OK = 0
EXIT_FAILURE = 1  # a measurement or runtime failure
EXIT_USAGE = 2  # bad input or usage


class BoardlabError(Exception):
    """Base class; `exit_code` tells the CLI how to exit."""

    exit_code = EXIT_FAILURE


class InputError(BoardlabError):
    """Bad input from the user: a path, a plan, a parameter. The message names the place and the fix."""

    exit_code = EXIT_USAGE


class NotFound(InputError):
    """What the user named is not in the store (a campaign id, a plan, a board): exit 2, and `serve`'s 404
    (the web tells it from a bad request by its type, never by its message)."""


class MeasurementError(BoardlabError):
    """A measurement could not be made or produced an invalid result."""

    exit_code = EXIT_FAILURE


# errno name -> (exit code, what to do). Bad places the user named are exit 2; a full disk is a runtime
# failure (exit 1): the same command works once there is room.
_OS_FIXES = {
    "ENOSPC": (EXIT_FAILURE, "the filesystem is full: free space there, or write elsewhere"),
    "EDQUOT": (EXIT_FAILURE, "the disk quota is exhausted: free space, or write elsewhere"),
    "EROFS": (EXIT_USAGE, "the filesystem is read-only: choose a writable location"),
    "EACCES": (EXIT_USAGE, "permission denied: choose a location you may write, or fix its permissions"),
    "EPERM": (EXIT_USAGE, "operation not permitted (an immutable file?): choose another location"),
    "EISDIR": (EXIT_USAGE, "is a directory: give a file path"),
    "ENOTDIR": (EXIT_USAGE, "a component of the path is not a directory: fix the path"),
    "ENOENT": (EXIT_USAGE, "no such file or directory: fix the path"),
    "ELOOP": (EXIT_USAGE, "too many levels of symbolic links: fix the link"),
    "ENAMETOOLONG": (EXIT_USAGE, "the name is too long: choose a shorter path"),
    "EEXIST": (EXIT_USAGE, "already exists: choose another path"),
    "EIO": (EXIT_FAILURE, "input/output error: check the device and the filesystem"),
}


class OSProblem(BoardlabError):
    """An operating-system error at a path, turned into one line with the fix; the exit code depends on
    whether the place was the user's choice (exit 2) or the machine failed (exit 1)."""

    def __init__(self, message: str, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code


def os_error(exc: OSError, path=None, what: str = "") -> OSProblem:
    import errno as _errno

    name = _errno.errorcode.get(exc.errno or 0, "")
    code, fix = _OS_FIXES.get(name, (EXIT_FAILURE, exc.strerror or str(exc)))
    where = path if path is not None else (exc.filename if exc.filename is not None else "")
    place = f"{what} {where}".strip()
    return OSProblem(f"{place + ': ' if place else ''}{fix} ({exc.strerror or name})", code)


def database_error(exc: Exception, path: str) -> BoardlabError:
    """An sqlite3 error as one line: a corrupted, foreign, read-only or full database."""
    text = str(exc)
    low = text.lower()
    if "full" in low:
        return OSProblem(
            f"{path}: the disk holding the results database is full ({text}); free space there, then run "
            "the same command again (finished runs are kept)",
            EXIT_FAILURE,
        )
    if "readonly" in low or "read-only" in low:
        return InputError(
            f"{path}: the results database cannot be written ({text}): check the file's "
            "permissions and attributes (chattr -i), or give another --db"
        )
    if "malformed" in low or "corrupt" in low:
        return InputError(
            f"{path}: the results database is corrupted ({text}); restore it from a copy, "
            "or give another --db"
        )
    if "not a database" in low:
        return InputError(f"{path}: not a boardlab results database (not SQLite, or damaged: {text})")
    if "unable to open" in low:
        return InputError(
            f"{path}: cannot open the results database ({text}): check that it exists and "
            "that its directory is readable"
        )
    if "disk i/o" in low:
        return OSProblem(
            f"{path}: input/output error on the results database ({text}); is the disk full "
            "or failing? check it, then run again",
            EXIT_FAILURE,
        )
    if "locked" in low or "busy" in low:
        return OSProblem(f"{path}: the results database is busy ({text}); try again", EXIT_FAILURE)
    return OSProblem(f"{path}: database error: {text}", EXIT_FAILURE)
