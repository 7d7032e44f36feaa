"""The results store: SQLite (WAL) with numbered migrations; one transaction per run."""

from boardlab.store.base import driver_error
from boardlab.store.db import STORE_SCHEMA, Store

__all__ = ["STORE_SCHEMA", "Store", "driver_error"]
