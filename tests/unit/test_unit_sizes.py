"""Functions short enough to hold in one look, files short enough to find one's way in: no function longer
than MAX_FUNCTION_LINES in any Python module of boardlab or in kern/core.c, no file there longer than
MAX_FILE_LINES, but for the few EXEMPT functions, each with its reason. Python is
measured with ast (from `def` to the function's last line); C by matching the braces of top-level functions
outside comments and strings (from the line of the opening brace to the closing one)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "boardlab"
MAX_FUNCTION_LINES = 120
MAX_FILE_LINES = 1000
C_FILES = ("kern/core.c",)
# At most five, each with why it is still long. Complexity is ruff's C901 (pyproject.toml), the same files.
EXEMPT: dict[str, str] = {}
pytestmark = pytest.mark.skipif(not SRC.is_dir(), reason="needs the source tree (src/boardlab)")


def python_functions(text: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, lines) of every function and method, nested ones too."""
    out = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                out.append((prefix + child.name, start, (child.end_lineno or start) - start + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return out


def _blank_comments_and_strings(text: str) -> str:
    """C source with comments, string and character literals blanked (newlines kept), so braces count."""
    pattern = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def c_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, line of the opening brace, lines) of every top-level function definition: a top-level brace
    whose text before it ends with a parameter list (not a struct, enum or initializer)."""
    s = _blank_comments_and_strings(text)
    out, depth, opened = [], 0, None
    for m in re.finditer(r"[{}]", s):
        if m.group() == "{":
            if depth == 0:
                head = re.search(r"(\w+)\s*\([^;{}]*\)\s*$", s[: m.start()])
                opened = (head.group(1), s.count("\n", 0, m.start()) + 1) if head else None
            depth += 1
            continue
        depth -= 1
        if depth == 0 and opened:
            out.append((opened[0], opened[1], s.count("\n", 0, m.start()) + 2 - opened[1]))
            opened = None
    return out


def test_the_c_scan_finds_functions_and_skips_braces_in_strings_comments_and_structs():
    text = (
        "struct s { int a; };\nstatic const int t[] = {1, 2};\n"
        'static int f(int x)\n{\n    /* } */\n    const char *c = "}{";\n    if (x) {\n'
        "        return '}';\n    }\n    return 0;\n}\nint g(void) { return 1; }\n"
    )
    assert c_functions(text) == [("f", 4, 8), ("g", 12, 1)]


def test_the_python_scan_measures_methods_and_nested_functions():
    text = "class A:\n    def m(self):\n        def inner():\n            return 1\n        return inner\n"
    assert python_functions(text) == [("A.m", 2, 4), ("A.m.inner", 3, 2)]


def _sources() -> list[tuple[str, str]]:
    files = sorted(SRC.rglob("*.py")) + [SRC / f for f in C_FILES]
    return [(p.relative_to(SRC).as_posix(), p.read_text()) for p in files]


@pytest.mark.slow
def test_no_function_is_longer_than_one_can_hold():
    long = []
    for rel, text in _sources():
        found = c_functions(text) if rel.endswith(".c") else python_functions(text)
        long += [
            f"{rel}:{line} {name} ({n} lines)"
            for name, line, n in found
            if n > MAX_FUNCTION_LINES and f"{rel}:{name}" not in EXEMPT
        ]
    assert len(EXEMPT) <= 5 and all(EXEMPT.values()), "at most five exemptions, each with its reason"
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"


def test_no_file_is_longer_than_one_can_find_ones_way_in():
    long = [f"{rel} ({n} lines)" for rel, text in _sources() if (n := text.count("\n")) > MAX_FILE_LINES]
    assert not long, f"files over {MAX_FILE_LINES} lines: {long}"


# ---- boardlab-kern's service roles (kern/svc*.c): one file per role over shared files that call no role. The
# same size limits, and no call circle between the files: a file-level graph of which file names a function
# another file defines (a call or a function pointer) must be acyclic, the common file must name none, and no
# file may name a role's (a file that defines a `bk_kernel`): roles share only through the shared files.
SVC_GLOB = "kern/svc*.c"


def _svc_sources() -> dict[str, str]:
    return {p.relative_to(SRC).as_posix(): p.read_text() for p in sorted(SRC.glob(SVC_GLOB))}


def c_file_graph(files: dict[str, str]) -> dict[str, set[str]]:
    """File -> the other files whose non-static functions it names. A name the file defines itself is its own
    (a static function may share a name with one elsewhere); comments and strings do not count."""
    defined, owner = {}, {}
    for f, text in files.items():
        defined[f] = {name for name, _, _ in c_functions(text)}
        for name in defined[f]:
            if not re.search(rf"^static\b[^;{{}}]*\b{name}\s*\(", text, re.M):
                owner[name] = f
    graph = {}
    for f, text in files.items():
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", _blank_comments_and_strings(text)))
        graph[f] = {owner[n] for n in names - defined[f] if n in owner and owner[n] != f}
    return graph


def find_circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of the graph as the path that closes it ([] when there is none)."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(node: str, path: list[str]) -> list[str]:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := walk(nxt, [*path, node])):
                return found
        state[node] = 2
        return []

    for start in sorted(graph):
        if start not in state and (found := walk(start, [])):
            return found
    return []


def test_the_file_graph_sees_calls_and_pointers_across_files_and_finds_a_circle():
    files = {
        "a.c": "static int h(void) { return 0; }\nint f(void) { return g() + h(); }\n",
        "b.c": '/* f() */\nstatic const char *s = "f()";\nint g(void) { return 1; }\n'
        "static int h(void) { return 2; }\n",
        "c.c": "int k(void) { return 0; }\nconst struct t x = {.fn = f};\n",
    }
    assert c_file_graph(files) == {"a.c": {"b.c"}, "b.c": set(), "c.c": {"a.c"}}
    assert find_circle(c_file_graph(files)) == []
    files["b.c"] += "int m(void) { return k(); }\n"
    assert find_circle(c_file_graph(files)) == ["a.c", "b.c", "c.c", "a.c"]


def test_the_service_files_call_one_way_common_calls_no_role_and_roles_call_no_role():
    files = _svc_sources()
    assert len(files) > 2, f"expected the service roles in {SRC / 'kern'}, found {sorted(files)}"
    graph = c_file_graph(files)
    circle = find_circle(graph)
    assert not circle, f"call circle between the service files: {' -> '.join(circle)}"
    assert not graph["kern/svc_common.c"], f"svc_common.c calls into {sorted(graph['kern/svc_common.c'])}"
    roles = {f for f, text in files.items() if re.search(r"^const bk_kernel bk_svc_\w+\s*=", text, re.M)}
    assert len(roles) >= 5, f"expected one file per service role, found {sorted(roles)}"
    into_roles = {f: sorted(graph[f] & roles) for f in files if graph[f] & roles}
    assert not into_roles, (
        f"files calling into a role's file (move what they share to a shared file): {into_roles}"
    )


def test_the_service_files_hold_short_functions_and_stay_short():
    long = []
    for rel, text in _svc_sources().items():
        long += [
            f"{rel}:{line} {name} ({n} lines)"
            for name, line, n in c_functions(text)
            if n > MAX_FUNCTION_LINES
        ]
        if (n := text.count("\n")) > MAX_FILE_LINES:
            long.append(f"{rel} ({n} lines)")
    assert not long, f"over {MAX_FUNCTION_LINES} lines a function or {MAX_FILE_LINES} a file: {long}"
