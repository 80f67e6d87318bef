"""The package's imports form a DAG, layered as docs/architecture.md describes.

Read from the source with ``ast`` (no Blender needed): every import between the package's own modules,
at module level or inside a function, is an edge. A cycle, an import of a higher layer from a lower one,
or a function-level import inside the package, fails with the offending edge named. The layers are the
list in docs/architecture.md (between ``<!-- layers -->`` and ``<!-- /layers -->``): the docs and this
test read the same list.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "unified_particles"
_SPEC = importlib.util.spec_from_file_location("docs_generate", PACKAGE_DIR.parent / "docs" / "generate.py")
assert _SPEC is not None
assert _SPEC.loader is not None
generate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(generate)

# Lower layers first; a module may import its own layer's modules or lower ones only.
# (Within a layer, the graph must still be acyclic.)
BLENDER_LAYERS: list[set[str]] = [set(layer) for layer in generate.blender_layers()]


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE_DIR.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute names a relative ``from . import x`` / ``from .x import y`` refers to."""
    if node.level == 0:
        base = node.module or ""
        return [base] if base.startswith("unified_particles") else []
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    base = ".".join(parts + ([node.module] if node.module else []))
    if node.module:
        return [base]
    return [f"{base}.{alias.name}" for alias in node.names]


def _imports() -> dict[str, list[tuple[str, bool, int]]]:
    """module -> [(imported module, at module level?, line)]."""
    graph: dict[str, list[tuple[str, bool, int]]] = {}
    modules = {_module_name(p) for p in PACKAGE_DIR.rglob("*.py")}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        top_level = {id(n) for n in tree.body}
        # `if TYPE_CHECKING:` blocks at module level are for the type checker only.
        type_only: set[int] = set()
        for n in tree.body:
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                type_only |= {id(m) for m in ast.walk(n)}
        edges = []
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(name, path.name == "__init__.py", node)
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("unified_particles")]
            for target in targets:
                # `from .pkg import name` where name is a function, not a module: the edge is to pkg.
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    edges.append((target, id(node) in top_level, node.lineno))
        graph[name] = edges
    return graph


def _find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _blender_unit(module: str) -> str | None:
    prefix = "unified_particles.blender."
    if not module.startswith(prefix):
        return None
    return module[len(prefix) :].split(".")[0]


def _layer(unit: str) -> int:
    for i, layer in enumerate(BLENDER_LAYERS):
        if unit in layer:
            return i
    raise AssertionError(f"blender/{unit} is in no layer: add it to the layer list of docs/architecture.md")


def test_imports_form_a_dag() -> None:
    graph = {m: sorted({t for t, _, _ in edges}) for m, edges in _imports().items()}
    # A package's __init__ re-exporting its submodules is not a cycle of behaviour; drop parent->child.
    graph = {m: [t for t in ts if not t.startswith(m + ".")] for m, ts in graph.items()}
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_core_imports_nothing_outside_core() -> None:
    for module, edges in _imports().items():
        if module.startswith("unified_particles.core"):
            outside = [t for t, _, _ in edges if not t.startswith("unified_particles.core")]
            assert not outside, f"{module} imports {outside}"


def test_blender_layers_only_import_downwards() -> None:
    for module, edges in _imports().items():
        unit = _blender_unit(module)
        if unit is None:
            continue
        for target, _, line in edges:
            other = _blender_unit(target)
            if other is None or other == unit:
                continue
            assert _layer(other) <= _layer(unit), (
                f"blender/{unit} (layer {_layer(unit)}) imports blender/{other} "
                f"(layer {_layer(other)}) at line {line}: move the shared code down a layer"
            )


@pytest.mark.parametrize("subpackage", ["core", "blender"])
def test_no_function_level_imports_inside_the_package(subpackage: str) -> None:
    lazy = [
        f"{module}:{line} imports {target}"
        for module, edges in _imports().items()
        if module.startswith(f"unified_particles.{subpackage}")
        for target, top, line in edges
        if not top
    ]
    assert not lazy, "imports inside functions guard no cycle here; import at the top: " + "; ".join(lazy)
