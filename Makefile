# Two entry points, each doing its own set-up on a fresh machine:
#   make report   -- the main job: the full report on the shipped meshes and scenes
#   make test     -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Node tools for the glTF tests and benchmarks, pinned, installed into a project-local folder
# (git-ignored) when npm is present; tests skip without them: the Khronos validator, gltfpack,
# glTF-Transform (the independent reader of compressed outputs, and its CLI's meshopt and draco
# commands) with meshoptimizer's and Draco's decoders, and three.js (its GLTFLoader's Draco
# decoding path, run under node by tests/three_geometry.js). The stamp names the list, so a
# changed list installs again.
NPM_TOOLS := .npm-tools
NPM_PACKAGES := gltf-validator@2.0.0-dev.3.10 gltfpack@1.3.0 @gltf-transform/core@4.5.1 \
	@gltf-transform/extensions@4.5.1 @gltf-transform/cli@4.5.1 meshoptimizer@1.3.0 draco3dgltf@1.5.7 \
	three@0.187.0
NPM_STAMP := $(NPM_TOOLS)/.installed-$(shell echo '$(NPM_PACKAGES)' | cksum | cut -d' ' -f1)
# The project's own packages, byte-compiled before a command runs (what pip does for an installed
# wheel): where PYTHONDONTWRITEBYTECODE is set, an editable install would otherwise compile every
# module from source in every process. Incremental: only changed sources are compiled again.
PACKAGES := meshopt_batch meshopt_batch_app gpu_probe pipeline_model meshes
BYTECODE = $(PY) -m compileall -q -j 0 $(PACKAGES) >/dev/null

.PHONY: report report-quick test bench setup system-deps clean wheel docs

$(STAMP): pyproject.toml
	bash scripts/install-system-deps.sh
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,compare]'
	# the numba kernels the commands use, compiled into meshopt_batch/_kernels (minutes, once) for
	# this machine's CPU: this tree runs where it was set up (a wheel's build compiles for any CPU)
	$(PY) -m meshopt_batch_app.warm_kernels --host
	touch $(STAMP)

$(NPM_STAMP):
	@mkdir -p $(NPM_TOOLS)
	@if command -v npm >/dev/null 2>&1; then \
	  timeout 300 npm install --no-save --no-package-lock --no-audit --no-fund --fetch-retries=1 \
	    --prefix $(NPM_TOOLS) $(NPM_PACKAGES) >$(NPM_TOOLS)/install.log 2>&1 \
	  || echo "warning: npm install of $(NPM_PACKAGES) failed (see $(NPM_TOOLS)/install.log); the glTF validator and compressed-delivery tests will be skipped"; \
	else echo "note: npm not found: the glTF validator and compressed-delivery tests and the gltfpack benchmark columns will be skipped"; fi
	@touch $(NPM_STAMP)

setup: $(STAMP) $(NPM_STAMP)

report: $(STAMP) $(NPM_STAMP)
	$(BYTECODE)
	$(VENV)/bin/meshopt-batch report --out report

report-quick: $(STAMP) $(NPM_STAMP)
	$(BYTECODE)
	$(VENV)/bin/meshopt-batch report --scope quick --out report

test: $(STAMP) $(NPM_STAMP)
	$(BYTECODE)
	$(PY) -m pytest -q -n 2 -m "not slow" --durations=15

test-all: $(STAMP)
	$(BYTECODE)
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(BYTECODE)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

# The documentation site (mkdocs, pages generated at build time), into site/; a warning fails the build.
DOCS_STAMP := $(VENV)/.installed-docs
$(DOCS_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(VENV)/bin/mkdocs build --strict --site-dir site

# A wheel with the numba kernels compiled in (build_support/kernel_build.py), into dist/.
wheel: $(STAMP)
	$(PY) -m pip wheel -q --no-deps -w dist .

clean:
	rm -rf $(VENV) report site .pytest_cache
