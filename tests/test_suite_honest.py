"""The suite checks something in every test: each test function, read with `ast`, asserts, expects an
exception (pytest.raises, pytest.fail, raise) or calls a checker: a function of the suite that does one of
those, however deep (qs_conformance's checks, a helper that asserts), or a command run with check=True."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# what checks by itself: pytest's, and the standard library's
CHECKERS = {"raises", "fail", "warns", "deprecated_call", "check_call", "check_output", "assert_allclose",
            "assert_array_equal"}


def cannot_fail(node: ast.Assert) -> bool:
    """`assert 1`, `assert "text"`, `assert x == x` (the same expression on both sides, as two reads of one
    value): an assert that holds whatever the code does."""
    t = node.test
    if isinstance(t, ast.Constant):
        return bool(t.value)
    return (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Eq, ast.LtE, ast.GtE, ast.Is))
            and ast.dump(t.left) == ast.dump(t.comparators[0]))


def _raises_assertion(node: ast.Raise) -> bool:
    e = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(e, ast.Name) and e.id in ("AssertionError", "Failed")


class _Module:
    """One file of the suite: its functions (nested ones too) and what it imports from other files of it."""

    def __init__(self, tree: ast.Module):
        self.functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        self.names: dict[str, tuple[str, str]] = {}     # local name: (suite module, its name there)
        self.modules: dict[str, str] = {}               # local name: suite module
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.module:
                mod = n.module.removeprefix("tests.")
                for a in n.names:
                    if n.module == "tests":
                        self.modules[a.asname or a.name] = a.name
                    else:
                        self.names[a.asname or a.name] = (mod, a.name)
            elif isinstance(n, ast.Import):
                for a in n.names:
                    self.modules[a.asname or a.name] = a.name.removeprefix("tests.")
        self.checks: set[str] = set()


def _calls_a_checker(call: ast.Call, mod: _Module, suite: dict[str, _Module]) -> bool:
    """f(...) where f is a checker of this file or imported from another; pytest.raises(...) and the like; a
    method (self.x(...)) or another file's function (qs_conformance.x(...)) that checks. Names resolve as
    Python would: subprocess.run is not the suite's run()."""
    f = call.func
    if isinstance(f, ast.Name):
        if f.id in mod.names:
            other, name = mod.names[f.id]
            return other in suite and name in suite[other].checks
        return f.id in mod.checks
    if isinstance(f, ast.Attribute):
        owner = f.value.id if isinstance(f.value, ast.Name) else None
        if f.attr in CHECKERS:
            return True
        if owner in ("self", "cls"):
            return f.attr in mod.checks
        other = mod.modules.get(owner or "")
        return other in suite and f.attr in suite[other].checks
    return False


def _checks_here(fn: ast.AST, mod: _Module, suite: dict[str, _Module]) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and not cannot_fail(node):
            return True
        if isinstance(node, ast.Raise) and _raises_assertion(node):
            return True
        if isinstance(node, ast.Call):
            if _calls_a_checker(node, mod, suite):
                return True
            if any(k.arg == "check" and isinstance(k.value, ast.Constant) and k.value.value is True
                   for k in node.keywords):
                return True
    return False


def _suite(trees: dict[Path, ast.Module]) -> dict[str, _Module]:
    """Every file's checkers, to a fixed point: a helper that calls a checker checks too (pure)."""
    suite = {p.stem: _Module(t) for p, t in trees.items()}
    while True:
        grew = False
        for mod in suite.values():
            more = {n.name for n in mod.functions if n.name not in mod.checks and _checks_here(n, mod, suite)}
            grew |= bool(more)
            mod.checks |= more
        if not grew:
            return suite


def always_true(trees: dict[Path, ast.Module]) -> list[str]:
    """`file:line` of every assert that cannot fail (pure)."""
    return [f"{p.name}:{n.lineno}" for p, t in trees.items() for n in ast.walk(t)
            if isinstance(n, ast.Assert) and cannot_fail(n)]


def unchecked(trees: dict[Path, ast.Module]) -> list[str]:
    """`file:line test_name` of every test function that checks nothing (pure)."""
    suite = _suite(trees)
    return [f"{p.name}:{n.lineno} {n.name}" for p in trees
            for n in sorted(suite[p.stem].functions, key=lambda n: n.lineno)
            if n.name.startswith("test") and n.name not in suite[p.stem].checks]


def _parse(text: str) -> dict[Path, ast.Module]:
    return {Path("t.py"): ast.parse(text)}


def test_the_scan_tells_a_check_from_none():
    suite = _parse("""
def helper(x):
    assert x
def deeper(x):
    helper(x)
def test_direct(): assert x
def test_raises():
    with pytest.raises(ValueError): int("x")
def test_via_helper(): deeper(1)
def test_run(): subprocess.run(["true"], check=True)
def test_nothing():
    x = compute()
    print(x)
def test_compares_and_drops(): a == b
def test_run_unchecked(): subprocess.run(["true"], check=False)
def test_same_read_twice(): assert c.get("/db")["seq"] == c.get("/db")["seq"]
def test_constant(): assert "always"
class TestK:
    def test_method(self): self.go()
    def test_checked_method(self): self.helper(1)
    def helper(self, x): assert x
def run(x): assert x
def test_not_the_suites_run(): subprocess.run(["true"])
def test_the_suites_run(): run(1)
""")
    assert unchecked(suite) == ["t.py:11 test_nothing", "t.py:14 test_compares_and_drops",
                                "t.py:15 test_run_unchecked", "t.py:16 test_same_read_twice", "t.py:17 test_constant",
                                "t.py:19 test_method", "t.py:23 test_not_the_suites_run"]
    assert always_true(suite) == ["t.py:16", "t.py:17"]


def test_a_checker_imported_from_another_file_counts():
    suite = {Path("qs_conformance.py"): ast.parse("def check_x(server): assert server.ask()"),
             Path("conftest.py"): ast.parse("def helper(): pass"),
             Path("test_a.py"): ast.parse("from qs_conformance import check_x\nimport qs_conformance\n"
                                          "from conftest import helper\n"
                                          "def test_one(): check_x(1)\ndef test_two(): qs_conformance.check_x(2)\n"
                                          "def test_three(): helper()\n")}
    assert unchecked(suite) == ["test_a.py:6 test_three"]


def test_every_test_function_of_the_suite_checks_something():
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(TESTS.rglob("*.py"))
             if "fixtures" not in p.parts}
    assert len(trees) > 50
    assert unchecked(trees) == []
    assert always_true(trees) == []
