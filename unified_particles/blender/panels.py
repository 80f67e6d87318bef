# SPDX-License-Identifier: GPL-3.0-or-later
"""The "Unified Particles" tab in the 3D View sidebar: World, Object, and Cache and Bake sub-panels.

The World and Advanced panels show every solver setting declared for them in ``core/settings.py``
(:func:`.settings_ui.panel_setting_names`). Imports ``simulation``, ``bake`` and the base modules.
"""

from __future__ import annotations

from typing import Any, Literal

import bpy

from . import simulation
from .bake import frame_range_note
from .materials import presets_for_role
from .rna import (
    context_scene,
    layout_of,
    object_bake,
    object_settings,
    register_classes,
    scene_bake,
    scene_settings,
    unregister_classes,
)
from .settings_ui import panel_setting_names

_Icon = Literal["INFO", "ERROR", "BLANK1"]

CATEGORY = "Unified Particles"
MAIN_PANEL = "UNIFIED_PARTICLES_PT_main"


# Placement shared by the tab's panels (not registered itself: it has no bl_label or draw).
class _SidebarPanel(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = CATEGORY


class UNIFIED_PARTICLES_PT_main(_SidebarPanel):
    bl_label = "Unified Particles"
    bl_idname = MAIN_PANEL

    def draw(self, context: bpy.types.Context) -> None:
        layout = layout_of(self)
        col = layout.column(align=True)
        row = col.row(align=True)
        row.operator("unified_particles.make_rigid", text="Rigid", icon="MESH_CUBE")
        row.operator("unified_particles.make_cloth", text="Cloth", icon="MOD_CLOTH")
        row.operator("unified_particles.make_soft", text="Soft Body", icon="MOD_SOFT")
        row = col.row(align=True)
        row.operator("unified_particles.make_granular", text="Granular", icon="PARTICLES")
        row.operator("unified_particles.make_collider", text="Collider", icon="MOD_PHYSICS")
        row.operator("unified_particles.make_rope", text="Rope", icon="CURVE_DATA")
        row.operator("unified_particles.make_hair", text="Hair", icon="CURVES_DATA")
        row = col.row(align=True)
        row.operator("unified_particles.make_fluid", text="Fluid", icon="MOD_FLUIDSIM")
        row.operator("unified_particles.make_inflow", text="Inflow", icon="IMPORT")
        row.operator("unified_particles.make_outflow", text="Outflow", icon="EXPORT")
        row = layout.row(align=True)
        row.operator("unified_particles.clear", icon="X")
        row.operator("unified_particles.reset", text="Reset", icon="FILE_REFRESH")
        row = layout.row(align=True)  # Blender's own physics as ours (blender/convert.py)
        row.operator(
            "unified_particles.convert_blender_physics", text="Convert Blender Physics", icon="PHYSICS"
        )
        row.operator("unified_particles.convert_blender_physics", text="Whole Scene").scope = "SCENE"
        warnings = simulation.blender_physics_warnings(context_scene(context))
        if warnings:  # Blender's own cloth / soft body / Bullet still moves a simulated object
            box = layout.box()
            box.alert = True
            for warning in warnings:
                for i, line in enumerate(_wrap(warning, 40)):
                    box.label(text=line, icon="ERROR" if i == 0 else "BLANK1")


class UNIFIED_PARTICLES_PT_world(_SidebarPanel):
    bl_label = "World"
    bl_parent_id = MAIN_PANEL

    def draw(self, context: bpy.types.Context) -> None:
        layout = layout_of(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = scene_settings(context_scene(context))
        col = layout.column()
        col.prop(settings, "particle_radius")
        col.prop(settings, "time_scale")
        for name in panel_setting_names("world"):
            col.prop(settings, name)
        row = col.row()
        row.prop(context_scene(context), "use_gravity", text="Gravity")
        sub = col.column()
        sub.active = context_scene(context).use_gravity
        sub.prop(context_scene(context), "gravity", text="")


class UNIFIED_PARTICLES_PT_advanced(_SidebarPanel):
    bl_label = "Advanced"
    bl_parent_id = "UNIFIED_PARTICLES_PT_world"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context: bpy.types.Context) -> None:
        layout = layout_of(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = scene_settings(context_scene(context))
        col = layout.column()
        for name in panel_setting_names("advanced"):
            col.prop(settings, name)


class UNIFIED_PARTICLES_PT_object(_SidebarPanel):
    bl_label = "Object"
    bl_parent_id = MAIN_PANEL

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return context.object is not None

    def draw(self, context: bpy.types.Context) -> None:
        layout = layout_of(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        obj = context.object
        if obj is None:
            return
        source = object_settings(obj).source_object
        if source is not None:
            what = "Liquid" if object_settings(source).role in ("FLUID", "INFLOW") else "Grains"
            layout.label(text=f"{what} of {source.name}", icon="PARTICLES")
            obj = source
        settings = object_settings(obj)
        layout.prop(settings, "role", text="Role")
        role = settings.role
        if role == "NONE":
            layout.label(text="Use the buttons above to simulate it", icon="INFO")
            return
        presets = presets_for_role(role)
        if presets:
            flow = layout.grid_flow(row_major=True, columns=3, even_columns=True, align=True)
            for ident, label in presets:
                flow.operator("unified_particles.apply_preset", text=label).preset = ident
        col = layout.column()
        if role == "RIGID":
            _draw_mass(col, settings, "density")
            col.prop(settings, "friction")
            col.prop(settings, "fill")
            _draw_size(col, settings, "Particle Size")
            col.prop(settings, "glue_strength")
        elif role == "CLOTH":
            _draw_mass(col, settings, "area_density")
            col.prop(settings, "friction")
            _draw_size(col, settings, "Thickness")
            col.prop(settings, "stretch_stiffness", slider=True)
            col.prop(settings, "bending_model")
            if settings.bending_model == "RIGIDITY":
                col.prop(settings, "bending_rigidity")
            else:
                col.prop(settings, "bend_stiffness", slider=True)
            if obj.type == "MESH":
                col.prop_search(settings, "pin_group", obj, "vertex_groups", text="Pin Group")
                if settings.pin_group:
                    col.prop(settings, "pin_stiffness", slider=True)
                    col.prop(settings, "pin_full_weight")
            col.prop(settings, "tear_strain")
            if obj.type == "MESH" and settings.tear_strain > 0.0:
                col.prop_search(settings, "tear_group", obj, "vertex_groups", text="Tear Group")
            col.prop(settings, "air_viscosity")
            col.prop(settings, "self_collision")
            col.prop(settings, "use_pressure")
            row = col.row()
            row.active = bool(settings.use_pressure)
            row.use_property_decorate = True  # the keyframe dot: Inflation is meant to be keyframed
            row.prop(settings, "inflation")
            if obj.modifiers:
                col.label(text="Modifiers act on the simulated cloth", icon="MODIFIER")
        elif role == "SOFT":
            _draw_mass(col, settings, "density")
            col.prop(settings, "friction")
            col.prop(settings, "soft_stiffness")
            col.prop(settings, "plastic_yield", slider=True)
            sub = col.column()
            sub.active = settings.plastic_yield > 0.0
            sub.prop(settings, "plastic_creep")
            if obj.type == "MESH":
                col.prop_search(settings, "pin_group", obj, "vertex_groups", text="Pin Group")
        elif role == "GRANULAR":
            _draw_mass(col, settings, "density")
            col.prop(settings, "friction")
            col.prop(settings, "kinetic_friction")
            col.prop(settings, "rolling_friction")
            col.prop(settings, "cohesion", slider=True)
            _draw_size(col, settings, "Particle Size")
            col.prop(settings, "size_spread", slider=True)
            col.prop(settings, "particle_object")
        elif role == "ROPE":
            _draw_mass(col, settings, "density")
            col.prop(settings, "friction")
            col.prop(settings, "rope_pins")
            col.prop(settings, "rope_tie_start")
            col.prop(settings, "rope_tie_end")
            col.prop(settings, "particle_object")
        elif role == "HAIR":
            _draw_mass(col, settings, "density")
            col.prop(settings, "friction")
            col.prop(settings, "hair_stiffness", slider=True)
            col.prop(settings, "hair_damping")
            col.prop(settings, "self_collision", text="Strand Contacts")
            _draw_size(col, settings, "Particle Size")
        elif role == "COLLIDER":
            col.prop(settings, "collider_shape")
            col.prop(settings, "friction")
        elif role in ("FLUID", "INFLOW"):
            _draw_liquid(col, settings)
        elif role == "OUTFLOW":
            col.label(text="Liquid inside it is removed every frame", icon="INFO")
        if role in ("RIGID", "CLOTH", "SOFT", "GRANULAR", "FLUID", "ROPE"):  # thrown and animated bodies
            col.prop(settings, "initial_velocity")  # m/s (unit VELOCITY), world axes
        if role == "RIGID":
            row = col.row()
            row.use_property_decorate = True  # the keyframe dot: Animated is meant to be keyframed
            row.prop(settings, "animated")
        if role in ("RIGID", "CLOTH", "GRANULAR", "FLUID", "INFLOW"):  # force fields act on it by this much
            col.prop(settings, "field_weight", slider=True)


def _draw_size(col: bpy.types.UILayout, settings: Any, label: str) -> None:
    """Particle Size (a cloth's Thickness): Scene, Value (then the radius in metres) or Auto."""
    col.prop(settings, "size_mode", text=label)
    sub = col.column()
    sub.active = settings.size_mode == "VALUE"  # greyed out otherwise, kept for switching back
    sub.prop(settings, "particle_size", text="Radius" if label != "Thickness" else "Thickness")


def _draw_mass(col: bpy.types.UILayout, settings: Any, density: str) -> None:
    """Mass From, then the density (or cloth mass per area) or the total mass in kg (Blender's Mass)."""
    col.prop(settings, "mass_mode")
    by_mass = settings.mass_mode == "MASS"
    sub = col.column()
    sub.active = not by_mass  # shown greyed out: the unused one is kept for switching back
    sub.prop(settings, density)
    sub = col.column()
    sub.active = by_mass
    sub.prop(settings, "mass")


def _draw_liquid(col: bpy.types.UILayout, settings: Any) -> None:
    """Rows of a Fluid or Inflow object: its liquid, an inflow's flow, the surface it renders as."""
    col.prop(settings, "density", text="Density (kg/m³)")
    col.prop(settings, "viscosity", slider=True)
    col.prop(settings, "fluid_cohesion", slider=True)
    col.prop(settings, "adhesion", slider=True)
    col.prop(settings, "vorticity", slider=True)
    if settings.role == "INFLOW":
        col.separator()
        col.prop(settings, "flow_velocity")  # m/s (unit VELOCITY)
        col.prop(settings, "flow_axis")
        sub = col.column(align=True)
        sub.prop(settings, "flow_start")
        sub.prop(settings, "flow_end", text="End")
    col.separator()
    col.prop(settings, "fluid_surface")
    if settings.fluid_surface == "MESH":
        col.prop(settings, "surface_resolution")
        col.prop(settings, "surface_smoothing")
    col.prop(settings, "surface_smooth")
    col.prop(settings, "whitewater")
    if settings.whitewater:
        col.prop(settings, "whitewater_capacity")
    col.prop(settings, "particle_object")


class UNIFIED_PARTICLES_PT_cache(_SidebarPanel):
    bl_label = "Cache and Bake"
    bl_parent_id = MAIN_PANEL

    def draw(self, context: bpy.types.Context) -> None:
        layout = layout_of(self)
        layout.use_property_split = True
        layout.use_property_decorate = False
        scene = context_scene(context)
        settings = scene_settings(scene)
        col = layout.column()
        col.prop(settings, "cache_directory")
        col.prop(settings, "cache_memory_limit")

        box = layout.box()
        sim = simulation.find_simulation(scene)
        used = sim.memory_bytes if sim is not None else 0
        limit = settings.cache_memory_limit * 1024 * 1024
        box.label(text=f"Memory: {used / 2**20:.1f} of {limit / 2**20:.0f} MiB", icon="MEMORY")
        for line in simulation.status_lines(scene):
            box.label(text=line)
        if settings.is_baked:
            box.label(text="Baked: live simulation is off", icon="CHECKMARK")

        _draw_bake(layout, context)

        if settings.last_error:
            err = layout.box()
            err.alert = True
            err.label(text="Last error:", icon="ERROR")
            for chunk in _wrap(settings.last_error, 40):
                err.label(text=chunk)


def _draw_bake(layout: bpy.types.UILayout, context: bpy.types.Context) -> None:
    """Bake output of the active object, the bake buttons and the bake's status."""
    scene = context_scene(context)
    state = scene_bake(scene)
    obj = context.object
    if obj is not None:
        source = object_settings(obj).source_object
        role = object_settings(source if source is not None else obj).role
        if role in ("CLOTH", "SOFT"):
            layout.prop(object_bake(obj), "cloth_output", text="Bake To")
        elif role == "RIGID":
            layout.prop(object_bake(obj), "rigid_output", text="Bake To")
        elif role == "GRANULAR":
            layout.label(text="Grains bake to a point cache", icon="PARTICLES")
        elif role in ("FLUID", "INFLOW"):
            layout.label(text="Liquid bakes to a point cache", icon="MOD_FLUIDSIM")
    row = layout.row(align=True)
    row.operator("unified_particles.bake", icon="REC")
    row.operator("unified_particles.free_bake", icon="TRASH")
    if state.is_baking:
        layout.label(text="Baking...", icon="TIME")
    elif state.baked:
        layout.label(text=f"Baked frames {state.frame_start}-{state.frame_end}", icon="CHECKMARK")
        if state.outdated:
            layout.label(text="Outdated: settings changed since the bake", icon="ERROR")
        note = frame_range_note(scene)
        if note:
            box = layout.box()
            for i, line in enumerate(_wrap(note, 40)):
                box.label(text=line, icon="INFO" if i == 0 else "BLANK1")
    messages: tuple[tuple[str, _Icon, bool], ...] = (
        (state.status, "INFO", False),
        (state.error, "ERROR", True),
    )
    for text, icon, alert in messages:
        if text:
            box = layout.box()
            box.alert = alert
            for line in _wrap(text, 40):
                box.label(text=line, icon=icon)
                icon = "BLANK1"


def _wrap(text: str, width: int) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


classes: tuple[type, ...] = (
    UNIFIED_PARTICLES_PT_main,
    UNIFIED_PARTICLES_PT_world,
    UNIFIED_PARTICLES_PT_advanced,
    UNIFIED_PARTICLES_PT_object,
    UNIFIED_PARTICLES_PT_cache,
)


def register() -> None:
    register_classes(classes)


def unregister() -> None:
    unregister_classes(classes)
