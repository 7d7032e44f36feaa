"""Functions short enough to hold in one look, files short enough to find one's way in: no function longer than
MAX_FUNCTION_LINES in campaign/, analysis/ and kern/core.c, no file there longer than MAX_FILE_LINES. Python is
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
PY_DIRS = ("campaign", "analysis")
C_FILES = ("kern/core.c",)
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
        "static int f(int x)\n{\n    /* } */\n    const char *c = \"}{\";\n    if (x) {\n        return '}';\n"
        "    }\n    return 0;\n}\nint g(void) { return 1; }\n"
    )
    assert c_functions(text) == [("f", 4, 8), ("g", 12, 1)]


def test_the_python_scan_measures_methods_and_nested_functions():
    text = "class A:\n    def m(self):\n        def inner():\n            return 1\n        return inner\n"
    assert python_functions(text) == [("A.m", 2, 4), ("A.m.inner", 3, 2)]


def _sources() -> list[tuple[str, str]]:
    files = [p for d in PY_DIRS for p in sorted((SRC / d).rglob("*.py"))] + [SRC / f for f in C_FILES]
    return [(p.relative_to(SRC).as_posix(), p.read_text()) for p in files]


def test_no_function_is_longer_than_one_can_hold():
    long = []
    for rel, text in _sources():
        found = c_functions(text) if rel.endswith(".c") else python_functions(text)
        long += [f"{rel}:{line} {name} ({n} lines)" for name, line, n in found if n > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long}"


def test_no_file_is_longer_than_one_can_find_ones_way_in():
    long = [f"{rel} ({n} lines)" for rel, text in _sources() if (n := text.count("\n")) > MAX_FILE_LINES]
    assert not long, f"files over {MAX_FILE_LINES} lines: {long}"
