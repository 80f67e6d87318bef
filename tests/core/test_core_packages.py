"""The core's geometry/ and colliders/ packages: one concern per module, and imports that run one way.

Read from the source with ``ast`` (no import needed): ``geometry/`` is the lower package (mesh checks,
sampling, distance volumes), ``colliders/`` builds on it (the surfaces only colliders use), so no module
of ``geometry/`` may import ``colliders/``; and each module stays small enough to read at once.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "unified_particles" / "core"
PACKAGES = ("geometry", "colliders")
MAX_MODULE_LINES = 400


def _modules(package: str) -> list[Path]:
    return sorted((CORE / package).glob("*.py"))


def _imported(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``path`` (relative ones resolved)."""
    package = ["unified_particles", "core", path.parent.name]
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                base = ".".join(
                    package[: len(package) - (node.level - 1)] + ([node.module] if node.module else [])
                )
            out.append((base, node.lineno))
            out += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return out


def test_both_packages_exist_and_the_old_modules_are_gone() -> None:
    for package in PACKAGES:
        assert (CORE / package / "__init__.py").is_file()
        assert not (CORE / f"{package}.py").exists(), (
            f"core/{package}.py and core/{package}/ would both exist"
        )


@pytest.mark.parametrize("path", _modules("geometry"), ids=lambda p: p.name)
def test_geometry_never_imports_colliders(path: Path) -> None:
    upward = [
        f"line {line}: {name}"
        for name, line in _imported(path)
        if name == "unified_particles.core.colliders" or name.startswith("unified_particles.core.colliders.")
    ]
    assert not upward, f"geometry/{path.name} imports colliders/ ({'; '.join(upward)}): move the code down"


@pytest.mark.parametrize(
    "path", _modules("geometry") + _modules("colliders"), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_no_module_is_longer_than_a_reader_holds_at_once(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, (
        f"{path.parent.name}/{path.name} has {lines} lines (> {MAX_MODULE_LINES}): split it"
    )
