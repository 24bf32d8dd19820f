"""The package's imports run one way: each layer knows only the ones below it, with no circles.

See docs/architecture.md#layers-and-the-import-direction.

Every import counts: module level, inside functions, and type-only ones under
``TYPE_CHECKING``. Importing the bare package ``cuedrecall`` counts as importing
the API, which its ``__init__`` re-exports.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "cuedrecall"

# Lower rank = lower layer. A module may import its own layer or any below it.
LAYERS: dict[str, int] = {
    "errors": 0,
    "version": 0,
    "clock": 0,
    "config": 0,
    "embedding_models": 0,
    "text": 0,
    "heap": 0,
    "pools": 0,
    "store": 1,
    "embed": 1,
    "recall": 2,
    "graph": 2,
    "reconstruct": 2,
    "access": 3,
    "sessions": 3,
    "runtime": 3,
    "handlers": 3,
    "tools": 3,
    "api": 3,
    "server": 4,
    "cli": 4,
    "__main__": 4,
    "demo": 4,
    "trace_view": 4,
    "ui": 4,
}
PACKAGE_INIT_RANK = LAYERS["api"]  # ``import cuedrecall`` runs __init__, which imports the API

# Inside store/: the shared layer (the protocols, rows, predicates, dialect-neutral SQL) knows no backend; each
# backend knows the shared layer only, never another backend; what opens or copies between backends sits above.
# A module of store/ not named here is shared.
STORE_LAYERS: dict[str, int] = {
    "cuedrecall.store.sqlite": 1,
    "cuedrecall.store.postgres": 1,
    "cuedrecall.store.migrate": 2,
    "cuedrecall.store.database_secret": 2,
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str) -> set[str]:
    """Every cuedrecall module this file imports, resolved (relative imports included)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m == "cuedrecall" or m.startswith("cuedrecall.")}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        targets = {m for m in _imports(path, name) if m in modules}
        graph[name] = {t for t in targets if t != name and not name.startswith(t + ".")}
    return graph


def _rank(module: str) -> int:
    if module == "cuedrecall":
        return PACKAGE_INIT_RANK
    top = module.split(".")[1]
    assert top in LAYERS, f"{module} belongs to no layer: add {top!r} to LAYERS in this test"
    return LAYERS[top]


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_a_layer_above_its_own() -> None:
    graph = _graph()
    upward = sorted(
        f"{m} -> {t}" for m, targets in graph.items() if m != "cuedrecall" for t in targets if _rank(t) > _rank(m)
    )
    assert not upward, "imports that run upward:\n" + "\n".join(upward)


def test_recall_and_store_know_nothing_of_the_api_server_or_cli() -> None:
    graph = _graph()
    above = ("cuedrecall.api", "cuedrecall.handlers", "cuedrecall.runtime", "cuedrecall.server", "cuedrecall.cli")
    leaks = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith(("cuedrecall.recall", "cuedrecall.store"))
        for t in targets
        if t == "cuedrecall" or t.startswith(above)
    )
    assert not leaks, "\n".join(leaks)


def _store_layer(module: str) -> str:
    return next((name for name in STORE_LAYERS if module == name or module.startswith(name + ".")), "cuedrecall.store")


def test_store_backends_import_only_the_shared_layer() -> None:
    """A backend is a folder beside the others: it imports store/'s shared modules, not another backend."""
    graph = _graph()
    crossing = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("cuedrecall.store.")
        for t in targets
        if t.startswith("cuedrecall.store.")
        and _store_layer(t) != _store_layer(m)
        and STORE_LAYERS.get(_store_layer(t), 0) >= STORE_LAYERS.get(_store_layer(m), 0)
    )
    assert not crossing, "store modules that import a backend beside or above them:\n" + "\n".join(crossing)


DRIVERS = ("sqlite3", "psycopg", "pgvector")  # a backend's driver: imported inside store/ only


def test_no_database_driver_is_imported_above_the_store() -> None:
    """Storage failures reach the layers above as the project's errors (errors.StoreError, the driver's error
    its cause), so nothing above store/ needs a driver's exception types."""
    leaks = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "store":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            leaks += [f"{path.relative_to(PACKAGE)}: {n}" for n in names if n.split(".")[0] in DRIVERS]
    assert not leaks, "\n".join(leaks)


def test_there_is_no_import_circle_anywhere_in_the_package() -> None:
    circles = _circles(_graph())
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_checker_sees_a_circle_and_a_type_only_import() -> None:
    """The rule's own check: a type-only import is an edge, and two modules importing each other are a circle."""
    graph = {"cuedrecall.a": {"cuedrecall.b"}, "cuedrecall.b": {"cuedrecall.a"}, "cuedrecall.c": set()}
    assert _circles(graph) == [["cuedrecall.a", "cuedrecall.b"]]
    edges = _imports(PACKAGE / "recall" / "trace.py", "cuedrecall.recall.trace")
    assert "cuedrecall.recall.verdicts" in edges  # imported under TYPE_CHECKING only


def test_importing_the_package_loads_no_web_framework() -> None:
    """Only the commands that serve need Starlette, uvicorn or httpx."""
    import subprocess
    import sys

    code = (
        "import sys, cuedrecall; cuedrecall.Memory; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'starlette', 'httpx', 'uvicorn', 'mcp'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
