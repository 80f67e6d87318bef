"""`make docs`: rewrite every generated block of README.md and docs/*.md from the code.

A generated block is the text between ``<!-- generated:NAME -->`` and ``<!-- /generated -->``, on its own
lines (a table, a list) or inline (a figure in a sentence). NAME says where the text comes from:

* ``solver-settings``, ``presets``, ``fluid-presets``: tables from ``core/settings.py`` and
  ``blender/materials.py``;
* ``imports-core``, ``imports-blender``, ``imports-top``: what each module of the package imports, read
  with ``ast`` from the source (docs/architecture.md);
* ``perf-*``: figures and tables copied from docs/performance.md (written by ``make bench``);
* ``const-*``: constants of the code, found by name wherever they are defined;
* ``bpy-*``: the add-on as Blender registers it (operators, property groups, panels); these need ``bpy``
  (run with .venv/bin/python, as ``make docs`` does).

Some tables keep hand-written columns (what a setting does, notes): the generator rewrites the columns it
can derive, keeps the others row by row, and gives a new row its tooltip. ``--check`` rewrites nothing and
exits 1 naming every block that differs; tests/core/test_docs.py and tests/blender/test_docs.py run the
same check, so a change in the code that the docs do not follow fails the tests.

This module also holds the checks of the docs' examples (``python_blocks``, ``expected_lines``,
``unmatched``): an example says what it prints in ``# prints: ...`` comments, which the tests compare with
what it really prints.

    python docs/generate.py [--check] [--core-only]
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import math
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "unified_particles"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PERFORMANCE = REPO / "docs" / "performance.md"

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DASH = "\N{EN DASH}"  # the docs' ranges and empty cells
TIMES = "\N{MULTIPLICATION SIGN}"

BLOCK = re.compile(r"<!-- generated:([\w-]+) -->(.*?)<!-- /generated -->", re.S)

# name -> (needs bpy, function(current text) -> new text)
Generator = Callable[[str], str]
GENERATORS: dict[str, Generator] = {}


def generator(name: str) -> Callable[[Generator], Generator]:
    def register(function: Generator) -> Generator:
        GENERATORS[name] = function
        return function

    return register


def needs_bpy(name: str) -> bool:
    return name.startswith("bpy-")


# ---------------------------------------------------------------------------------------------------------
# Formatting


def spaced(number: float, above: float = 10_000) -> str:
    """3000000 -> '3 000 000' (the docs' thousands separator, from ``above`` on); other numbers as short
    as exact."""
    if float(number).is_integer() and abs(number) >= above:
        return f"{int(number):,}".replace(",", " ")
    if float(number).is_integer():
        return str(int(number))
    return f"{number:.4g}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "inf"
    if float(value).is_integer():
        return spaced(value)
    text = f"{value:.3g}"
    return text if "e" not in text else spaced(value)


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["---"] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text`` (header and rule left out)."""
    lines = [line for line in text.splitlines() if line.strip().startswith("|")]
    return [_cells(line) for line in lines[2:]]


def kept_column(current: str, key: Callable[[list[str]], str | None], column: str) -> dict[str, str]:
    """The hand-written column named ``column`` of the current table, by row key."""
    header = next((_cells(line) for line in current.splitlines() if line.strip().startswith("|")), [])
    if column not in header:
        return {}
    index = header.index(column)
    kept = {}
    for row in table_rows(current):
        name = key(row)
        if name is not None and index < len(row):
            kept[name] = row[index]
    return kept


def _first_code(cell: str) -> str | None:
    found = re.findall(r"`([^`]+)`", cell)
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------------------
# Constants, found by name wherever the code defines them (modules move; names stay)


@functools.cache
def _module_constants() -> dict[str, dict[str, ast.expr]]:
    """module dotted name -> {CONSTANT: value expression} of its module-level assignments."""
    found: dict[str, dict[str, ast.expr]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        assigned: dict[str, ast.expr] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if isinstance(target, ast.Name) and target.id.isupper():
                assigned[target.id] = value
        found[module.removesuffix(".__init__")] = assigned
    return found


def constant(name: str) -> Any:
    """The value of the module-level constant ``name`` (defined once in the package), without importing
    the module (Blender modules need bpy): a literal, or an expression of other such constants."""
    modules = _module_constants()
    owners = [m for m, names in modules.items() if name in names]
    if len(owners) > 1:  # also assigned from another module's (a re-export): the literal one defines it
        literal = [m for m in owners if _is_literal(modules[m][name])]
        owners = literal if len(literal) == 1 else owners
    if len(owners) != 1:
        raise LookupError(f"constant {name} is defined in {owners or 'no module'} of the package")
    return _evaluate(modules, owners[0], name)


def _is_literal(expr: ast.expr) -> bool:
    try:
        ast.literal_eval(expr)
    except ValueError:
        return False
    return True


def _evaluate(modules: dict[str, dict[str, ast.expr]], module: str, name: str) -> Any:
    expr = modules[module][name]
    try:
        return ast.literal_eval(expr)
    except ValueError:
        pass
    namespace: dict[str, Any] = {}
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in modules[module]:
            namespace[node.id] = _evaluate(modules, module, node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            other = [m for m in modules if m.rsplit(".", 1)[-1] == node.value.id and node.attr in modules[m]]
            if other:
                value = _evaluate(modules, other[0], node.attr)
                namespace.setdefault(node.value.id, SimpleNamespace())
                setattr(namespace[node.value.id], node.attr, value)
    return eval(compile(ast.Expression(expr), module, "eval"), {"__builtins__": {}}, namespace)


# ---------------------------------------------------------------------------------------------------------
# Core tables


@generator("solver-settings")
def solver_settings(current: str) -> str:
    """scripting.md: every keyword of ``World(...)`` from its one declaration; *Meaning* kept by hand."""
    from unified_particles.core.settings import declared_settings

    meaning = kept_column(current, lambda row: _first_code(row[0]), "Meaning")
    rows = []
    for name, default, info in declared_settings():
        if name in ("substeps", "iterations"):
            continue  # the budget is documented above the table
        shown = {"world": "World", "advanced": "Advanced"}.get(info.panel, DASH)
        low = _number(info.minimum)
        high = _number(info.maximum) if math.isfinite(info.maximum) else "∞"
        value = _number(default) if default is not None else "None"
        rows.append(
            [
                f"`{name}`",
                info.unit or DASH,
                value,
                f"{low} {DASH} {high}",
                shown,
                meaning.get(name, info.description),
            ]
        )
    return table(["Keyword", "Unit", "Default", "Range", "Sidebar panel", "Meaning"], rows)


@generator("presets")
def presets(current: str) -> str:
    """user_guide.md: the object presets of ``blender/materials.py`` (the liquids have their own table)."""
    from unified_particles.blender.materials import PRESETS

    rows = []
    for ident, label, role, values in PRESETS:
        if role == "FLUID":
            continue
        if role == "CLOTH":
            amount = f"{values['area_density']:.2f} kg/m²"
            other = (
                f"stretch {values['stretch_stiffness']:g}, bending rigidity "
                f"{values['bending_rigidity']:g} µN·m (legacy bend {values['bend_stiffness']:g})"
            )
            if values.get("use_pressure"):
                other += f", pressure: inflation {values['inflation']:g}"
        elif role == "SOFT":
            amount = _number(values["density"])
            other = f"stiffness {values['soft_stiffness']:g} Hz"
            if values.get("plastic_yield"):
                other += f", plastic yield {values['plastic_yield']:g}, creep {values['plastic_creep']:g}/s"
        else:
            amount = _number(values["density"])
            other = f"cohesion {values['cohesion']:g}" if "cohesion" in values else DASH
            if "kinetic_friction" in values:  # grains
                grain = f"sliding {values['kinetic_friction']:g}, rolling {values['rolling_friction']:g}"
                other = f"{grain}, {other}"
        rows.append([f"{label} (`{ident}`)", role.lower(), amount, f"{values['friction']:g}", other])
    header = ["Preset", "Role", "Density (kg/m³) or mass per area (kg/m²)", "Friction", "Other"]
    return table(header, rows)


@generator("fluid-presets")
def fluid_presets(current: str) -> str:
    """user_guide.md: the liquids, the core's ``FLUID_PRESETS``."""
    from unified_particles.core import FLUID_PRESETS

    keys = ["density", "viscosity", "cohesion", "adhesion", "vorticity"]
    rows = [
        [f"{ident.title()} (`{ident}`)", *(_number(float(values[k])) for k in keys)]
        for ident, values in FLUID_PRESETS.items()
    ]
    return table(["Preset", "Density (kg/m³)", "Viscosity", "Cohesion", "Adhesion", "Vorticity"], rows)


# ---------------------------------------------------------------------------------------------------------
# Modules and imports (docs/architecture.md; tests/core/test_layering.py reads the same graph)


def module_name(path: Path) -> str:
    """unified_particles/core/geometry/__init__.py -> unified_particles.core.geometry."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute names a relative ``from . import x`` / ``from .x import y`` refers to."""
    if node.level == 0:
        return [node.module or ""]
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    base = ".".join(parts + ([node.module] if node.module else []))
    if node.module:
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return [f"{base}.{alias.name}" for alias in node.names]


@functools.cache
def package_imports() -> dict[str, list[tuple[str, bool, int]]]:
    """Every module of the package -> [(imported module of the package, or ``bpy``; at module level?;
    line)]. ``if TYPE_CHECKING:`` blocks are left out (they are for the type checker only); ``from .pkg
    import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``."""
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    graph: dict[str, list[tuple[str, bool, int]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        top_level = {id(n) for n in tree.body}
        type_only: set[int] = set()
        for n in tree.body:
            if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
                type_only |= {id(m) for m in ast.walk(n)}
        edges: list[tuple[str, bool, int]] = []
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.ImportFrom):
                targets = _resolve(name, path.name == "__init__.py", node)
                # `from .pkg import module` names the module; `from .pkg import function` the package.
                named = [t for t in targets[1:] if t in modules] if node.module else targets
                targets = named or targets[:1]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target == "bpy" or target.startswith("bpy."):
                    edges.append(("bpy", id(node) in top_level, node.lineno))
                    continue
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != name:
                    edges.append((target, id(node) in top_level, node.lineno))
        graph[name] = edges
    return graph


def _short(module: str, root: str) -> str:
    return (
        module[len(root) + 1 :]
        if module.startswith(root + ".")
        else module.removeprefix("unified_particles.")
    )


def _imports_table(root: str, only_top_files: bool = False) -> str:
    graph = package_imports()
    rows = []
    for module in sorted(graph):
        if module != root and not module.startswith(root + "."):
            continue
        path = REPO / Path(*module.split("."))
        if only_top_files and module != root and path.is_dir():
            continue
        file = (path / "__init__.py") if path.is_dir() else path.with_suffix(".py")
        shown = file.relative_to(REPO / Path(*root.split("."))).as_posix()
        targets = sorted({_short(t, root) for t, _, _ in graph[module]})
        rows.append([f"`{shown}`", ", ".join(f"`{t}`" for t in targets) or "nothing"])
    return table(["Module", "Imports (modules of the package, and bpy)"], rows)


@generator("imports-core")
def imports_core(current: str) -> str:
    return _imports_table("unified_particles.core")


@generator("imports-blender")
def imports_blender(current: str) -> str:
    return _imports_table("unified_particles.blender")


@generator("imports-top")
def imports_top(current: str) -> str:
    return _imports_table("unified_particles", only_top_files=True)


# ---------------------------------------------------------------------------------------------------------
# docs/architecture.md: the layer list and the module paragraphs (read by tests/core/test_layering.py)

ARCHITECTURE = REPO / "docs" / "architecture.md"
LAYERS = re.compile(r"<!-- layers -->(.*?)<!-- /layers -->", re.S)


def blender_layers(text: str | None = None) -> list[list[str]]:
    """The Blender layers, lowest first, as docs/architecture.md lists them between ``<!-- layers -->``
    and ``<!-- /layers -->``: one numbered line per layer naming its modules (or packages) in backticks."""
    text = ARCHITECTURE.read_text() if text is None else text
    found = LAYERS.search(text)
    if found is None:
        raise LookupError("docs/architecture.md has no <!-- layers --> list")
    layers = []
    for line in found.group(1).splitlines():
        if re.match(r"\s*\d+\.", line):
            layers.append(
                [name.removesuffix(".py").removesuffix("/") for name in re.findall(r"`([^`]+)`", line)]
            )
    return layers


def module_paragraphs(text: str | None = None) -> list[str]:
    """Paths (relative to unified_particles/) of the modules docs/architecture.md has a paragraph for: a
    list item starting with a bold code path (``- **`fluid.py`**: ...``) under a section named after a
    folder of the package (``## core/``, ``## blender/``; ``## unified_particles/`` for the top level).
    A bold folder (``- **`bake/`**``) makes the paths of the items nested under it relative to it."""
    text = ARCHITECTURE.read_text() if text is None else text
    section: str | None = None
    folders: list[tuple[int, str]] = []  # (indent, folder) of enclosing folder items
    found = []
    for line in text.splitlines():
        heading = re.match(r"##\s+`?([\w/]+/)`?\s*$", line)
        if line.startswith("## "):
            section = None
            if heading:
                section = heading.group(1).removeprefix("unified_particles/")
            folders = []
            continue
        item = re.match(r"(\s*)- \*\*`([\w./]+)`\*\*", line)
        if section is None or item is None:
            continue
        indent, path = len(item.group(1)), item.group(2)
        folders = [(i, f) for i, f in folders if i < indent]
        full = section + "".join(f for _, f in folders) + path
        if path.endswith("/"):
            folders.append((indent, path))
            full += "__init__.py"
        found.append(full)
    return found


# ---------------------------------------------------------------------------------------------------------
# Figures from docs/performance.md (written by `make bench`)


@functools.cache
def _performance_tables() -> list[tuple[list[str], list[list[str]]]]:
    """Every table of docs/performance.md: (header, rows)."""
    tables, lines = [], PERFORMANCE.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            header = _cells(lines[i])
            j = i + 2
            rows = []
            while j < len(lines) and lines[j].startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            tables.append((header, rows))
            i = j
        else:
            i += 1
    return tables


def perf(scene: str, solver: str = "ours", column: str = "ms/frame (median)") -> float:
    """A figure of the Results table of docs/performance.md: the row whose scene starts with ``scene``."""
    for header, rows in _performance_tables():
        if header[:2] == ["Scene", "Solver"] and column in header:
            for row in rows:
                if row[0].startswith(scene) and row[1] == solver:
                    return float(row[header.index(column)].split()[0].rstrip("%"))
    raise LookupError(f"docs/performance.md has no {column!r} for {scene!r} / {solver!r}")


def ablation(optimisation: str, scene: str) -> tuple[float, float]:
    """(without, with) ms/frame of an optimisation (its description contains ``optimisation``) on
    ``scene``, under the first NumPy of the generated ablation table."""
    for header, rows in _performance_tables():
        if header[:2] == ["Optimisation", "Scene"]:
            for row in rows:
                if optimisation in row[0] and row[1] == scene:
                    return float(row[2]), float(row[3])
    raise LookupError(f"docs/performance.md has no ablation {optimisation!r} on {scene}")


def bake_writing_share() -> list[float]:
    """Writing / simulation, per cent, of each output of the bake benchmark."""
    for header, rows in _performance_tables():
        if header[:2] == ["Output", "Vertices"]:
            return [float(row[header.index("Writing / simulation")].rstrip("%")) for row in rows]
    raise LookupError("docs/performance.md has no bake table")


def _ms(value: float) -> str:
    """A frame time as the README gives it: ms below a second, else s; two or three figures."""
    if value >= 1000:
        return f"{value / 1000:.2g} s" if value < 10_000 else f"{value / 1000:.0f} s"
    return f"{value:.2g} ms" if value < 10 else f"{value:.0f} ms"


def _per_frame(value: float) -> str:
    return _ms(value).replace(" ms", " ms/frame").replace(" s", " s/frame")


def _machine_line() -> str:
    text = PERFORMANCE.read_text()
    date = re.search(r"- Date: (\d{4}-\d\d-\d\d)", text)
    cpu = re.search(r"- CPU: ([^,]+), (\d+) cores", text)
    if date is None or cpu is None:
        raise LookupError("docs/performance.md has no Date or CPU line")
    return f"run of {date.group(1)} on a shared {cpu.group(2)}-core {cpu.group(1)}"


@generator("perf-readme")
def perf_readme(current: str) -> str:
    """README.md: the excerpt of docs/performance.md's Results table."""
    rows = [
        [f"Cloth 65 {TIMES} 65 falling on a sphere", "S1", "Blender cloth", "Cloth modifier"],
        ["Rigid pile of 125 cubes", "S2", "Bullet rigid", "Bullet"],
        ["1 000 grains", "S3", "Bullet spheres", "Bullet spheres"],
        ["10 000 grains", "S4 grains, 10k", None, None],
        ["100 000 grains", "S4 grains, 100k", None, None],
        ["1 000 grains on a deforming 20 000-triangle collider", "S6", None, None],
        ["Dam break, 25 200 fluid particles", "S8", "SPlisHSPlasH PBF", "SPlisHSPlasH PBF"],
        ["Dam break, 100 000 fluid particles", "S7 dam break, 100k", None, None],
    ]
    out = []
    for label, scene, peer, peer_label in rows:
        particles = spaced(perf(scene, column="Particles"), above=1000)
        ours = _per_frame(perf(scene))
        theirs = f"{peer_label}: {_per_frame(perf(scene, peer))}" if peer else DASH
        if scene == "S8":
            theirs = "Mantaflow fails in the bpy wheel; " + theirs
        out.append([label, particles, ours, theirs])
    align = ["---", "---:", "---:", "---:"]
    return table(["Scene", "Particles", "Unified Particles", "Blender's own solver"], out, align)


def _figure(function: Callable[[], str]) -> Generator:
    return lambda current: function()


FIGURES: dict[str, Callable[[], str]] = {
    "perf-machine": _machine_line,
    "perf-s2-bullet-ratio": lambda: f"{perf('S2') / perf('S2', 'Bullet rigid'):.0f}x",
    "perf-s8-ratio": lambda: f"{perf('S8') / perf('S8', 'SPlisHSPlasH PBF'):.1f}x",
    "perf-bake-share": lambda: f"{round(max(bake_writing_share()))} %",
    "perf-s4-100k-s": lambda: f"{perf('S4 grains, 100k') / 1000:.1f} s",
    "perf-s7-100k-s": lambda: f"{perf('S7 dam break, 100k') / 1000:.0f} s",
    "perf-s6": lambda: f"{perf('S6'):.0f} ms",
    "perf-s6-still": lambda: _s6_still(),
    "perf-s1-stretch": lambda: _s1_stretch("ours"),
    "perf-s1-stretch-blender": lambda: _s1_stretch("Blender cloth"),
    "perf-candidate-refresh": lambda: "{:.0f} ms to {:.0f} ms".format(
        *ablation("refreshed for the particles that moved", "S4-100k")
    ),
    "perf-candidate-reuse": lambda: "{:.1f}x and {:.1f}x".format(
        *(a / b for a, b in (ablation("rebuilt only when motion exceeds it", s) for s in ("S3", "S4-10k")))
    ),
    # Constants quoted in the docs.
    "const-fill-limit": lambda: spaced(constant("MAX_SAMPLE_GRID_NODES"), above=1000),
    "const-grain-limit": lambda: spaced(constant("MAX_GRAINS_PER_OBJECT"), above=1000),
    "const-fluid-limit": lambda: spaced(constant("MAX_FLUID_PARTICLES_PER_OBJECT"), above=1000),
    "const-bytes-per-particle": lambda: spaced(constant("BYTES_PER_PARTICLE"), above=1000),
    "const-kb-per-particle": lambda: f"{constant('BYTES_PER_PARTICLE') / 1000:.1f} kB",
    "const-sdf-cells": lambda: spaced(constant("SDF_MAX_CELLS"), above=1000),
    "const-park-km": lambda: spaced(int(-constant("PARK_Z") / 1000), above=1000) + " km",
    "const-inactive-km": lambda: f"{-constant('INACTIVE_BELOW_Z') / 1000:.0f} km",
    "const-deform-depth": lambda: f"{constant('DEFORM_DEPTH_RADII'):g}",
    "const-exact-depth": lambda: f"{constant('EXACT_DEPTH_RADII'):g}",
    "const-touch-tolerance": lambda: f"{constant('TOUCH_TOLERANCE_RADII'):g}",
    "const-column-chunk": lambda: spaced(constant("COLUMN_CHUNK"), above=1000),
    "const-search-chunk": lambda: spaced(constant("SEARCH_CHUNK"), above=1000),
    "const-pair-chunk": lambda: spaced(constant("PAIR_CHUNK"), above=1000),
    "const-threads-particles": lambda: spaced(2 * constant("COLUMN_CHUNK"), above=1000),
    "const-threads-pairs": lambda: spaced(2 * constant("PAIR_CHUNK"), above=1000),
    "const-tether-give": lambda: f"{constant('TETHER_GIVE') * 100:g} %",
    "const-tether-tension": lambda: f"{spaced(constant('TETHER_TENSION'))} N/m",
    "const-max-coordinate-km": lambda: f"{spaced(constant('MAX_COORDINATE') / 1000)} km",
    "speed-radius-per-step": lambda: _radius_per_step_speed(),
    "snapshot-bytes": lambda: f"{_snapshot_bytes_per_particle():.0f} bytes",
    "snapshot-100k-250": lambda: f"{_snapshot_bytes_per_particle() * 100_000 * 250 / 1e9:.0f} GB",
}


@functools.cache
def _snapshot_bytes_per_particle() -> float:
    """Bytes per particle of one frame of the live frame cache (a ``Snapshot``): grains on the ground."""
    from unified_particles.core import World
    from unified_particles.core.primitives import grid_points

    world = World(radius=0.05)
    world.add_collider_plane()
    world.add_granular(grid_points((6, 6, 6), 0.11, (0.0, 0.0, 0.05)))
    world.step(1 / 24)
    return float(world.state().nbytes / world.particle_count)


def _s6_still() -> str:
    notes = re.search(r"collider still: ([\d.]+) ms/frame", PERFORMANCE.read_text())
    if notes is None:
        raise LookupError("docs/performance.md's S6 note gives no time with the collider still")
    return f"{float(notes.group(1)):.0f} ms"


def _s1_stretch(solver: str) -> str:
    """'66 % at the worst edge and 26 % at rest' from the S1 row's Max stretch column."""
    for header, rows in _performance_tables():
        if header[:2] == ["Scene", "Solver"] and "Max stretch (last frame)" in header:
            for row in rows:
                if row[0].startswith("S1") and row[1] == solver:
                    worst, last = re.findall(r"[\d.]+", row[header.index("Max stretch (last frame)")])
                    return f"{float(worst):.0f} % at the worst edge and {float(last):.0f} % at rest"
    raise LookupError(f"no S1 stretch for {solver}")


def _radius_per_step_speed() -> str:
    """The speed at which a particle moves one radius per small step at the defaults (r = 5 cm, 24 fps,
    substeps x iterations small steps): r x fps x steps."""
    from unified_particles.core.settings import SolverSettings

    settings = SolverSettings()
    return f"{0.05 * 24 * settings.substeps * settings.iterations:.0f} m/s"


for _name, _function in FIGURES.items():
    GENERATORS[_name] = _figure(_function)


# ---------------------------------------------------------------------------------------------------------
# Blender tables (need bpy: the add-on registered, from the installed extension or this checkout)


def _bpy() -> Any:
    import bpy

    if not hasattr(bpy.types.Scene, "unified_particles"):
        importlib.import_module("unified_particles").register()
    return bpy


class _Recorder:
    """A stand-in for ``UILayout`` that records which properties a panel draws (and nothing else)."""

    def __init__(self, drawn: list[tuple[Any, str]]) -> None:
        self._drawn = drawn

    def prop(self, data: Any, name: str, *args: Any, **kwargs: Any) -> None:
        self._drawn.append((data, name))

    def prop_search(self, data: Any, name: str, *args: Any, **kwargs: Any) -> None:
        self._drawn.append((data, name))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)


class _Context:
    """Blender's context with the active object replaced (a panel's ``draw`` reads both)."""

    def __init__(self, context: Any, **overrides: Any) -> None:
        self._context, self._overrides = context, overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._context, name)


_DRAWN: dict[tuple[str, str], set[str]] = {}


def drawn_properties() -> dict[tuple[str, str], set[str]]:
    """(group, property) -> the roles (or "scene") for which a sidebar panel draws it. ``group`` is
    ``scene``, ``object``, ``scene_bake`` or ``object_bake``. Found by drawing every panel of the add-on
    for an object of each role into a recorder: the panels' own code says what is shown where."""
    if not _DRAWN:
        _DRAWN.update(_draw_every_panel())
    return _DRAWN


def _draw_every_panel() -> dict[tuple[str, str], set[str]]:
    bpy = _bpy()
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    mesh = bpy.data.meshes.new("docs")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("docs", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.vertex_groups.new(name="Pins")
    scene = bpy.context.scene
    groups = {
        "scene": scene.unified_particles,
        "scene_bake": scene.unified_particles_bake,
        "object": obj.unified_particles,
        "object_bake": obj.unified_particles_bake,
    }
    roles = [item.identifier for item in obj.unified_particles.bl_rna.properties["role"].enum_items]
    panels = [getattr(bpy.types, n) for n in dir(bpy.types) if n.startswith("UNIFIED_PARTICLES_PT_")]
    found: dict[tuple[str, str], set[str]] = {}
    for role in roles:
        obj.unified_particles.role = role
        obj.unified_particles.pin_group = "Pins"
        drawn: list[tuple[Any, str]] = []
        context = _Context(bpy.context, object=obj, active_object=obj, mode="OBJECT")
        for bending in ("RIGIDITY", "STIFFNESS"):  # cloth shows the setting of its bending model
            obj.unified_particles.bending_model = bending
            for panel in panels:
                if hasattr(panel, "poll") and not panel.poll(context):
                    continue
                if hasattr(panel, "draw"):
                    panel.draw(SimpleNamespace(layout=_Recorder(drawn)), context)
        for data, name in drawn:
            for group, value in groups.items():
                if data == value:
                    found.setdefault((group, name), set()).add(role.lower() if group == "object" else "scene")
    bpy.data.objects.remove(obj)
    return found


def _property_range(prop: Any) -> str:
    if prop.type == "ENUM":
        return ", ".join(f"`{item.identifier}`" for item in prop.enum_items)
    if prop.type not in ("FLOAT", "INT"):
        return DASH
    low, high = prop.hard_min, prop.hard_max
    if low <= -(2**31) + 1 or high >= 2**31 - 1 or math.isinf(high) or abs(high) > 1e30:
        return "any"
    text = f"{_number(low)} {DASH} {_number(high)}"
    soft_low, soft_high = prop.soft_min, prop.soft_max
    if (soft_low, soft_high) != (low, high):
        text += (
            f" (slider {_number(soft_low)} {DASH} {_number(soft_high)})"
            if soft_low != low
            else (f" (slider to {_number(soft_high)})")
        )
    return text


def _property_default(prop: Any) -> str:
    if prop.type == "BOOLEAN":
        return "on" if prop.default else "off"
    if prop.type == "ENUM":
        return f"`{prop.default}`"
    if prop.type == "STRING":
        return f"`{prop.default}`" if prop.default else "empty"
    if prop.type == "POINTER":
        return "none"
    if getattr(prop, "is_array", False) and prop.array_length > 0:
        return "(" + ", ".join(_number(v) for v in prop.default_array) + ")"
    return _number(prop.default)


def _group_rna(group: str) -> Any:
    bpy = _bpy()
    return {
        "scene": bpy.types.Scene.bl_rna.properties["unified_particles"].fixed_type,
        "scene_bake": bpy.types.Scene.bl_rna.properties["unified_particles_bake"].fixed_type,
        "object": bpy.types.Object.bl_rna.properties["unified_particles"].fixed_type,
        "object_bake": bpy.types.Object.bl_rna.properties["unified_particles_bake"].fixed_type,
    }[group]


def _settings_table(current: str, group: str, roles_column: bool) -> str:
    """Rewrite a user_guide.md settings table: each row named ``Label (`name`)`` gets the label, roles,
    range and default of ``name`` in ``group``; *Unit* and *What it does* are kept as written. Rows of
    another group (``scene.use_gravity``, ``obj.unified_particles_bake...``) are kept as they are."""
    rna = _group_rna(group).properties
    drawn = drawn_properties()
    lines = current.strip("\n").splitlines()
    header = _cells(lines[0])
    out = lines[:2]
    for line in lines[2:]:
        row = _cells(line)
        named = re.fullmatch(r"(.+) \(`(\w+)`\)", row[0])
        if named is None or named.group(2) not in rna:
            if named is not None and re.fullmatch(r"\w+", named.group(2)):
                raise LookupError(f"the docs' table names {group}.{named.group(2)}, which does not exist")
            out.append(line)
            continue
        name = named.group(2)
        prop = rna[name]
        row[0] = f"{prop.name} (`{name}`)"
        if roles_column:
            roles = sorted(drawn.get((group, name), set()))
            everyone = {
                item.identifier.lower() for item in _group_rna("object").properties["role"].enum_items
            }
            row[header.index("Roles")] = "all" if set(roles) >= everyone else ", ".join(roles) or DASH
        row[header.index("Range")] = _property_range(prop)
        row[header.index("Default")] = _property_default(prop)
        out.append("| " + " | ".join(row) + " |")
    return "\n".join(out)


@generator("bpy-world-settings")
def world_settings(current: str) -> str:
    return _settings_table(current, "scene", roles_column=False)


@generator("bpy-advanced-settings")
def advanced_settings(current: str) -> str:
    return _settings_table(current, "scene", roles_column=False)


@generator("bpy-object-settings")
def object_settings(current: str) -> str:
    return _settings_table(current, "object", roles_column=True)


@generator("bpy-fluid-settings")
def fluid_settings(current: str) -> str:
    return _settings_table(current, "object", roles_column=True)


def undocumented_settings(text: str) -> list[str]:
    """Properties a sidebar panel draws that no settings table of ``text`` (user_guide.md) names."""
    named = {word for quoted in re.findall(r"`([^`]+)`", text) for word in re.findall(r"\w+", quoted)}
    return sorted(f"{group}.{name}" for group, name in drawn_properties() if name not in named)


@generator("bpy-operators")
def operators(current: str) -> str:
    """scripting.md: every operator of the add-on, with its options, label and tooltip; *Notes* by hand."""
    bpy = _bpy()
    notes = kept_column(
        current, lambda row: (re.findall(r"unified_particles\.(\w+)", row[0]) or [None])[0], "Notes"
    )
    rows = []
    for name in sorted(dir(bpy.ops.unified_particles)):
        rna = getattr(bpy.ops.unified_particles, name).get_rna_type()
        options = [
            f"{p.identifier}={_python_default(p)}"
            for p in rna.properties
            if p.identifier != "rna_type" and not p.is_hidden and not p.is_skip_save
        ]
        call = f"`bpy.ops.unified_particles.{name}({', '.join(options)})`"
        rows.append([call, rna.name, rna.description.rstrip("."), notes.get(name, "")])
    return table(["Operator", "Label", "Tooltip", "Notes"], rows)


def _python_default(prop: Any) -> str:
    if prop.type == "ENUM":
        return repr(prop.default or prop.enum_items[0].identifier)
    if prop.type == "BOOLEAN":
        return str(bool(prop.default))
    return repr(prop.default)


def _property_list(group: str, python: str) -> str:
    rna = _group_rna(group)
    drawn = drawn_properties()
    items = []
    for prop in rna.properties:
        if prop.identifier == "rna_type":
            continue
        shown = "" if (group, prop.identifier) in drawn else ", not in the sidebar"
        items.append(f"`{prop.identifier}` ({prop.name}{shown})")
    return f"`{python}`: " + ", ".join(items) + "."


@generator("bpy-properties")
def properties(current: str) -> str:
    """scripting.md: the names of every property of the add-on's four property groups."""
    return "\n".join(
        f"- {_property_list(group, python)}"
        for group, python in (
            ("scene", "scene.unified_particles"),
            ("object", "obj.unified_particles"),
            ("scene_bake", "scene.unified_particles_bake"),
            ("object_bake", "obj.unified_particles_bake"),
        )
    )


# ---------------------------------------------------------------------------------------------------------
# Rewriting and checking


def blocks(path: Path) -> Iterator[tuple[str, str]]:
    for found in BLOCK.finditer(path.read_text()):
        yield found.group(1), found.group(2)


def regenerate(text: str, with_bpy: bool) -> str:
    def replace(found: re.Match[str]) -> str:
        name, current = found.group(1), found.group(2)
        if "<!-- generated:" in current:
            raise ValueError(f"the block {name!r} holds another generated block: blocks cannot nest")
        if name not in GENERATORS:
            raise LookupError(f"no generator for the block {name!r}")
        if needs_bpy(name) and not with_bpy:
            return found.group(0)
        inline = not current.startswith("\n")
        new = GENERATORS[name](current.strip("\n") if not inline else current)
        body = new if inline else f"\n{new.strip(chr(10))}\n"
        return f"<!-- generated:{name} -->{body}<!-- /generated -->"

    return BLOCK.sub(replace, text)


def stale_blocks(with_bpy: bool, only_bpy: bool = False) -> list[str]:
    """'file: block' of every generated block that differs from what the code gives now."""
    stale = []
    for path in DOCS:
        text = path.read_text()
        new = regenerate(text, with_bpy)
        old_blocks, new_blocks = list(BLOCK.finditer(text)), list(BLOCK.finditer(new))
        for old, fresh in zip(old_blocks, new_blocks, strict=True):
            if only_bpy and not needs_bpy(old.group(1)):
                continue
            if old.group(0) != fresh.group(0):
                stale.append(f"{path.relative_to(REPO)}: {old.group(1)}")
    return stale


# ---------------------------------------------------------------------------------------------------------
# The docs' examples and what they say they print

# NumPy prints a whole float as "0." (and "-0."): the dot without digits is part of the number.
NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:e[-+]?\d+)?")
TOLERANCE = re.compile(r"\s*\(±\s*([\d.e-]+)\)\s*$")


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(first line, code) of every ```python block of ``path``."""
    found, lines, start = [], None, 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if lines is None and line.strip() == "```python":
            lines, start = [], number + 1
        elif lines is not None and line.strip() == "```":
            found.append((start, "\n".join(lines)))
            lines = None
        elif lines is not None:
            lines.append(line)
    return found


def expected_lines(code: str) -> list[str]:
    """What an example says it prints: its ``# prints: ...`` comments, in order (one printed line each)."""
    return [m.group(1).rstrip() for m in re.finditer(r"#\s*prints:\s?(.*)$", code, re.M)]


def line_matches(expected: str, actual: str) -> bool:
    """Does ``actual`` read as ``expected``? The words must be the same (spaces aside; ``...`` stands for
    anything); each number must be within the tolerance, given as ``(± x)`` at the end of the line, or
    else one unit of the last digit the docs show (0.55 matches 0.54 to 0.56; 825 matches 825 only)."""
    tolerance = TOLERANCE.search(expected)
    if tolerance:
        expected = expected[: tolerance.start()]
    pattern = ""
    for piece in re.split(f"({NUMBER.pattern}|\\.\\.\\.)", expected):
        if piece == "...":
            pattern += ".*"
        elif piece and NUMBER.fullmatch(piece):
            pattern += f"({NUMBER.pattern})"
        else:
            pattern += r"\s*" + r"\s*".join(re.escape(c) for c in piece if not c.isspace()) + r"\s*"
    found = re.fullmatch(r"\s*" + pattern + r"\s*", actual)
    if found is None:
        return False
    wanted = NUMBER.findall(expected)
    for want, got in zip(wanted, found.groups(), strict=True):
        if tolerance:
            allowed = float(tolerance.group(1))
        else:
            decimals = len(want.split(".")[1]) if "." in want and "e" not in want else 0
            allowed = 10.0**-decimals if decimals else 0.0
        if abs(float(got) - float(want)) > allowed + 1e-12:
            return False
    return True


def unmatched(expected: list[str], printed: str) -> list[str]:
    """The expected lines not found in ``printed``, in order (each after the one before)."""
    lines = printed.splitlines()
    missing, position = [], 0
    for want in expected:
        for i in range(position, len(lines)):
            if line_matches(want, lines[i]):
                position = i + 1
                break
        else:
            missing.append(want)
    return missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 if a block is stale")
    parser.add_argument("--core-only", action="store_true", help="leave the blocks that need bpy alone")
    args = parser.parse_args()
    with_bpy = not args.core_only
    if args.check:
        stale = stale_blocks(with_bpy)
        for block in stale:
            print(f"stale: {block}")
        sys.exit(1 if stale else 0)
    for path in DOCS:
        text = path.read_text()
        new = regenerate(text, with_bpy)
        if new != text:
            path.write_text(new)
            print(f"rewrote {path.relative_to(REPO)}")
    if with_bpy:
        missing = undocumented_settings((REPO / "docs" / "user_guide.md").read_text())
        if missing:
            sys.exit(f"docs/user_guide.md has no row for {', '.join(missing)}: add one to a settings table")


if __name__ == "__main__":
    main()
