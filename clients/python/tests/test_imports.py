"""No import circles in the package.

Every ``import`` and ``from ... import`` of a module of the package counts,
wherever it is written: at the top, inside a function, or under
``if TYPE_CHECKING:``. A type-only import still ties the two modules
together (a reader needs both, and with ``from __future__ import
annotations`` it hides a circle that a runtime import would reveal), so the
package breaks circles by moving what two modules share below both, never
by hiding an import from the interpreter. ``from . import x`` is a use of
the submodule ``x``; ``from .x import y`` of ``x``. No server needed.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "redis_recipes"


def imports_of(package: Path) -> Dict[str, Set[str]]:
    """Each module of ``package`` (by name, ``__init__`` for the package
    itself) and the modules of the package it imports."""
    name = package.name
    modules = {p.stem for p in package.glob("*.py")}
    graph: Dict[str, Set[str]] = {}
    for path in sorted(package.glob("*.py")):
        used: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    if parts[0] == name:
                        used.add(parts[1] if len(parts) > 1 else "__init__")
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    parts = (node.module or "").split(".")
                    if parts[0] != name:
                        continue
                    parts = parts[1:]
                else:
                    parts = (node.module or "").split(".") if node.module else []
                if parts:
                    used.add(parts[0])
                else:
                    # `from . import x, y`: submodules, or names of __init__.
                    for alias in node.names:
                        used.add(alias.name if alias.name in modules else "__init__")
        used.discard(path.stem)
        graph[path.stem] = used & modules
    return graph


def circles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The shortest circle through each import that closes one."""
    found: Set[tuple] = set()
    for a in sorted(graph):
        for b in sorted(graph[a]):
            # Breadth-first from b back to a.
            came_from = {b: None}
            queue = [b]
            while queue and a not in came_from:
                v = queue.pop(0)
                for w in sorted(graph.get(v, ())):
                    if w not in came_from:
                        came_from[w] = v
                        queue.append(w)
            if a not in came_from:
                continue
            path = [a]
            while path[-1] != b:
                path.append(came_from[path[-1]])
            cycle = [a] + list(reversed(path[1:]))
            start = cycle.index(min(cycle))
            found.add(tuple(cycle[start:] + cycle[:start]))
    return [list(c) for c in sorted(found)]


def test_the_package_has_no_import_circle() -> None:
    graph = imports_of(PACKAGE)
    assert "client" in graph and "_family" in graph["rv"], "the scan misses the package"
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(
        " -> ".join(c + c[:1]) for c in found
    )


def test_the_scan_sees_type_checking_and_function_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\nclass A: ...\n"
    )
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n    return a\n")
    (pkg / "c.py").write_text("from . import b\n# from .a import A is a comment\n")
    graph = imports_of(pkg)
    assert graph == {"__init__": {"a"}, "a": {"b"}, "b": {"a"}, "c": {"b"}}
    assert circles(graph) == [["a", "b"]]
