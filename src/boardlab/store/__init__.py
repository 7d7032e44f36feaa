"""The results store: SQLite (WAL) with numbered migrations; a transaction per run, or per half second of
short runs."""

from boardlab.store.base import driver_error
from boardlab.store.db import STORE_SCHEMA, Store

__all__ = ["STORE_SCHEMA", "Store", "driver_error"]
