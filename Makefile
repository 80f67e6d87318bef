# Unified Particles: every task of the project from a fresh clone.
#   make demo        build, install and run the showcase scene: a 3-second bake, a still and a light
#                    preview video into out/ (a few minutes)
#   make demo-video  the same in HD: 120 frames, still and video at 1280x720 (about half an hour)
#   make test        lint, type check, core tests (NumPy 1.26 and 2.x), real-Blender tests in
#                    Blender 5.0 and 5.2 (all) and 4.2 LTS, 4.5 LTS (what differs between versions)
#   make extension   build and validate dist/unified_particles-<version>.zip
#   make docs        rewrite the generated blocks of README.md and docs/*.md from the code
#   make bench       run benchmarks/ and regenerate docs/performance.md
#   make docs-images re-render the pictures in docs/images/
# The environments are created on first use and reused after.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# Blender 5.2 ships as a Python 3.13 wheel. Found on PATH, through pyenv (PYENV_VERSION=3.13.x),
# or given as `make PYTHON313=/path/to/python3.13`.
ifndef PYTHON313
PYTHON313 := $(shell for c in "python3.13" "env PYENV_VERSION=3.13.0 python3.13" \
	"$$(pyenv root 2>/dev/null)/versions/3.13.0/bin/python3.13"; do \
	$$c -c 'import sys; assert sys.version_info[:2] == (3, 13); print(sys.executable)' 2>/dev/null && break; done)
endif

# One environment per Blender series users run (bpy from PyPI). .venv also holds the dev tools.
VENV := .venv
PY := $(VENV)/bin/python
BPY_VERSION := 5.0.1
VENV42 := .venv42
PY42 := $(VENV42)/bin/python
BPY42_VERSION := 4.2.23
VENV45 := .venv45
PY45 := $(VENV45)/bin/python
BPY45_VERSION := 4.5.15
VENV52 := .venv52
PY52 := $(VENV52)/bin/python
BPY52_VERSION := 5.2.3

TEST_REQUIREMENTS := pytest==9.2.0 hypothesis==6.170.15
DEV_REQUIREMENTS := $(TEST_REQUIREMENTS) ruff==0.17.6 mypy==2.4.1 \
	fake-bpy-module-5.0==20260730 pypbd==2.2.2 pysplishsplash==2.19.0 matplotlib==3.10.8

VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' blender_manifest.toml)
# STAGE and DIST may be set to build a second copy side by side (e.g. two test runs at once).
STAGE ?= build/stage
DIST ?= dist
ZIP := $(DIST)/unified_particles-$(VERSION).zip
SOURCES := $(shell find unified_particles -name '*.py') blender_manifest.toml LICENSE

EXT_TOOL = $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/bl_pkg/cli/blender_ext.py
EXT_TAGS = $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/modules/_bpy_internal/extensions/tags.py

.PHONY: all env env42 env45 env52 demo demo-video docs docs-images test test-serial lint typecheck test-core test-core52 test-core52-slow test-blender test-blender42 \
	test-blender45 test-blender52 test-farm extension bench clean

all: test

$(VENV)/.installed: Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet bpy==$(BPY_VERSION) $(DEV_REQUIREMENTS)
	touch $@

$(VENV42)/.installed: Makefile
	test -x $(PY42) || $(PYTHON) -m venv $(VENV42)
	$(PY42) -m pip install --quiet --upgrade pip
	$(PY42) -m pip install --quiet bpy==$(BPY42_VERSION) numpy==1.26.4 $(TEST_REQUIREMENTS)
	touch $@

$(VENV45)/.installed: Makefile
	test -x $(PY45) || $(PYTHON) -m venv $(VENV45)
	$(PY45) -m pip install --quiet --upgrade pip
	$(PY45) -m pip install --quiet bpy==$(BPY45_VERSION) numpy==1.26.4 $(TEST_REQUIREMENTS)
	touch $@

$(VENV52)/.installed: Makefile
	@test -x $(PY52) || test -n "$(PYTHON313)" || { echo "Blender $(BPY52_VERSION) needs Python 3.13, which was not found." \
	  "Install it (for example: pyenv install 3.13.0) or run: make PYTHON313=/path/to/python3.13"; exit 1; }
	test -x $(PY52) || $(PYTHON313) -m venv $(VENV52)
	$(PY52) -m pip install --quiet --upgrade pip
	$(PY52) -m pip install --quiet bpy==$(BPY52_VERSION) $(TEST_REQUIREMENTS)
	touch $@

env: $(VENV)/.installed
env42: $(VENV42)/.installed
env45: $(VENV45)/.installed
env52: $(VENV52)/.installed

# Stage the package with the top-level manifest and LICENSE, build with Blender's
# own extension builder, then validate the zip (tags checked against Blender's list).
$(ZIP): $(VENV)/.installed $(SOURCES)
	rm -rf $(STAGE) && mkdir -p $(STAGE) $(DIST)
	cp -r unified_particles $(STAGE)/unified_particles
	find $(STAGE) -name '__pycache__' -prune -exec rm -rf {} +
	cp blender_manifest.toml LICENSE $(STAGE)/unified_particles/
	rm -f $(ZIP)
	$(PY) $(EXT_TOOL) build --source-dir $(STAGE)/unified_particles --output-dir $(DIST)
	$(PY) $(EXT_TOOL) validate $(ZIP) --valid-tags=$(EXT_TAGS)

extension: $(ZIP)
	@echo "Built $(ZIP)"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check unified_particles tests benchmarks docs
	$(VENV)/bin/ruff format --check unified_particles tests benchmarks docs

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

# The core suite: every test on NumPy 2.x (Blender 5.2 bundles NumPy 2.5), split in two so the two halves
# run side by side; on NumPy 1.26 (Blender 4.x) the tests not marked `slow`. The slow ones are long
# scenarios (10 s stacks, poured piles, soft bodies, slings) that run the same array code as the fast
# ones on every module; the Blender 4.2 and 4.5 suites run the core on NumPy 1.26 too.
test-core: $(VENV)/.installed
	$(PY) -m pytest --durations=10 -m "not slow" tests/core


test-core52: $(VENV52)/.installed
	$(PY52) -m pytest --durations=10 -q -p no:cacheprovider -m "not slow" tests/core

test-core52-slow: $(VENV52)/.installed
	$(PY52) -m pytest --durations=10 -q -p no:cacheprovider -m slow tests/core

# Blender 5.2 runs every Blender test. Blender 4.2, 4.5 (the LTS versions) and 5.0 run the modules that exercise
# what differs between Blender versions, and the install -> bake -> replay-without-the-add-on path:
# installing the zip (test_install); every bake output, resume and the farm command (test_bake); keyframes
# read and written through Action.fcurves before 5.0, slotted actions from 4.4 (test_thrown,
# test_animated_pins); the Geometry Nodes groups (cloth result, grains, the liquid surface: Resolution Mode
# is a node property before 5.0; test_liquid_surface, test_deforming_colliders); Blender's force field
# settings (test_fields); save and reopen, and the cache folder's "//" flag from 4.5 on (test_workflow);
# the docs' tables from the registered add-on (test_docs); Blender's own physics settings, read by Convert
# Blender Physics (test_convert and the modules beside it); the Curves API of hair (test_hair); the rope's
# and the liquid look's Geometry Nodes (test_rope, test_liquid_look). The other modules (first-hour
# workflows, roles and limits, simulation, faults, duplicates, soft bodies, tearing, the comparisons with
# Bullet of test_real_scenes) drive the same add-on code through the same bpy calls on every version and
# run on 5.2 only, to keep `make test` near its budget on two cores. A new test module that exercises a
# version-dependent path belongs in this list.
BLENDER_LTS_TESTS := $(addprefix tests/blender/,test_install.py test_bake.py test_thrown.py \
	test_animated_pins.py test_liquid_surface.py test_deforming_colliders.py test_fields.py \
	test_workflow.py test_docs.py test_joints.py test_convert.py test_flat_colliders.py \
	test_field_meanings.py test_start_overlaps.py test_cloth_bending.py test_fluids.py \
	test_rope.py test_hair.py test_liquid_look.py)

test-blender: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) -m pytest --durations=10 $(BLENDER_LTS_TESTS)

test-blender42: $(ZIP) $(VENV42)/.installed
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY42) -m pytest --durations=10 $(BLENDER_LTS_TESTS)

test-blender45: $(ZIP) $(VENV45)/.installed
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY45) -m pytest --durations=10 $(BLENDER_LTS_TESTS)

test-blender52: $(ZIP) $(VENV52)/.installed
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY52) -m pytest --durations=10 tests/blender

# The Flamenco job type (docs/flamenco/) against a stub of Flamenco's job-compiler API, in Node.
test-farm:
	@command -v node >/dev/null || { echo "The farm job tests need Node.js 18 or newer (node on PATH)."; exit 1; }
	node --test tests/farm/

# The suites are independent and each keeps about one core busy, so `make test` runs two at a time (the
# machines this runs on have two cores; each suite's output is printed when it ends): 16 to 20 minutes of
# wall time for about 30 of CPU time on a fresh clone (README, *Tests and benchmarks*). `make test-serial`
# runs them one after another.
# Longest first, so the two-at-a-time schedule packs. Each suite prints its ten slowest tests (--durations),
# so a CI log tells where the budget goes.
TEST_SUITES := test-core52-slow test-blender52 test-core52 test-core test-blender test-blender42 \
	test-blender45 lint typecheck test-farm

# The environments and the extension are made first, two at a time, so that the suites then start together
# longest first (made on demand instead, Blender 5.2's suite started last and ran alone for minutes).
TEST_PREREQS := $(VENV)/.installed $(VENV52)/.installed $(VENV42)/.installed $(VENV45)/.installed $(ZIP)

test:
	$(MAKE) --no-print-directory --jobs=2 $(TEST_PREREQS)
	$(MAKE) --no-print-directory --jobs=2 --output-sync=target test-serial

test-serial: $(TEST_SUITES)

# A newcomer's first command: done in a few minutes, with progress. The HD video is demo-video.
demo: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_demo.py

demo-video: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_demo.py --hd

# The generated blocks of the docs (tables, module lists, figures from docs/performance.md and the code);
# tests/core/test_docs.py and tests/blender/test_docs.py fail when they are stale. Needs bpy (.venv).
docs: $(VENV)/.installed
	$(PY) docs/generate.py

# Pictures in docs/ are rendered by the project itself, so they can be regenerated when the solver changes.
docs-images: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_demo.py --hd --still-only --frames 96 --out build/docs-demo
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_cape.py --out build/docs-cape
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_gallery.py --out build/docs-gallery

bench: $(VENV)/.installed
	$(PY) -m benchmarks.run

clean:
	rm -rf build dist out .pytest_cache .mypy_cache .ruff_cache
