# Two entry points, each doing its own set-up on a fresh machine:
#   make report   -- the main job: the full report on the shipped meshes and scenes
#   make test     -- the test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: report report-quick test bench setup system-deps clean

$(STAMP): pyproject.toml
	bash scripts/install-system-deps.sh
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,compare]'
	touch $(STAMP)

setup: $(STAMP)

report: $(STAMP)
	$(VENV)/bin/meshopt-batch report --out report

report-quick: $(STAMP)
	$(VENV)/bin/meshopt-batch report --scope quick --out report

test: $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not slow"

test-all: $(STAMP)
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	for f in benchmarks/bench_*.py; do $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) report .pytest_cache
