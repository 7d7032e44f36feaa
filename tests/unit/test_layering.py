"""The layering docs/architecture.md states, checked on the source: no import cycles among boardlab's modules
(module-level imports), `boardlab.report` never reads the store, and no module outside a workload's own
module tests a workload's name."""

from __future__ import annotations

import ast
from pathlib import Path

import boardlab

SRC = Path(boardlab.__file__).resolve().parent
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


def test_there_is_no_import_cycle_among_module_level_imports():
    trees = _trees()
    graph = {m: _imports(m, t, top_level_only=True) for m, t in trees.items()}
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
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_report_never_imports_the_store():
    trees = _trees()
    offenders = {
        m: sorted(d for d in _imports(m, t, top_level_only=False) if d.startswith("boardlab.store"))
        for m, t in trees.items()
        if m.startswith("boardlab.report")
    }
    assert not {m: d for m, d in offenders.items() if d}


def _workload_names() -> set[str]:
    from boardlab.analysis.specs import _catalog

    names = set(_catalog())
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
    """(line, name) of every comparison with a workload name: `x == "rt.cyclictest"`, `x in ("ai.inference",)`,
    `x.startswith("compute.")`, or a module constant holding such names that a comparison uses."""
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
        'RT = "rt.cyclictest"\nif w == "ai.inference": pass\nif w in RT: pass\nif w.startswith("compute."): pass'
    )
    assert [n for _, n in name_tests(tree, {"ai.inference", "rt.cyclictest", "compute.gemm"})] == [
        "ai.inference",
        "rt.cyclictest",
        "compute.",
    ]


def test_no_module_outside_a_workloads_own_tests_its_name():
    names = _workload_names()
    offenders = {}
    for path in MODULES.values():
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("workloads/") or rel in NAME_TEST_ALLOWED:
            continue
        hits = name_tests(ast.parse(path.read_text(), str(path)), names)
        if hits:
            offenders[rel] = hits
    assert not offenders, offenders
