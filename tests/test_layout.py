"""The layout of dlq/ (docs/layout.md), kept true: every module belongs to one row of the
table and is named there, and every import of a dlq module is one its row allows: its own
package, or a name in the row's last column, which names only rows below it (imports flow
upwards). The table is read from docs/layout.md itself, so the document and the code cannot
drift; the code is read with ast, never imported."""

import ast
import re

from tests import ROOT

DLQ = ROOT / "dlq"
LAYOUT = ROOT / "docs" / "layout.md"
HEADER = "| package | holds | may import |"
NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")


def _rows() -> list[dict]:
    """The table's rows, bottom to top: the paths each holds (relative to dlq/), the names it
    mentions in backticks, and what it may import (None: anything)."""
    lines = LAYOUT.read_text().splitlines()
    rows = []
    for line in lines[lines.index(HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        paths = re.findall(r"`dlq/([^`]+)`", cells[0])
        assert paths, f"docs/layout.md: a row names no dlq/ path: {line}"
        rows.append({"paths": paths, "named": set(re.findall(r"`([^`]+)`", cells[1])),
                     "may": _may(cells[-1], line)})  # fmt: skip
    return rows


def _may(cell: str, line: str) -> set[str] | None:
    if cell == "anything":
        return None
    if cell == "-":
        return set()
    names = {name.strip().strip("`") for name in cell.split(",")}
    bad = sorted(name for name in names if not NAME.fullmatch(name))
    assert not bad, f"docs/layout.md: {bad} in 'may import' are not dlq names: {line}"
    return names


def _row_of(rows: list[dict], path: str) -> int | None:
    """The row holding dlq/<path> (a package row holds everything below its folder)."""
    for i, row in enumerate(rows):
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in row["paths"]):
            return i
    return None


def _path_of(dotted: str) -> str | None:
    """The file under dlq/ of a dotted name inside dlq (`broker.codec`, `models.Message`)."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        stem = "/".join(parts[:end])
        for path in (f"{stem}.py", f"{stem}/__init__.py"):
            if (DLQ / path).exists():
                return path
    return None


def _modules() -> list[str]:
    return sorted(str(p.relative_to(DLQ)) for p in DLQ.rglob("*.py"))


def _imports(path: str) -> list[tuple[int, str, str]]:
    """(line, the import as written, each dotted name it takes from dlq, without `dlq.`)."""
    tree = ast.parse((DLQ / path).read_text(), path)
    package = path.split("/")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the module's own package, or above it
                base = ["dlq", *package][: len(package) + 2 - node.level]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target.startswith("dlq."):
                found.append((node.lineno, ast.unparse(node), target.removeprefix("dlq.")))
    return found


def _allows(may: set[str], target: str) -> bool:
    return any(target == name or target.startswith(name + ".") for name in may)


def test_the_table_names_rows_below_each_row_only():
    rows = _rows()
    wrong = []
    for i, row in enumerate(rows):
        for name in sorted(row["may"] or ()):
            path = _path_of(name)
            below = _row_of(rows, path) if path else None
            if below is None or below >= i:
                wrong.append(f"dlq/{row['paths'][0]} may import {name}: not a row below it")
    assert not wrong, "\n".join(wrong)


def test_every_module_is_in_one_row_and_named_there():
    rows = _rows()
    wrong = [f"dlq/{p}: named in docs/layout.md, but not there"
             for row in rows for p in row["paths"] if not (DLQ / p).exists()]  # fmt: skip
    for path in _modules():
        i = _row_of(rows, path)
        if i is None:
            wrong.append(f"dlq/{path}: in no row of docs/layout.md")
            continue
        folder = next((p for p in rows[i]["paths"] if path.startswith(p) and p.endswith("/")), "")
        child = path.removeprefix(folder).split("/")[0].removesuffix(".py")
        numbered = re.match(r"\d{4}_", child)  # a migration: the folder names them all
        named = {child, f"{child}/", f"{child}.py"} & rows[i]["named"]
        if folder and child != "__init__" and not numbered and not named:
            wrong.append(f"dlq/{path}: its row does not name `{child}`")
    assert not wrong, "\n".join(wrong)


def test_every_import_is_one_the_layout_allows():
    rows = _rows()
    wrong = []
    checked = 0
    for path in _modules():
        i = _row_of(rows, path)
        may = rows[i]["may"] if i is not None else set()
        if may is None:
            continue
        for line, written, target in _imports(path):
            checked += 1
            own = _path_of(target)
            if own is not None and _row_of(rows, own) == i:
                continue  # its own package
            if not _allows(may, target):
                wrong.append(f"dlq/{path}:{line}: {written} (dlq/{rows[i]['paths'][0]} may import "
                             f"{', '.join(sorted(may)) or 'nothing'})")  # fmt: skip
    assert checked > 300, "the scan found almost no import of a dlq module"
    assert not wrong, "\n".join(wrong)
