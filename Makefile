# Unified Particles: every task of the project from a fresh clone.
#   make demo        build, install and run the showcase scene (bake + render into out/)
#   make test        lint, type check, core tests, real-Blender tests (5.0 and 4.2 LTS)
#   make extension   build and validate dist/unified_particles-<version>.zip
#   make bench       run benchmarks/ and regenerate docs/performance.md
#   make docs-images re-render the pictures in docs/images/
# The environments are created on first use and reused after.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
BPY_VERSION := 5.0.1
# Blender 4.2 LTS, the oldest series the manifest promises, in a second environment.
VENV42 := .venv42
PY42 := $(VENV42)/bin/python
BPY42_VERSION := 4.2.23

DEV_REQUIREMENTS := pytest==9.2.0 hypothesis==6.170.15 ruff==0.17.6 mypy==2.4.1 \
	fake-bpy-module-5.0==20260730 pypbd==2.2.2 matplotlib==3.10.8

VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' blender_manifest.toml)
ZIP := dist/unified_particles-$(VERSION).zip
SOURCES := $(shell find unified_particles -name '*.py') blender_manifest.toml LICENSE

EXT_TOOL = $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/addons_core/bl_pkg/cli/blender_ext.py
EXT_TAGS = $(VENV)/lib/python3.11/site-packages/bpy/5.0/scripts/modules/_bpy_internal/extensions/tags.py

.PHONY: all env env42 demo docs-images test lint typecheck test-core test-blender test-blender42 extension bench clean

all: test

$(VENV)/.installed: Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet bpy==$(BPY_VERSION) $(DEV_REQUIREMENTS)
	touch $@

$(VENV42)/.installed: Makefile
	test -x $(PY42) || $(PYTHON) -m venv $(VENV42)
	$(PY42) -m pip install --quiet --upgrade pip
	$(PY42) -m pip install --quiet bpy==$(BPY42_VERSION) numpy==1.26.4 pytest==9.2.0 hypothesis==6.170.15
	touch $@

env: $(VENV)/.installed
env42: $(VENV42)/.installed

# Stage the package with the top-level manifest and LICENSE, build with Blender's
# own extension builder, then validate the zip (tags checked against Blender's list).
$(ZIP): $(VENV)/.installed $(SOURCES)
	rm -rf build/stage && mkdir -p build/stage dist
	cp -r unified_particles build/stage/unified_particles
	find build/stage -name '__pycache__' -prune -exec rm -rf {} +
	cp blender_manifest.toml LICENSE build/stage/unified_particles/
	rm -f $(ZIP)
	$(PY) $(EXT_TOOL) build --source-dir build/stage/unified_particles --output-dir dist
	$(PY) $(EXT_TOOL) validate $(ZIP) --valid-tags=$(EXT_TAGS)

extension: $(ZIP)
	@echo "Built $(ZIP)"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check unified_particles tests benchmarks docs
	$(VENV)/bin/ruff format --check unified_particles tests benchmarks docs

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

test-core: $(VENV)/.installed
	$(PY) -m pytest tests/core

test-blender: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) -m pytest tests/blender

test-blender42: $(ZIP) $(VENV42)/.installed
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY42) -m pytest tests/blender

test: lint typecheck test-core test-blender test-blender42

demo: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_demo.py

# Pictures in docs/ are rendered by the project itself, so they can be regenerated when the solver changes.
docs-images: $(ZIP)
	UP_EXTENSION_ZIP=$(abspath $(ZIP)) $(PY) docs/demo/make_demo.py --still-only --out build/docs-demo

bench: $(VENV)/.installed
	$(PY) -m benchmarks.run

clean:
	rm -rf build dist out .pytest_cache .mypy_cache .ruff_cache
