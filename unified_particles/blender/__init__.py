# SPDX-License-Identifier: GPL-3.0-or-later
"""The thin bpy layer: it reads Blender data, drives ``unified_particles.core`` and writes results back.

Nothing here does physics. The modules form layers; a module imports only its own layer or lower ones
(``tests/core/test_layering.py`` checks it), and the core at the top of each module:

1. base: ``rna`` (typed access to Blender data), ``mesh_io`` (NumPy <-> meshes), ``materials``
   (stiffness mappings, presets), ``cachefiles`` (bake file formats, no bpy), ``cloth_result`` and
   ``liquid_surface`` (Geometry Nodes of deformed cloth and liquids), ``bake_marks`` (what a bake leaves
   on an object, and taking it off), ``transforms`` (a rigid object's typed transform and animation);
   then ``settings_ui`` (solver settings derived from ``core.settings``), ``runtime`` (all module-level
   state), ``properties`` (the PropertyGroups), ``granular`` and ``fluids`` (particle objects),
   ``fields`` (force fields), ``identity`` (copies and deleted halves of simulated objects sorted out);
2. frame path: ``scene_reader`` (reads only) -> ``frame_cache`` -> ``writeback`` (the only writer),
   orchestrated by ``simulation``;
3. ``bake`` (a package: paths, outputs, staleness, properties, live_source, targets, stash, job,
   operators);
4. ``operators``, ``panels``;
5. ``handlers``.
"""
