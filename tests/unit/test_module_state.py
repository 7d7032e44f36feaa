"""No process-wide mutable state in boardlab's modules: what one call computes must not change what the next
computes, or a long-lived `serve` reading campaigns of two builds mixes them. Checked on the source, every
module of src/boardlab:

- no `global` statement;
- no module-level name bound to a mutable container (a dict, list or set display or comprehension, or a
  dict()/list()/set()/defaultdict()/OrderedDict() call) that a function anywhere in the tree mutates
  (assigns an item or attribute of it, deletes one, or calls .update/.append/... on it);
- no assignment from one module to another module's attribute (`facts.HOST_FACTS = ...`): a hook one
  program sets for everything else in the process.

A cache of a pure function is `functools.cache`/`lru_cache` on it, not a module dict; what a call needs is
passed to it."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import boardlab

REPO = Path(__file__).resolve().parents[2]
SRC = (
    REPO / "src" / "boardlab"
    if (REPO / "src" / "boardlab").is_dir()
    else Path(boardlab.__file__).resolve().parent
)
MUTABLE_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "bytearray", "deque"}
MUTATORS = {
    "update", "append", "extend", "add", "setdefault", "pop", "popitem", "clear", "remove", "insert",
    "discard", "appendleft", "extendleft", "sort", "reverse",
}  # fmt: skip
# (module, name): why its mutation is the module's own business. At most 5, each with its reason.
ALLOWED: dict[tuple[str, str], str] = {
    (
        "boardlab.stats._memo",
        "_answers",
    ): "answers of pure statistics keyed by a SHA-256 of every input, bounded "
    "(MAX_ANSWERS): an answer cannot differ from what the call computes; functools.lru_cache would keep the "
    "inputs themselves as keys, memory growing with the runs",
    (
        "boardlab.web.pages",
        "_CACHE",
    ): "serve's last CACHE_SIZE pages, each keyed by the store, the campaign and "
    "what its analysis depends on (status, runs stored); facts are stored before serve starts, never during",
    (
        "boardlab.web.background",
        "_growing",
    ): "serve's analysis worker's tables of running campaigns, keyed by store, campaign and its uid, bounded "
    "(GROWING_RUNS); a cell is read on from its last run only where the store still holds exactly the runs "
    "its table holds, and an answer is given again only while its cells' tables are the same objects, so an "
    "analysis cannot differ from one that reads every run",
}


@dataclass(frozen=True)
class Finding:
    where: str  # path:line
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ["boardlab", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


@pytest.fixture(scope="module")
def trees() -> Iterator[dict[str, ast.Module]]:
    """Every module's tree, parsed when this file's tests run (not when any test is collected) and dropped
    after them. The cyclic collector is off meanwhile: an AST has no reference cycle, and with it on, its
    passes over the million nodes took most of the 4 s the parse took and a second or more of the check's
    time; kept for the session, the trees also slowed every later full pass of the unit tier."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        got = {m: ast.parse(p.read_text(), str(p)) for m, p in MODULES.items()}
        yield got
        got.clear()  # freed by their reference counts, never seen by the collector
    finally:
        if was_on:
            gc.enable()


def _children(node: ast.AST) -> list[ast.AST]:
    """ast.iter_child_nodes as a list, without its generator of (name, value) pairs: the check visits each
    node four times, and that generator was half of its time."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [v for v in value if isinstance(v, ast.AST)]
    return out


def _walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of `tree`, in the order ast.walk gives them."""
    out = [tree]
    for node in out:
        out += _children(node)
    return out


def _where(module: str, node: ast.AST) -> str:
    return f"{MODULES[module].relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}"


def _is_mutable(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        return name in MUTABLE_CALLS
    return False


def _mutable_globals(tree: ast.Module) -> dict[str, ast.AST]:
    """Module-level names bound to a mutable container (top level, and inside module-level if/try)."""
    out: dict[str, ast.AST] = {}
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If | ast.Try):
            stack += [
                *node.body,
                *node.orelse,
                *getattr(node, "finalbody", []),
                *getattr(node, "handlers", []),
            ]
        elif isinstance(node, ast.ExceptHandler):
            stack += node.body
        elif isinstance(node, ast.Assign) and _is_mutable(node.value):
            out.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif (
            isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and _is_mutable(node.value)
        ):
            out[node.target.id] = node
    return out


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _imported(module: str, nodes: list[ast.AST]) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Names this module binds by import anywhere (`nodes`: all of its tree): (alias -> a module; alias ->
    (module, name) of a name imported from a boardlab module). Modules outside boardlab count too (`sys.x =
    ...` is the same hook)."""
    modules: dict[str, str] = {}
    names: dict[str, tuple[str, str]] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    modules[a.asname] = a.name
                else:
                    modules[a.name.partition(".")[0]] = a.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, node)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in MODULES:
                    modules[a.asname or a.name] = full
                elif base in MODULES:
                    names[a.asname or a.name] = (base, a.name)
    return modules, names


def _locals(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """Names a function binds itself (parameters, assignments, loops, imports, nested defs), not those it
    declares global; a nested function's own names are its own."""
    a = fn.args
    out = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
    declared: set[str] = set()
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            stack += getattr(node, "decorator_list", [])
            continue  # its body is its own scope
        if isinstance(node, ast.Lambda):
            continue
        stack += _children(node)
    return out - declared


def _functions(tree: ast.AST) -> Iterator[tuple[ast.AST, tuple[ast.AST, ...]]]:
    """Every function with the functions it is nested in, outermost first and itself last (in no particular
    order: a stack, not a generator per node, whose chain each yield climbed was a third of the check)."""
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, chain = stack.pop()
        for child in _children(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = (*chain, child)
                yield child, inner
                stack.append((child, inner))
            else:
                stack.append((child, chain))


def _scope_names(chain: tuple[ast.AST, ...], known: dict[ast.AST, frozenset[str]]) -> frozenset[str]:
    """The names local to the last function of `chain` or to a function it is nested in (`known`: those
    worked out already, by function)."""
    fn = chain[-1]
    if fn not in known:
        outer = _scope_names(chain[:-1], known) if len(chain) > 1 else frozenset()
        known[fn] = outer | _locals(fn)  # type: ignore[arg-type]
    return known[fn]


def _may_be_module_level(expr: ast.expr, module: str, state: dict, imported) -> bool:
    """Whether `_target` could name module-level state: a name the module binds to a container or imports,
    or an attribute of an imported module. Only then are the function's own names worked out, which was
    most of the check's time."""
    modules, names = imported
    if isinstance(expr, ast.Name):
        return expr.id in state.get(module, {}) or expr.id in names
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in modules


def _mutated(node: ast.AST) -> ast.expr | None:
    """What a statement or call changes in place: the container of an item or attribute assigned or deleted,
    or the object a mutating method is called on."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        for t in targets:
            if isinstance(t, ast.Subscript | ast.Attribute):
                return t.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        return node.func.value
    return None


def _own_body(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, without those of the functions nested in it (they are walked on their own)."""
    stack = list(_children(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        yield node
        stack += _children(node)


def _target(expr: ast.expr, module: str, local: frozenset, imported) -> tuple[str, str] | None:
    """(module, name) of the module-level name `expr` is: `NAME` of this module or imported from another,
    or `mod.NAME`."""
    modules, names = imported
    if isinstance(expr, ast.Name) and expr.id not in local:
        return names.get(expr.id, (module, expr.id))
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id not in local:
        other = modules.get(expr.value.id)
        return None if other is None else (other, expr.attr)
    return None


def findings(trees: dict[str, ast.Module], scan: list[str] | None = None) -> list[Finding]:
    """What the modules `scan` (default: every module of `trees`) do to process-wide state."""
    state = {m: _mutable_globals(t) for m, t in trees.items()}
    out: list[Finding] = []
    for module in trees if scan is None else scan:
        tree = trees[module]
        nodes = _walk(tree)
        imported = _imported(module, nodes)
        for node in nodes:
            if isinstance(node, ast.Global):
                out.append(Finding(_where(module, node), f"`global {', '.join(node.names)}`"))
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign)
                       else [])  # fmt: skip
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    other = imported[0].get(t.value.id)
                    if other is not None and other != module:
                        out.append(Finding(_where(module, node), f"assigns {other}.{t.attr} from {module}"))
        known: dict[ast.AST, frozenset[str]] = {}
        for fn, chain in _functions(tree):
            for node in _own_body(fn):
                changed = _mutated(node)
                if changed is None or not _may_be_module_level(changed, module, state, imported):
                    continue
                got = _target(changed, module, _scope_names(chain, known), imported)
                if got is not None and got[1] in state.get(got[0], {}) and got not in ALLOWED:
                    out.append(Finding(_where(module, node), f"mutates the module-level {got[0]}.{got[1]}"))
    return sorted(set(out), key=str)


def test_no_module_keeps_mutable_state_or_sets_another_modules_attribute(trees):
    found = findings(trees)
    assert not found, "process-wide state (pass it, or cache a pure function):\n" + "\n".join(map(str, found))


def test_the_allow_list_is_short_and_every_entry_is_still_there(trees):
    assert len(ALLOWED) <= 5 and all(ALLOWED.values())
    for module, name in ALLOWED:
        assert name in _mutable_globals(trees[module]), f"{module}.{name}: allowed but gone; drop the entry"


def test_the_checker_sees_each_kind_of_state(trees):
    src = """
import os
from boardlab.model import facts
CACHE = {}
SEEN: list = list()
def f(x):
    global N
    CACHE[x] = 1
    SEEN.append(x)
    facts.HOST_FACTS = x
def g(CACHE):
    CACHE[1] = 2  # a parameter, not the module's
"""
    probed = {**trees, "boardlab._probe": ast.parse(src)}
    MODULES["boardlab._probe"] = SRC / "_probe.py"
    try:
        got = [f.what for f in findings(probed, ["boardlab._probe"])]
    finally:
        del MODULES["boardlab._probe"]
    assert sorted(got) == [
        "`global N`",
        "assigns boardlab.model.facts.HOST_FACTS from boardlab._probe",
        "mutates the module-level boardlab._probe.CACHE",
        "mutates the module-level boardlab._probe.SEEN",
    ]
