"""Store schema 13 on PostgreSQL: the references of the rows that grow with the runs checked once per
statement instead of once per row.

A foreign key checks each inserted row by a trigger of its own, a query and a row lock per row: a run's
eleven rows (its own two references, six monitor rows, two iteration rows, a metrics row) tripled the
server's work of `boardlab ingest`'s COPY. Only a role that may set session_replication_role can silence
those triggers, and a lab gives boardlab a database's owner, which may not. So the references of `runs` (to
campaigns and cells) and of the tables under `runs` (to runs) are kept by triggers the tables' owner may
create instead (PL/pgSQL is a trusted language):

- after an INSERT, one statement-level check over the statement's rows (a transition table): each distinct
  reference looked up once by its parent's primary key; a missing one refuses the statement, naming the
  table, the column and the id (SQLSTATE 23503, as a foreign key's refusal);
- after an UPDATE that changes a reference or a referenced id (boardlab never does), the same check of that
  row; after a DELETE or a TRUNCATE of a parent, a refusal while a row still refers to it: what the foreign
  keys' NO ACTION did (none of them cascaded, so deleting a run with rows under it stays refused).

Concurrency: a foreign key's check locked the parent row FOR KEY SHARE, so that no other transaction could
delete it before the child row committed. These checks lock the parents this transaction did not insert
itself (xmin): an ingest's and a campaign's rows refer to runs inserted in the same transaction, which no
other transaction sees before it commits, so those need no lock (a lock is a heap write per run); a row
referring to an older run locks it as the foreign key did. Nothing in boardlab deletes runs, campaigns or
cells. One case stays open, as for any check written as a trigger: a DELETE in a REPEATABLE READ or
SERIALIZABLE transaction whose snapshot predates a concurrent child row's commit does not see that row (a
foreign key's check looks again with a newer snapshot); the lock still refuses it while the insert is open.
And xmin is a 32-bit id: a frozen row inserted some four billion transactions ago may carry this
transaction's id and go unlocked (its existence is checked all the same).

The planner knows neither the transition table's distinct ids nor, in a new store, the size of `runs`: the
check functions turn off sequential scans and hash and merge joins, so the plan a session caches is an index
probe per distinct id whatever the store's size when it was made (a hash join planned while `runs` was empty
would read all of it at every statement once it holds millions).

The functions' and triggers' names start with `boardlab_`: the ingest tells them from a lab's own triggers
by it (store/ingest.py `_Copier._skip_pg_reference_checks`)."""

# the references checked here instead of by a foreign key: (table, column, the table whose id it holds)
REFERENCES = (
    ("runs", "campaign_id", "campaigns"),
    ("runs", "cell_id", "cells"),
    ("run_metrics", "run_id", "runs"),
    ("run_values", "run_id", "runs"),
    ("run_series", "run_id", "runs"),
    ("run_histograms", "run_id", "runs"),
    ("run_energy", "run_id", "runs"),
)
TRIGGER_PREFIX = "boardlab_"
_PLAN = "SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off"
_CHILDREN = tuple(t for t, _, p in REFERENCES if p == "runs")  # the tables under runs, each with a run_id
_PARENTS = ("runs", "campaigns", "cells")


def _missing(column: str, parent: str, rows: str) -> str:
    """PL/pgSQL: refuse a reference of `rows` to no row of `parent`, after locking the parents this
    transaction did not insert; one pass over the distinct references when there are none (an ingest's)."""
    distinct = f"(SELECT DISTINCT {column} AS v FROM {rows}) d"
    return f"""
    SELECT min(d.v) FILTER (WHERE p.id IS NULL),
           count(p.id) FILTER (WHERE p.xmin <> pg_current_xact_id()::xid)
        INTO missing, others FROM {distinct} LEFT JOIN {parent} p ON p.id = d.v WHERE d.v IS NOT NULL;
    IF others > 0 THEN  -- locked, then looked for again: one deleted meanwhile is gone
        PERFORM 1 FROM {parent} p WHERE p.id IN (SELECT {column} FROM {rows})
            AND p.xmin <> pg_current_xact_id()::xid FOR KEY SHARE OF p;
        SELECT d.v INTO missing FROM {distinct}
            WHERE d.v IS NOT NULL AND NOT EXISTS (SELECT FROM {parent} p WHERE p.id = d.v) LIMIT 1;
    END IF;
    IF missing IS NOT NULL THEN
        RAISE foreign_key_violation USING MESSAGE = format(
            'insert or update on table "%s" refers to no row of "{parent}": {column} = %s',
            TG_TABLE_NAME, missing),
        DETAIL = format('Key ({column})=(%s) is not present in table "{parent}".', missing);
    END IF;"""


def _referenced(parent: str, rows: str, refs: tuple = REFERENCES) -> str:
    """PL/pgSQL: refuse when a row of `refs`' tables still refers to an id of `rows` (alias o) that no row of
    `parent` holds now."""
    checks = " UNION ALL ".join(
        f"SELECT '{t}', o.id FROM {rows} WHERE EXISTS (SELECT FROM {t} x WHERE x.{c} = o.id)"
        for t, c, p in refs
        if p == parent
    )
    return f"""
    SELECT s.t, s.id INTO child, missing FROM ({checks}) s(t, id)
        WHERE NOT EXISTS (SELECT FROM {parent} p WHERE p.id = s.id) LIMIT 1;
    IF FOUND THEN
        RAISE foreign_key_violation USING MESSAGE = format(
            'update or delete on table "{parent}" leaves rows of "%s" referring to it: id = %s', child,
            missing), DETAIL = format('Key (id)=(%s) is still referenced from table "%s".', missing, child);
    END IF;"""


def _function(name: str, body: str, plan: bool = True, replace: bool = False) -> str:
    return (
        f"CREATE {'OR REPLACE ' if replace else ''}FUNCTION {TRIGGER_PREFIX}{name}() RETURNS trigger LANGUAGE"
        f" plpgsql {_PLAN if plan else ''}"
        f" AS $$\nDECLARE\n    missing bigint;\n    others bigint;\n    child text;\nBEGIN{body}"
        "\n    RETURN NULL;\nEND $$"
    )


def _by_table(parts: dict[str, str], otherwise: str = "") -> str:
    """PL/pgSQL dispatching on the trigger's table: one function serves every table of a kind."""
    branches = [
        f"{'IF' if i == 0 else 'ELSIF'} TG_TABLE_NAME = '{t}' THEN{b}"
        for i, (t, b) in enumerate(parts.items())
    ]
    return (
        "\n    " + "\n    ".join(branches) + (f"\n    ELSE{otherwise}" if otherwise else "") + "\n    END IF;"
    )


def _refers(table: str, rows: str) -> str:
    """PL/pgSQL: every reference of `table`'s `rows` checked."""
    return "".join(_missing(c, p, rows) for t, c, p in REFERENCES if t == table)


def _truncated(parent: str, refs: tuple = REFERENCES) -> str:
    children = " OR ".join(f"EXISTS (SELECT FROM {t})" for t, _, p in refs if p == parent)
    return (
        f"\n    IF {children} THEN\n        RAISE foreign_key_violation USING MESSAGE ="
        f" 'truncate of table \"{parent}\" leaves rows referring to it';\n    END IF;"
    )


def statements() -> tuple[str, ...]:
    """Migration 13's PostgreSQL statements: the foreign keys of REFERENCES dropped, the triggers that replace
    them created. Migration 13's: never edited, a change is the next migration."""
    out = [f"ALTER TABLE {t} DROP CONSTRAINT {t}_{c}_fkey" for t, c, _ in REFERENCES]
    out += [
        _function(
            "check_inserted",
            _by_table({"runs": _refers("runs", "new_rows")}, _missing("run_id", "runs", "new_rows")),
        ),
        *_change_checks(REFERENCES),
    ]
    for t in ("runs", *_CHILDREN):
        out.append(
            f"CREATE TRIGGER {TRIGGER_PREFIX}inserted AFTER INSERT ON {t} REFERENCING NEW TABLE AS new_rows"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER_PREFIX}check_inserted()"
        )
    for t in (*_PARENTS, *_CHILDREN):
        keys = [c for t2, c, _ in REFERENCES if t2 == t] + (["id"] if t in _PARENTS else [])
        changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in keys)
        out.append(
            f"CREATE TRIGGER {TRIGGER_PREFIX}updated AFTER UPDATE ON {t} FOR EACH ROW WHEN ({changed})"
            f" EXECUTE FUNCTION {TRIGGER_PREFIX}check_updated()"
        )
    for p in _PARENTS:
        out.append(
            f"CREATE TRIGGER {TRIGGER_PREFIX}deleted AFTER DELETE ON {p} REFERENCING OLD TABLE AS old_rows"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER_PREFIX}check_deleted()"
        )
        out.append(
            f"CREATE TRIGGER {TRIGGER_PREFIX}truncated AFTER TRUNCATE ON {p}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER_PREFIX}check_truncated()"
        )
    return tuple(out)


def _change_checks(refs: tuple, replace: bool = False) -> list[str]:
    """The functions that check a row's update, a parent's delete and truncate, against the references
    `refs` (REFERENCES, and what later migrations added to them)."""
    new, old = "(SELECT NEW.*) n", "(SELECT OLD.*) o"  # a row trigger's row as a table for the checks
    updated = _by_table(
        {
            "runs": _refers("runs", new) + _referenced("runs", old, refs),
            **{p: _referenced(p, old, refs) for p in ("campaigns", "cells")},
        },
        _missing("run_id", "runs", new),
    )
    deleted = _by_table({p: _referenced(p, "old_rows o", refs) for p in _PARENTS})
    truncated = _by_table({p: _truncated(p, refs) for p in _PARENTS})
    return [
        _function("check_updated", updated, replace=replace),
        _function("check_deleted", deleted, replace=replace),
        _function("check_truncated", truncated, plan=False, replace=replace),
    ]


# store schema 16: the runs' worker results in a table of their own, under runs as the tables above
RESULTS = ("run_results", "run_id", "runs")


def results_statements() -> tuple[str, ...]:
    """Migration 16's PostgreSQL statements: run_results' foreign key dropped, its references checked by the
    triggers of migration 13 (whose insert and update checks take any table under runs), and the checks of a
    run's update, delete or truncate replaced by ones that look in run_results too."""
    table, column, _ = RESULTS
    return (
        f"ALTER TABLE {table} DROP CONSTRAINT {table}_{column}_fkey",
        f"CREATE TRIGGER {TRIGGER_PREFIX}inserted AFTER INSERT ON {table} REFERENCING NEW TABLE AS new_rows"
        f" FOR EACH STATEMENT EXECUTE FUNCTION {TRIGGER_PREFIX}check_inserted()",
        f"CREATE TRIGGER {TRIGGER_PREFIX}updated AFTER UPDATE ON {table} FOR EACH ROW WHEN"
        f" (OLD.{column} IS DISTINCT FROM NEW.{column}) EXECUTE FUNCTION {TRIGGER_PREFIX}check_updated()",
        *_change_checks((*REFERENCES, RESULTS), replace=True),
    )
