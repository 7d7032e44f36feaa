"""Fleet runs (`boardlab fleet run`, docs/fleet.md): one plan on many boards through labgrid.

labgrid's coordinator reserves and locks each board (a place); one worker process per place (labgrid is not
thread-safe) puts the board bundle there over SSH, starts the campaign detached, waits with a cheap shell
check, fetches the board's SQLite, verifies it and hands it back for ingest into the shared store. Nothing
of boardlab stays resident on the board but the campaign it runs.
"""
