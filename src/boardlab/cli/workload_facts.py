"""The data step before a store is analysed (`report`, `compare`, `history`, `serve`; `ingest` for what it
copies): a campaign stored before boardlab stored its workloads' facts gets them once, from this host's
catalog, written into the store as the runner writes them (`campaign.facts.derive_missing`), and the user is
told. Then the analysis has one read path: the facts stored with the campaign.

A store this boardlab cannot write (a read-only file or directory, a read-only database role, a store a
campaign holds) is said so, and its campaigns without facts are analysed as plain workloads (no roles, tails
or composites)."""

from __future__ import annotations

import sys

from boardlab.errors import BoardlabError


def _say(text: str) -> None:
    from boardlab.report.escape import term

    print(f"boardlab: {term(text)}", file=sys.stderr)


def say_derived(where: str, campaign_ids: list[int]) -> None:
    """One line, however many campaigns: a lab's old store may hold hundreds."""
    if not campaign_ids:
        return
    what = f"campaign {campaign_ids[0]}" if len(campaign_ids) == 1 else f"campaigns {_ids_text(campaign_ids)}"
    _say(f"{where}: {what}: workload facts derived from this host's catalog and stored")


def _ids_text(ids: list[int]) -> str:
    """'1, 4, 7' for a few; '1 to 1000 (980 campaigns)' for many."""
    if len(ids) <= 5:
        return ", ".join(map(str, ids))
    return f"{min(ids)} to {max(ids)} ({len(ids)} campaigns)"


def _why(exc: Exception, where: str) -> str:
    from boardlab.store import driver_error

    error = exc if isinstance(exc, BoardlabError) else driver_error(exc, where)
    if error is None and isinstance(exc, OSError):
        from boardlab.errors import os_error

        error = os_error(exc, where, "results database")
    if error is None:
        raise exc  # a bug: the CLI's one line says so
    return " ".join(str(error).split())


def store_missing_facts(db: str) -> None:
    """Writes the workload facts of every campaign of the store at `db` that has none; says which, or why
    it could not. Errors of reading the store are left to the analysis's own open, which says them."""
    from boardlab.campaign.facts import derive_missing
    from boardlab.model.facts import WORKLOAD_FACTS
    from boardlab.store import STORE_SCHEMA, Store

    with Store.open(db, create=False, verify=False) as store:
        missing = store.campaigns_without_artifact(WORKLOAD_FACTS)
        where, schema = store.path, store.schema_version()
    if not missing:
        return
    try:
        with Store.open(db) as writer:  # as a campaign opens it: locked, and migrated to this schema
            if schema < STORE_SCHEMA:  # a boardlab older than the one that wrote schema N cannot open it then
                _say(f"{where}: store migrated from schema {schema} to {STORE_SCHEMA} to store them")
            say_derived(where, derive_missing(writer, missing))
    except Exception as exc:  # noqa: BLE001 (a store that cannot be written is said, not fatal)
        ids = _ids_text(missing)
        _say(
            f"{where}: campaign{'s' if len(missing) > 1 else ''} {ids}: stored without workload facts, and "
            f"this store cannot be written to store them ({_why(exc, where)}); their workloads are analysed "
            "as plain workloads (no roles, tails or composites). Report a writable copy to have them"
        )
