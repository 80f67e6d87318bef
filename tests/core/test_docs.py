"""The docs cannot drift from the code: their core examples run and print what they say, the limits and
figures they quote are the code's, their generated blocks are current, and docs/architecture.md has one
paragraph per module.

Blender examples (``import bpy``) and the blocks generated from the registered add-on run in tests/blender;
here every other ``python`` block of README.md and docs/*.md that is a whole script runs in a fresh
interpreter, from the repository root as the docs say. ``make docs`` rewrites the generated blocks.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from unified_particles.core import geometry, world

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_SPEC = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "generate.py")
assert _SPEC is not None
assert _SPEC.loader is not None
generate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(generate)


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
    # What the docs say it prints (its `# prints: ...` comments), numbers to the digits the docs show.
    expected = generate.expected_lines(code)
    assert expected, "say what the example prints in `# prints: ...` comments"
    missing = generate.unmatched(expected, result.stdout)
    assert not missing, f"the docs say it prints {missing}, it printed:\n{result.stdout}"


@pytest.mark.parametrize(
    ("expected", "printed", "matches"),
    [
        ("crate centre: [0.0 0.0 0.55] (± 0.02)", "crate centre: [-0.003  0.003  0.555]", True),
        ("crate centre: [0.0 0.0 0.55] (± 0.02)", "crate centre: [-0.003  0.003  0.6]", False),
        ("hammock sag: 0.15", "hammock sag: 0.155", True),
        ("hammock sag: 0.15", "hammock sag: 0.18", False),
        ("825 particles: ...", "825 particles: <RigidBody: 125 particles>", True),
        ("825 particles: ...", "849 particles: <RigidBody: 125 particles>", False),
        ("flag downwind: True sand y: 0.0", "flag downwind: True sand y: 0.0", True),
        ("flag downwind: True", "flag downwind: False", False),
    ],
)
def test_printed_lines_are_compared_by_words_and_numbers(expected: str, printed: str, matches: bool) -> None:
    assert generate.line_matches(expected, printed) is matches


def test_generated_blocks_are_what_the_code_gives_now() -> None:
    """`make docs` output is committed: a change in the code that the docs do not follow fails here
    (the blocks that need Blender are checked in tests/blender/test_docs.py)."""
    stale = generate.stale_blocks(with_bpy=False)
    assert not stale, "run `make docs` (generated blocks differ from the code): " + "; ".join(stale)


def test_every_generated_block_has_a_generator() -> None:
    names = [name for path in DOCS for name, _ in generate.blocks(path)]
    assert len(names) >= 10, names
    unknown = sorted(set(names) - set(generate.GENERATORS))
    assert not unknown, f"blocks without a generator in docs/generate.py: {unknown}"


def _module_files() -> list[str]:
    package = REPO / "unified_particles"
    return sorted(p.relative_to(package).as_posix() for p in package.rglob("*.py"))


def test_architecture_has_one_paragraph_per_module_and_none_for_modules_that_do_not_exist() -> None:
    paragraphs = generate.module_paragraphs()
    files = _module_files()
    twice = sorted({p for p in paragraphs if paragraphs.count(p) > 1})
    assert not twice, f"docs/architecture.md has more than one paragraph for {twice}"
    missing = sorted(set(files) - set(paragraphs))
    assert not missing, f"docs/architecture.md has no paragraph for {missing}"
    gone = sorted(set(paragraphs) - set(files))
    assert not gone, f"docs/architecture.md has paragraphs for modules that do not exist: {gone}"


def test_the_layer_list_names_existing_blender_modules_once() -> None:
    blender = REPO / "unified_particles" / "blender"
    units = [name for layer in generate.blender_layers() for name in layer]
    assert len(units) == len(set(units)), f"a module is in two layers: {units}"
    gone = [
        u
        for u in units
        if not (blender / f"{u}.py").is_file() and not (blender / u / "__init__.py").is_file()
    ]
    assert not gone, f"the layer list of docs/architecture.md names modules that do not exist: {gone}"


def _names_in_code() -> set[str]:
    """Every identifier, attribute, argument, keyword, module and string constant of the package, the
    benchmarks, the tests and the docs' scripts."""
    names: set[str] = set()
    for folder in ("unified_particles", "benchmarks", "tests", "docs"):
        for path in (REPO / folder).rglob("*.py"):
            names.add(path.stem)
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(node.name)
                elif isinstance(node, ast.Name):
                    names.add(node.id)
                elif isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
                    names.add(str(node.arg))
                elif isinstance(node, ast.alias):
                    names.update(node.name.split("."))
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names.update(node.module.split("."))
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    names.update(re.findall(r"\w+", node.value))
    return names


# Names the docs quote from elsewhere: Blender's own source and Python API, and file names.
NOT_OURS = {
    "get_effector_data",
    "effector_falloff",
    "falloff_func",
    "do_physical_effector",  # Blender's effect.cc
    "wind_factor",
    "apply_to_rotation",
    "use_absorption",  # Blender's FieldSettings
    "compileJob",  # Flamenco's job type API
    "user_default",
    "npz",  # Blender's extension repository, a file extension
}


def test_every_code_name_the_docs_quote_exists() -> None:
    """A function, class, constant or attribute the docs name in backticks (`solver.diverged_particles`,
    `DEFORM_DEPTH_RADII`) is in the code: a renamed function fails here, not in a reader's search."""
    names = _names_in_code() | NOT_OURS
    unknown = []
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for quoted in re.findall(r"`([A-Za-z_][\w.]*)(?:\(\))?`", line):
                if not re.search(r"[a-z]_|[a-z][A-Z]|\.[a-z_]", quoted) or quoted.endswith((".py", ".md")):
                    continue  # plain words, file names
                missing = [part for part in quoted.split(".") if part and part not in names]
                if missing:
                    unknown.append(f"{path.name}:{number}: {quoted}")
    assert not unknown, "the docs name what the code does not have: " + "; ".join(unknown)


def test_every_path_the_docs_give_exists() -> None:
    """`core/solver.py`, `blender/bake/outputs.py`, `tests/core/test_fluid.py`: paths the docs send readers
    to, relative to the repository or to the package."""
    unknown = []
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for quoted in re.findall(r"`([\w./-]+/[\w.-]+\.(?:py|md|js|json))`", line):
                bases = [
                    REPO,
                    path.parent,
                    REPO / "unified_particles",
                    *(REPO / "unified_particles").iterdir(),
                ]
                if not any((base / quoted).exists() for base in bases):
                    unknown.append(f"{path.name}:{number}: {quoted}")
    assert not unknown, "the docs give paths that do not exist: " + "; ".join(unknown)


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


def test_every_make_command_the_docs_give_exists() -> None:
    """`make demo-video`, `make docs`, `make test-blender42`: targets of the Makefile."""
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.M))
    given = {name for path in DOCS for name in re.findall(r"`make ([\w-]+)", path.read_text())}
    assert {"demo", "test", "docs"} <= given, given
    missing = sorted(given - targets)
    assert not missing, f"the docs give make targets the Makefile does not have: {missing}"
