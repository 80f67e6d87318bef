"""The docs cannot drift from the add-on: their Blender example runs and prints what they say, every
panel, button, operator and property they name exists in the installed extension, and the blocks `make docs`
generates from the registered add-on (operators, properties, the settings tables) are what it gives now."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PANELS_SOURCE = REPO / "unified_particles" / "blender" / "panels.py"
_SPEC = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "generate.py")
assert _SPEC is not None
assert _SPEC.loader is not None
generate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(generate)


def _docs_text() -> str:
    return "\n".join(path.read_text() for path in DOCS)


def _python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def _our_panel_labels(bpy: ModuleType) -> set[str]:
    labels = set()
    for name in dir(bpy.types):
        cls = getattr(bpy.types, name, None)
        if name.startswith("UNIFIED_PARTICLES_PT_") and cls is not None:
            labels.add(cls.bl_label)
    return labels


def _button_texts(bpy: ModuleType) -> set[str]:
    """What the sidebar's buttons read: their text= or, without one, the operator's label."""
    texts = set()
    for idname, text in re.findall(
        r'\.operator\(\s*"([\w.]+)"(?:,\s*text="([^"]*)")?', PANELS_SOURCE.read_text()
    ):
        if text:
            texts.add(text)
        else:
            category, op = idname.split(".")
            texts.add(getattr(getattr(bpy.ops, category), op).get_rna_type().name)
    return texts


def test_every_panel_the_docs_name_exists(bpy_clean: ModuleType) -> None:
    mentioned = set(re.findall(r"\*{1,2}([A-Z][A-Za-z ]+?)\*{1,2} (?:sub-)?panel", _docs_text()))
    assert mentioned, "the docs name no panel: has the pattern changed?"
    missing = mentioned - _our_panel_labels(bpy_clean)
    assert not missing, f"the docs name panels the sidebar does not have: {sorted(missing)}"


def test_every_button_the_docs_press_exists(bpy_clean: ModuleType) -> None:
    pressed = set(re.findall(r"(?:[Pp]ress|[Cc]lick) \*\*([^*]+)\*\*", _docs_text()))
    assert {"Bake", "Rigid"} <= pressed
    missing = pressed - _button_texts(bpy_clean)
    assert not missing, f"the docs press buttons the sidebar does not show: {sorted(missing)}"


def test_every_operator_and_property_the_docs_name_exists(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    text = _docs_text()
    for op in sorted(set(re.findall(r"bpy\.ops\.unified_particles\.(\w+)", text))):
        assert hasattr(bpy.ops.unified_particles, op), f"docs name bpy.ops.unified_particles.{op}"
        bpy.ops.unified_particles.__getattr__(op).get_rna_type()  # raises if it is not registered
    groups: dict[str, Any] = {
        "scene.unified_particles": bpy.context.scene.unified_particles,
        "scene.unified_particles_bake": bpy.context.scene.unified_particles_bake,
    }
    bpy.ops.mesh.primitive_cube_add()
    obj = bpy.context.active_object
    groups["obj.unified_particles"] = obj.unified_particles
    groups["obj.unified_particles_bake"] = obj.unified_particles_bake
    checked = 0
    for prefix, group in groups.items():
        pattern = re.escape(prefix) + r"\.(\w+)"
        for name in sorted(set(re.findall(pattern, text))):
            assert name in group.bl_rna.properties, f"docs name {prefix}.{name}, which does not exist"
            checked += 1
    assert checked >= 5, checked


def test_the_scripting_guide_blender_example_prints_what_it_says(
    bpy_clean: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    scripting = REPO / "docs" / "scripting.md"
    example = next(code for code in _python_blocks(scripting) if "bpy.ops.unified_particles.bake()" in code)
    exec(compile(example, f"{scripting}:example", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    position = re.search(r"crate at frame 48: \(([-\d.]+), ([-\d.]+), ([-\d.]+)\)", out)
    assert position, out
    # The docs say "about (0.0, 0.0, 0.25)": a 0.5 m crate resting on the ground, its centre one
    # half-size up; within a particle radius (0.05 m) of that.
    x, y, z = (float(v) for v in position.groups())
    assert abs(x) < 0.05, (x, y, z)
    assert abs(y) < 0.05, (x, y, z)
    assert abs(z - 0.25) < 0.05, (x, y, z)
    guide = scripting.read_text()
    status = out.strip().splitlines()[-1]
    assert status.startswith("Baked frames 1-48 (1 objects)"), status
    assert "Baked frames 1-48 (1 objects)" in guide
    # The file was never saved, and the guide says what the status adds then.
    assert "The file is not saved: the bake cache went to the temporary folder" in status
    assert "The file is not saved: the bake cache went to the temporary folder" in guide


def test_generated_blocks_are_what_the_installed_addon_gives(bpy_clean: ModuleType) -> None:
    """The operator, property and settings blocks of the docs, generated from the registered add-on (its
    operators' labels and tooltips, its property groups' RNA, what its panels draw for each role)."""
    stale = generate.stale_blocks(with_bpy=True, only_bpy=True)
    assert not stale, "run `make docs` (generated blocks differ from the add-on): " + "; ".join(stale)


def test_every_setting_the_sidebar_shows_is_in_the_user_guide(bpy_clean: ModuleType) -> None:
    missing = generate.undocumented_settings((REPO / "docs" / "user_guide.md").read_text())
    assert not missing, f"the sidebar shows settings docs/user_guide.md has no row for: {missing}"


BPY_EXAMPLES = [
    pytest.param(code, id=f"{path.name}:{line}")
    for path in DOCS
    for line, code in generate.python_blocks(path)
    if "import bpy" in code and generate.expected_lines(code)
]


def test_the_docs_have_blender_examples_that_say_what_they_print() -> None:
    assert BPY_EXAMPLES, "no Blender example of the docs has a `# prints: ...` line"


@pytest.mark.parametrize("code", BPY_EXAMPLES)
def test_blender_example_prints_what_the_docs_say(
    bpy_clean: ModuleType, capsys: pytest.CaptureFixture[str], code: str
) -> None:
    exec(compile(code, "docs-example", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    missing = generate.unmatched(generate.expected_lines(code), printed)
    assert not missing, f"the docs say it prints {missing}, it printed:\n{printed}"
