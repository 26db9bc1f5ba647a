"""The package's dependencies point one way (docs/architecture.md), and the gateway core loads no model.

The import graph is read from the source (every `import`, at module level or inside a function); imports under
`if TYPE_CHECKING:` count for the layers (a type is a dependency too) but not for cycles (they never run).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "nexus_gateway"

LAYERS: list[tuple[str, ...]] = [
    ("cli", "daemon", "bench", "evals", "deploy", "__main__"),
    ("server",),
    ("dashboard",),
    ("meta",),
    ("gateway", "indexing", "reload"),
    ("generation",),
    ("routing",),
    ("engine", "upstreams"),
    ("catalog", "config", "activity", "clients", "metrics", "_sdk", "state", "tracing"),
    ("runtime", "errors"),
]
"""Top to bottom, by package (or by root module where a concept is one module): a module may import its own layer
and the ones below, never one above. The bottom two are the foundation: the catalog and trust store, the config, and
what every layer records (activity, clients, metrics); under them the small runtime helpers and the one exception
tree, which import nothing of the package above them."""

ROOT_MODULE_LIMIT = 12
"""The package root holds the core and the errors and no more than this many modules: every subsystem is a folder."""
SUBPACKAGE_LIMIT = 21
"""A subsystem's folder stays below this (the front, server/, is the largest): past it, it wants folders of its own."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str) -> Iterator[tuple[str, bool]]:
    """(imported module of the package, whether the import runs) for every import in module `name`."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def walk(node: ast.AST, runs: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for part in child.body:
                    yield from walk_one(part, False)
                for part in child.orelse:
                    yield from walk_one(part, runs)
            else:
                yield from walk_one(child, runs)

    def walk_one(node: ast.AST, runs: bool) -> Iterator[tuple[str, bool]]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, runs
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            for alias in node.names:
                yield (f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base), runs
        else:
            yield from walk(node, runs)

    for target, runs in walk(tree, True):
        if target in MODULES and target not in ("nexus_gateway", name):
            yield target, runs


def layer_of(name: str) -> int:
    """Higher for higher layers; the package root itself (its `__init__`) is below everything."""
    first = name.split(".")[1] if "." in name else ""
    for rank, names in enumerate(LAYERS):
        if first in names:
            return len(LAYERS) - rank
    return 0


def test_every_package_and_root_module_has_a_layer():
    named = {part for layer in LAYERS for part in layer}
    tops = {name.split(".")[1] for name in MODULES if "." in name}
    assert sorted(tops - named) == []


def test_no_package_is_a_flat_pile_of_modules():
    piles = {}
    for folder in {path.parent for path in PACKAGE.rglob("*.py")}:
        modules = [p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        if len(modules) > SUBPACKAGE_LIMIT:
            piles[str(folder.relative_to(PACKAGE.parent))] = len(modules)
    root = [p for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(root) <= ROOT_MODULE_LIMIT, sorted(p.name for p in root)
    assert piles == {}


def test_no_module_imports_a_layer_above_its_own():
    upward = sorted(
        {
            f"{name} -> {target}"
            for name in MODULES
            for target, _ in imports_of(name)
            if layer_of(target) > layer_of(name)
        }
    )
    assert upward == []


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    graph = {name: {target for target, runs in imports_of(name) if runs} for name in MODULES}
    assert find_cycle(graph) is None


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize(
    ("module", "absent"),
    [
        ("nexus_gateway.gateway", ["llama_cpp", "nexus_gateway.engine", "nexus_gateway.generation"]),
        ("nexus_gateway.server.app", ["llama_cpp", "numpy", "onnxruntime", "nexus_gateway.meta.run"]),
    ],
)
def test_importing_the_front_loads_no_model_and_no_numpy(module: str, absent: list[str]):
    """`run` is the only user of the engine, and routing is the only user of numpy: neither is loaded before
    it is needed (a passthrough gateway never needs them)."""
    code = f"import sys, {module}; print(','.join(m for m in {absent!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == ""


def test_building_the_http_front_leaves_the_dashboard_templates_for_its_first_request(tmp_path: Path):
    """jinja2 (~90 ms, a few MB) loads when someone opens /ui, not on every HTTP cold start."""
    code = (
        "import sys\n"
        "from nexus_gateway.config import parse_config\n"
        "from nexus_gateway.gateway import Gateway\n"
        "from nexus_gateway.server.http import build_http_app\n"
        f"config = parse_config({{'mcpServers': {{}}, 'nexus': {{'state_dir': {str(tmp_path)!r}}}}})\n"
        "build_http_app(Gateway(config))\n"
        "print(','.join(m for m in ('jinja2', 'llama_cpp', 'numpy', 'onnxruntime') if m in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == ""
