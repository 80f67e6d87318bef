"""The docs cannot drift from the code: their core examples run, and the limits they quote are the code's.

Blender examples (``import bpy``) run in tests/blender; here every other ``python`` block of README.md and
docs/*.md that is a whole script runs in a fresh interpreter, from the repository root as the docs say.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from unified_particles.core import geometry, world

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _python_blocks(path: Path) -> list[tuple[int, str]]:
    blocks, lines, start = [], None, 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if lines is None and line.strip() == "```python":
            lines, start = [], number
        elif lines is not None and line.strip() == "```":
            blocks.append((start, "\n".join(lines)))
            lines = None
        elif lines is not None:
            lines.append(line)
    return blocks


def _is_core_script(code: str) -> bool:
    """A whole script for plain Python: imports the package and builds a World, never imports bpy
    (those run in tests/blender). Fragments that use a ``world`` from elsewhere are not scripts."""
    imports_core = re.search(r"^from unified_particles\.core", code, re.M) is not None
    return "import bpy" not in code and imports_core and "World(" in code


CORE_EXAMPLES = [
    pytest.param(code, id=f"{path.name}:{line}")
    for path in DOCS
    for line, code in _python_blocks(path)
    if _is_core_script(code)
]


def test_the_docs_have_core_examples() -> None:
    names = {p.id.split(":")[0] for p in CORE_EXAMPLES}
    assert {"README.md", "scripting.md"} <= names, names


@pytest.mark.parametrize("code", CORE_EXAMPLES)
def test_core_example_runs(code: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), "the example printed nothing"


def _spaced(number: int) -> str:
    """3000000 -> '3 000 000', the docs' thousands separator."""
    return f"{number:,}".replace(",", " ")


def test_user_guide_quotes_the_fill_limit_of_the_code() -> None:
    guide = (REPO / "docs" / "user_guide.md").read_text()
    assert f"exceed {_spaced(geometry.MAX_SAMPLE_GRID_NODES)} candidate points" in guide


def test_user_guide_quotes_the_solver_memory_per_particle() -> None:
    guide = (REPO / "docs" / "user_guide.md").read_text()
    kilobytes = world.BYTES_PER_PARTICLE / 1000
    assert f"about {kilobytes:.1f} kB per particle while stepping" in guide
