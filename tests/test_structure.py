"""The layout's rules, read from the source: no import cycle, imports only downwards
(agents ← service ← trainer ← benchmarks/scripts; lab beside the top), nothing outside the
tests imports the tests, and no product file longer than 500 lines."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("agents", "service", "trainer", "lab", "benchmarks", "scripts")
#: What each top-level package may import from the project (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "agents": frozenset(),
    "service": frozenset({"agents"}),
    "lab": frozenset({"agents"}),
    "trainer": frozenset({"agents", "service"}),
    "benchmarks": frozenset({"agents", "service", "trainer", "lab"}),
    "scripts": frozenset({"agents", "service", "trainer", "lab"}),
}
MAX_LINES = 500


def _source_files() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import of ``path``, relative ones resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, node.lineno
            for alias in node.names:
                # ``from agents import wire`` imports the module agents.wire.
                yield f"{module}.{alias.name}", node.lineno


def _project_graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _source_files()}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported, _ in _imports(path):
            if imported in modules and imported != name:
                graph[name].add(imported)
    return graph


def test_no_import_cycle() -> None:
    graph = _project_graph()
    # Tarjan's strongly connected components: any component of two or more is a cycle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_imports_only_go_downwards_and_never_into_the_tests() -> None:
    wrong = []
    for path in _source_files():
        own = path.relative_to(ROOT).parts[0]
        for imported, line in _imports(path):
            top = imported.split(".")[0]
            if top == "tests":
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports the tests ({imported})")
            elif top in ALLOWED and top != own and top not in ALLOWED[own]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {imported} upwards")
    assert not wrong, "\n".join(sorted(set(wrong)))


def test_the_service_does_not_load_code_by_name() -> None:
    """importlib with a dotted string hides an import from the rule above."""
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "service").rglob("*.py"))
        if "import_module" in path.read_text() or "__import__" in path.read_text()
    ]
    assert not offenders


@pytest.mark.parametrize("package", PACKAGES)
def test_no_product_file_is_longer_than_500_lines(package: str) -> None:
    long_files = {
        str(path.relative_to(ROOT)): count
        for path in sorted((ROOT / package).rglob("*.py"))
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not long_files, f"files over {MAX_LINES} lines: {long_files}"


def test_relative_and_from_imports_are_resolved(tmp_path: Path) -> None:
    """The parser resolves relative imports and ``from x import module`` forms."""
    sample = tmp_path / "agents" / "climber" / "base.py"
    sample.parent.mkdir(parents=True)
    sample.write_text("from . import search\nfrom ..service_client import X\nimport service.db\n")
    found = {name for name, _ in _imports(sample, tmp_path)}
    assert {"agents.climber.search", "agents.service_client", "service.db"} <= found
