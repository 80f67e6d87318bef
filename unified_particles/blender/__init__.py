# SPDX-License-Identifier: GPL-3.0-or-later
"""The thin bpy layer: it reads Blender data, drives ``unified_particles.core`` and writes results back.

Nothing here does physics. The modules form layers; a module imports only its own layer or lower ones
(``tests/core/test_layering.py`` checks it), and the core at the top of each module:

1. base: ``rna`` (typed access to Blender data), ``mesh_io`` (NumPy <-> meshes), ``materials``
   (stiffness mappings, presets), ``cachefiles`` (bake file formats, no bpy);
   then ``settings_ui`` (solver settings derived from ``core.settings``), ``runtime`` (all module-level
   state), ``properties`` (the PropertyGroups), ``granular`` (particle objects), ``identity`` (copies and
   deleted halves of simulated objects sorted out);
2. frame path: ``scene_reader`` -> ``frame_cache`` -> ``writeback``, orchestrated by ``simulation``;
3. ``bake`` (a package: paths, outputs, staleness, properties, live_source, job, operators);
4. ``operators``, ``panels``;
5. ``handlers``.
"""
