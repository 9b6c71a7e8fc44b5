# SkillCDG Workbench. Two commands for a fresh machine: `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PRODUCT_STAMP := $(VENV)/.product
GRAPHRAG_STAMP := $(VENV)/.graphrag
PORT   ?= 8501
DOCS_PORT ?= 8000
# This machine kind keeps the CPU build of torch in /opt/wheels; say so even where PIP_FIND_LINKS
# is not set, so pip never reaches for a multi-GB CUDA build.
PIP_FIND := $(if $(wildcard /opt/wheels),--find-links /opt/wheels,)

.PHONY: install install-product install-graphrag chromium postgres demo test test-fast lint bench clean-db \
        docs docs-serve docs-screenshots

# Everything: the product, the research lab (torch, training, baselines) and the test tools.
install: $(STAMP) $(GRAPHRAG_STAMP)

# The product alone (no torch): what `make demo` needs.
install-product: $(PRODUCT_STAMP)

# Reinstall whenever the dependency declaration or the lock changes.
$(STAMP): pyproject.toml requirements.lock
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PIP_FIND) -c requirements.lock -e '.[lab,dev]'
	touch $(STAMP) $(PRODUCT_STAMP)

$(PRODUCT_STAMP): pyproject.toml requirements.lock
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(PIP_FIND) -c requirements.lock -e .
	touch $(PRODUCT_STAMP)

# Microsoft GraphRAG for the graphrag baseline: it pins litellm, pyarrow and asttokens apart
# from our lock, so pip cannot resolve it with the lock; its other dependencies are pinned in
# requirements-graphrag.txt and installed without resolution over the lock (measured here:
# 57 wheels, 549 MB, 15 s with pip's cache off). The rest of the workbench runs without it.
install-graphrag: $(GRAPHRAG_STAMP)

$(GRAPHRAG_STAMP): $(STAMP) requirements-graphrag.txt
	$(PY) -m pip install -q $(PIP_FIND) --no-deps -r requirements-graphrag.txt
	touch $(GRAPHRAG_STAMP)

# Debian's Chromium for the browser tests (Playwright cannot download its own here).
chromium:
	@test -x /usr/bin/chromium || { \
	  echo "installing Debian chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# The demo workspace: three SKILLs with CDGs, 21 audit cases and the embedded judge's traces.
# The training runs of fixtures/training show on the Studies page, which exists only where
# the research lab is installed (make install); the product alone has no Studies page.
# `exec`: the last line's shell becomes `workbench ui`, so the SIGTERM that make passes to its
# child when make is killed reaches the command, which stops the server (issue 56 item 4).
demo: install-product
	$(VENV)/bin/workbench import fixtures/demo/index.json --author demo
	$(VENV)/bin/workbench import-cases fixtures/demo/cases.jsonl --dataset demo
	for f in fixtures/demo/traces_*.jsonl; do \
	  [ -f "$$f" ] && $(VENV)/bin/workbench import-traces "$$f" --dataset demo \
	    --run-id "demo-$$(basename $$f .jsonl | sed 's/traces_//')"; done; true
	$(VENV)/bin/workbench calibrate --from-setting fixtures/demo/decision_setting.json \
	  --save dataset:demo --note "make demo: a probe learned on CompliBench airlines" >/dev/null
	# The rule and words behind each violation the probe decides over the judge's "compliant"
	# (Find the rule), replayed from the embedded judge's recorded answers: no model runs.
	WORKBENCH_LLM_MODE=replay WORKBENCH_LLM_RECORDINGS=fixtures/recordings/demo_explain.jsonl \
	  $(VENV)/bin/workbench verdicts --dataset demo --explain --no-cache >/dev/null
	WORKBENCH_TRAIN_RUNS=$${WORKBENCH_TRAIN_RUNS:-fixtures/training} exec $(VENV)/bin/workbench ui --port $(PORT)

# Debian's PostgreSQL server binaries: the store tests also run against a throw-away cluster
# that the test session starts in a temp folder (tests/pg_cluster.py).
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
	  echo "installing Debian postgresql for the store tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql; \
	  pg_ctlcluster --force "$$(ls /usr/lib/postgresql | sort -V | tail -1)" main stop 2>/dev/null || true; }

test: install chromium postgres
	$(PY) -m pytest

test-fast: install
	$(PY) -m pytest -m "not e2e and not model"

lint: install
	$(VENV)/bin/ruff check .

bench: install
	$(PY) bench/closure.py

# The documentation site (issue 55): MkDocs with the Material theme from docs/, its reference pages
# (CLI, settings, API, glossary) generated from the code by docs/_hooks/reference.py. --strict: a
# broken link, a page left out of the nav or any other warning fails the build. Needs the full
# install, so the CLI reference describes the lab's commands too. Offline: no font, script or
# analytics is fetched (mkdocs.yml). NO_MKDOCS_2_WARNING: Material prints a banner about its
# successor on every build; it is not a warning about this site, which has none.
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

# The pictures in docs/screenshots/, retaken from the browser tests' own run (the tests that
# write a screenshot when WORKBENCH_SCREENSHOTS is set) and the Graph legibility bench, which
# drives the same server harness (tests/e2e/conftest.py). Chromium and the demo workspace.
SCREENSHOT_TESTS = $(shell grep -l WORKBENCH_SCREENSHOTS tests/e2e/test_*.py)
docs-screenshots: install chromium
	WORKBENCH_SCREENSHOTS=1 $(PY) -m pytest -q -p no:cacheprovider -m e2e $(SCREENSHOT_TESTS)
	$(PY) bench/graph_legibility.py
