"""The `slow` marker, kept consistent: a test module that drives a browser or crashes
something (a drainer or worker killed, PostgreSQL stopped, a cluster node killed or hung, a
build installed into a fresh virtualenv) carries `pytestmark` with `pytest.mark.slow`, and no
other module does. `make test` still runs them all; `-m "not slow"` is a quick pass."""

import ast

from tests import ROOT

# Fixtures (tests/browser.py, tests/drainfixtures.py) whose use makes a module heavy.
BROWSER_FIXTURES = {"browser", "page"}
CRASH_FIXTURES = {"spawn", "scratch_pg", "cluster"}
# Imports that do: Playwright itself, the browser helpers, the killable Celery worker.
HEAVY_IMPORTS = {"playwright", "tests.browser", "tests.celeryworker"}
KILLS = {"kill", "killpg"}  # a process killed: os.kill, os.killpg, proc.kill()


def _modules() -> list:
    return sorted((ROOT / "tests").rglob("test_*.py"))


def _is_slow(node: ast.AST) -> bool:
    """`pytest.mark.slow` anywhere in this expression."""
    return any(
        isinstance(n, ast.Attribute)
        and n.attr == "slow"
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "mark"
        for n in ast.walk(node)
    )


def _parametrized(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Argument names a parametrize decorator fills in (a `page` there is no browser)."""
    names = set()
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize":
            first = deco.args[0] if deco.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names |= {n.strip() for n in first.value.split(",")}
            elif isinstance(first, ast.Tuple | ast.List):
                names |= {e.value for e in first.elts if isinstance(e, ast.Constant)}
    return names


def _heavy(tree: ast.Module) -> list[str]:
    """Why a module is heavy (browser or crash), or nothing."""
    why = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = {a.arg for a in node.args.args + node.args.kwonlyargs} - _parametrized(node)
            why += [f"browser fixture {a}" for a in sorted(args & BROWSER_FIXTURES)]
            why += [f"crash fixture {a}" for a in sorted(args & CRASH_FIXTURES)]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names]
            for name in names:
                if name.split(".")[0] in HEAVY_IMPORTS or name in HEAVY_IMPORTS:
                    why.append(f"imports {name}")
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in KILLS:
                why.append(f"calls {called}")
        elif isinstance(node, ast.List):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if any(a == "-m" and b == "venv" for a, b in zip(words, words[1:], strict=False)):
                why.append("builds a fresh virtualenv")
    return why


def _marks(tree: ast.Module) -> tuple[bool, list[int]]:
    """(the module-level pytestmark holds slow, lines of any other slow mark)."""
    module_slow, elsewhere = False, []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            module_slow = _is_slow(node.value)
        elif _is_slow(node):
            elsewhere += [n.lineno for n in ast.walk(node) if _is_slow(n) and hasattr(n, "lineno")]
    return module_slow, elsewhere


def test_every_browser_and_crash_module_and_only_those_is_marked_slow():
    wrong = []
    heavy_seen = 0
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        why = _heavy(tree)
        module_slow, elsewhere = _marks(tree)
        name = path.relative_to(ROOT)
        heavy_seen += bool(why)
        if why and not module_slow:
            wrong.append(f"{name}: {', '.join(sorted(set(why)))}, but no module-level slow mark")
        if module_slow and not why:
            wrong.append(f"{name}: marked slow, but drives no browser and crashes nothing")
        if elsewhere:
            wrong.append(f"{name}: slow marked on a single test (line {min(elsewhere)})")
    assert heavy_seen >= 10, "the scan found almost no browser or crash module"
    assert not wrong, "\n".join(wrong)
