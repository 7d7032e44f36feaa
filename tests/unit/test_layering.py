"""The layering docs/architecture.md states, checked on the source: every import of one package by another is
one that the table "Packages and what each may import" in docs/architecture.md allows (the table is read
from the document: it is the one statement of the rule), imports inside functions and under TYPE_CHECKING
counted; no import cycles among boardlab's modules (module-level imports, and through imports inside
functions or under TYPE_CHECKING); `boardlab.report` never reads the store; no SQL outside `store/`;
and no module outside a workload's own module tests a workload's name."""

from __future__ import annotations

import ast
import gc
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import boardlab

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"
# the source tree this test belongs to (an installed boardlab may be older); the installed one when run alone
SRC = (
    REPO / "src" / "boardlab"
    if (REPO / "src" / "boardlab").is_dir()
    else Path(boardlab.__file__).resolve().parent
)
# The services package starts boardlab-kern's service roles, whose role names are the kernels' own names.
NAME_TEST_ALLOWED = {"services/launch.py"}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        parts = ["boardlab", *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, tree: ast.Module, *, top_level_only: bool) -> set[str]:
    """boardlab modules imported; with top_level_only, not those inside functions or `if TYPE_CHECKING:`."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names = [f"{base}.{a.name}" for a in node.names] + [base]
        for n in names:
            if n.startswith("boardlab") and (target := _resolve(n)) and target != module:
                found.add(target)
    return found


def _trees() -> dict[str, ast.Module]:
    return {m: ast.parse(p.read_text(), str(p)) for m, p in MODULES.items()}


@pytest.fixture(scope="module")
def trees() -> Iterator[dict[str, ast.Module]]:
    """Every module's tree, parsed once for this file's checks (seven of them parsed the whole source again,
    3 s each) and dropped after them; the cyclic collector is off meanwhile, as in test_module_state: an AST
    has no reference cycle, and the collector's passes over its nodes were most of a parse."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        got = _trees()
        yield got
        got.clear()
    finally:
        if was_on:
            gc.enable()


def import_cycles(trees: dict[str, ast.Module], *, top_level_only: bool) -> list[list[str]]:
    graph = {m: _imports(m, t, top_level_only=top_level_only) for m, t in trees.items()}
    # a package's __init__ importing its own submodules is how Python packages work, not a cycle
    for m, deps in graph.items():
        graph[m] = {d for d in deps if not m.startswith(d + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d) :] + [d])
            elif d not in state:
                visit(d, [*stack, d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


@pytest.mark.slow
def test_there_is_no_import_cycle_among_module_level_imports(trees):
    cycles = import_cycles(trees, top_level_only=True)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.slow
def test_there_is_no_import_cycle_even_through_imports_inside_functions(trees):
    """Lazy and TYPE_CHECKING imports included: a cycle hidden inside a function is still a cycle. Where two
    sides share records, they live in a contract module both import (analysis/records.py for the studies)."""
    cycles = import_cycles(trees, top_level_only=False)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


@pytest.mark.slow
def test_report_never_imports_the_store(trees):
    offenders = {
        m: sorted(d for d in _imports(m, t, top_level_only=False) if d.startswith("boardlab.store"))
        for m, t in trees.items()
        if m.startswith("boardlab.report")
    }
    assert not {m: d for m, d in offenders.items() if d}


def _driver_imports(tree: ast.Module) -> set[str]:
    """Database drivers a module imports anywhere (sqlite3, psycopg and its parts)."""
    found = set()
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        found |= {n for n in names if n.split(".")[0] in ("sqlite3", "psycopg", "psycopg_pool")}
    return found


@pytest.mark.slow
def test_the_web_reads_the_store_only_through_its_package_and_imports_no_driver(trees):
    """serve tells a missing campaign from a bad request by the error's type (`errors.NotFound`) and a
    driver's error through `boardlab.store.driver_error`: no module under web/ imports a database driver or
    a module inside the store package (store/pg.py classified psycopg's errors for it)."""
    web = {m: t for m, t in trees.items() if m.startswith("boardlab.web")}
    assert web
    drivers = {m: _driver_imports(t) for m, t in web.items()}
    inside = {m: sorted(d for d in _imports(m, t, top_level_only=False) if d.startswith("boardlab.store."))
              for m, t in web.items()}  # fmt: skip
    assert not {m: d for m, d in drivers.items() if d}
    assert not {m: d for m, d in inside.items() if d}
    store_drivers = {m for m, t in trees.items() if m.startswith("boardlab.store") and _driver_imports(t)}
    assert store_drivers  # the scan sees a driver where there is one


def _workload_names() -> set[str]:
    from boardlab.workloads import all_workloads

    names = {w.name for w in all_workloads()}
    assert {"rt.cyclictest", "ai.inference", "svc.scenario"} <= names
    return names


def _constants(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [v for e in node.elts for v in _constants(e)]
    if isinstance(node, ast.Call) and node.args:  # frozenset({...})
        return _constants(node.args[0])
    return []


def name_tests(tree: ast.Module, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every comparison with a workload name: `x == "rt.cyclictest"`,
    `x in ("ai.inference",)`, `x.startswith("compute.")`, or a module constant holding such names that a
    comparison uses."""
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            held = [v for v in _constants(node.value) if v in names]
            if held:
                consts[node.targets[0].id] = held
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                hits += [(node.lineno, v) for v in _constants(operand) if v in names]
                if isinstance(operand, ast.Name) and operand.id in consts:
                    hits += [(node.lineno, v) for v in consts[operand.id]]
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and node.args
        ):
            families = {n.split(".")[0] + "." for n in names}
            hits += [(node.lineno, v) for v in _constants(node.args[0]) if v in families or v in names]
    return hits


def test_the_name_scan_finds_what_it_looks_for():
    tree = ast.parse(
        'RT = "rt.cyclictest"\nif w == "ai.inference": pass\nif w in RT: pass\n'
        'if w.startswith("compute."): pass'
    )
    assert [n for _, n in name_tests(tree, {"ai.inference", "rt.cyclictest", "compute.gemm"})] == [
        "ai.inference",
        "rt.cyclictest",
        "compute.",
    ]


@pytest.mark.slow
def test_no_module_outside_a_workloads_own_tests_its_name(trees):
    names = _workload_names()
    offenders = {}
    for module, path in MODULES.items():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("workloads/") or rel in NAME_TEST_ALLOWED:
            continue
        hits = name_tests(trees[module], names)
        if hits:
            offenders[rel] = hits
    assert not offenders, offenders


# ---- the import table of docs/architecture.md --------------------------------------------------------------


def _cell_entries(cell: str) -> list[str]:
    """ "a (why, more), b" -> ["a (why, more)", "b"]: commas inside parentheses do not split."""
    out, depth, cur = [], 0, ""
    for ch in cell:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [e for e in [*out, cur.strip()] if e]


def parse_import_table(text: str) -> dict[str, dict[str, set[str] | None]]:
    """The table under "## Packages and what each may import": package -> {package it may import: None (any
    of its modules) or the only modules it may import}; "everything" is {"*": None}, "nothing" {}."""
    section = text.split("## Packages and what each may import", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")][2:]  # past the header and its rule
    table: dict[str, dict[str, set[str] | None]] = {}
    for row in rows:
        cols = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cols) == 3, f"docs/architecture.md: a row of the import table is not 3 columns: {row}"
        names = [n.removesuffix("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", cols[0])]
        allowed: dict[str, set[str] | None] = {}
        for entry in _cell_entries(cols[2]):
            head = re.match(r"[a-z_]+", entry)
            assert head, f"docs/architecture.md: import table entry {entry!r} does not start with a package"
            word = head.group(0)
            if word == "everything":
                allowed["*"] = None
            elif word not in ("nothing", "never"):
                only = re.search(r"\(only ([^)]*)\)|\(only ([^:)]*):", entry)
                allowed[word] = set(re.findall(r"`(boardlab[\w.]*)`", only.group(0))) if only else None
        for n in names:
            table["boardlab" if n == "__init__" else n] = allowed
    return table


def _package(module: str) -> str:
    """boardlab.store.db -> store; boardlab.errors -> errors; boardlab -> boardlab (its version)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "boardlab"


def import_violations(
    table: dict[str, dict[str, set[str] | None]], imports: dict[str, set[str]]
) -> list[str]:
    out = []
    for module, deps in sorted(imports.items()):
        mine = _package(module)
        allowed = table.get(mine)
        if allowed is None:
            out.append(f"{module}: its package {mine!r} has no row in the import table")
            continue
        for dep in sorted(deps):
            theirs = _package(dep)
            if theirs == mine or "*" in allowed:
                continue
            if theirs not in allowed:
                out.append(f"{module} imports {dep}: {mine} may not import {theirs}")
            elif (only := allowed[theirs]) is not None and dep not in only:
                out.append(
                    f"{module} imports {dep}: {mine} may import only {', '.join(sorted(only))} of {theirs}"
                )
    return out


def test_the_table_parser_reads_entries_reasons_and_narrowings():
    text = (
        "## Packages and what each may import\n\n| package | role | may import |\n|---|---|---|\n"
        "| `a/`, `b.py` | r | c (why, and more), d (only `boardlab.d`: its class) |\n"
        "| `c/` | r | nothing |\n| `cli/` | r | everything |\n\n## Next\n| `x/` | r | a |\n"
    )
    table = parse_import_table(text)
    assert table == {"a": {"c": None, "d": {"boardlab.d"}}, "b": {"c": None, "d": {"boardlab.d"}}, "c": {},
                     "cli": {"*": None}}  # fmt: skip
    imports = {"boardlab.a.x": {"boardlab.c.y", "boardlab.d", "boardlab.a.z"}, "boardlab.c": {"boardlab.a"},
               "boardlab.b": {"boardlab.d.db"}, "boardlab.e": set()}  # fmt: skip
    assert import_violations(table, imports) == [
        "boardlab.b imports boardlab.d.db: b may import only boardlab.d of d",
        "boardlab.c imports boardlab.a: c may not import a",
        "boardlab.e: its package 'e' has no row in the import table",
    ]


def test_the_lazy_import_scan_sees_imports_inside_functions_and_type_checking():
    module = next(m for m in MODULES if m.count(".") == 2)
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from boardlab.store import Store\n"
        "def f():\n    import boardlab.cli\n"
    )
    assert _imports(module, tree, top_level_only=False) >= {"boardlab.store", "boardlab.cli"}
    assert not {"boardlab.store", "boardlab.cli"} & _imports(module, tree, top_level_only=True)


@pytest.mark.slow
def test_every_import_between_packages_is_one_the_table_allows(trees):
    table = parse_import_table(ARCHITECTURE.read_text())
    imports = {m: _imports(m, t, top_level_only=False) for m, t in trees.items()}
    assert not import_violations(table, imports), "\n".join(import_violations(table, imports))


def test_the_table_has_no_circle_and_a_row_for_every_package():
    table = parse_import_table(ARCHITECTURE.read_text())
    missing = {_package(m) for m in MODULES} - set(table)
    assert not missing, f"packages without a row in docs/architecture.md's import table: {sorted(missing)}"
    graph = {p: {q for q in allowed if q != "*"} for p, allowed in table.items()}
    assert not set().union(*graph.values()) - set(table), "the table names a package that has no row"
    done: set[str] = set()

    def visit(p: str, path: list[str]) -> None:
        assert p not in path, "the import table has a circle: " + " -> ".join([*path, p])
        if p in done:
            return
        for q in sorted(graph[p]):
            visit(q, [*path, p])
        done.add(p)

    for p in sorted(graph):
        visit(p, [])
    assert not any("*" in allowed for p, allowed in table.items() if p not in ("cli", "__main__")), (
        "only the CLI may import everything"
    )


# ---- SQL only in the store ---------------------------------------------------------------------------------

SQL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+(OR\s+\w+\s+)?INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|"
    r"CREATE\s+(TABLE|INDEX|VIEW)\s|DROP\s+TABLE\s|ALTER\s+TABLE\s|PRAGMA\s|BEGIN(\s+\w+)?\s*$|COMMIT\s*$|"
    r"ROLLBACK\s*$)",
    re.S,  # boardlab writes SQL keywords in capitals; prose ("select the cells from") is not SQL
)


def sql_strings(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, text) of every string (or f-string's literal text) that is a SQL statement."""
    hits = []
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else " x " for v in node.values)
        else:
            continue
        if SQL.match(text):
            hits.append((node.lineno, text[:60]))
    return hits


def test_the_sql_scan_finds_statements_and_leaves_prose():
    tree = ast.parse(
        'a = "SELECT c.key FROM runs r JOIN cells c ON c.id = r.cell_id"\n'
        'b = f"UPDATE campaigns SET label=? WHERE id={1}"\nc = "BEGIN IMMEDIATE"\n'
        'd = "select the cells from the plan"\ne = "Begin the sweep at the lowest frequency"\n'
        'f = "delete from the journal what was undone"\n'
    )
    assert [line for line, _ in sql_strings(tree)] == [1, 2, 3]


@pytest.mark.slow
def test_no_sql_outside_the_store(trees):
    offenders = {}
    for module, path in MODULES.items():
        rel = path.relative_to(SRC).as_posix()
        if not rel.startswith("store/") and (hits := sql_strings(trees[module])):
            offenders[rel] = hits
    assert not offenders, f"SQL outside store/ (add a Store method instead): {offenders}"


# ---- parameters declared once: a condition reads its parameters through resolve_params ----


def params_gets(tree: ast.Module) -> list[int]:
    """Lines of `params.get(...)` (or `self.params.get(...)`): a parameter read beside its declaration,
    usually with its default written a second time."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and (
            isinstance(node.func.value, ast.Name)
            and node.func.value.id == "params"
            or isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr == "params"
        )
    ]


def test_the_params_get_scan_finds_what_it_looks_for():
    tree = ast.parse(
        'a = params.get("workers", 1)\nb = self.params.get("x")\nc = v["workers"]\nd = options.get("x", 1)\n'
    )
    assert params_gets(tree) == [1, 2]


def test_conditions_read_their_parameters_only_through_their_declarations():
    offenders = {}
    for path in sorted((SRC / "conditions").glob("*.py")):
        if hits := params_gets(ast.parse(path.read_text(), str(path))):
            offenders[path.name] = hits
    assert not offenders, (
        "params.get(...) in conditions/ (declare the default in the kind's ParamSpec and read the values "
        f"of conditions.base.resolve_params instead): {offenders}"
    )
