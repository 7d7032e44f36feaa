"""boardlab: performance characterization lab for embedded and edge Linux boards.

This facade stays import-light: `boardlab --help` must be instant on a 1 GHz board.
"""

try:
    from boardlab._build_config import VERSION as __version__
except ImportError:  # running from a source tree that was never built
    __version__ = "0+unbuilt"

__all__ = ["__version__"]
