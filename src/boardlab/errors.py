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


class MeasurementError(BoardlabError):
    """A measurement could not be made or produced an invalid result."""

    exit_code = EXIT_FAILURE
