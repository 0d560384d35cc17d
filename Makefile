# The two commands of the README. Both create .venv and install onsale first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test ha lint lint-js test-js bench bench-smoke clean

demo: $(VENV)/.installed
	$(BIN)/onsale dev

# The unit and integration tests, then the browser suite as QA runs it against staging:
# against a separately started onsale, by its URL (scripts/e2e_remote.py, docs/qa.md).
test: $(VENV)/.installed $(VENV)/ha/.installed lint test-js
	$(BIN)/pytest tests
	$(BIN)/python scripts/e2e_remote.py

# mypy and import-linter do not follow the editable install's import hook, so they read
# the package as the wheel lays it out (pyproject.toml's package-dir): .typecheck/onsale,
# real folders with the source files hard-linked in, rebuilt on every run.
TIERS := core edge seatmap web psp

lint: $(VENV)/.installed lint-js
	$(BIN)/ruff check onsale $(TIERS) tests bench e2e scripts
	@rm -rf .typecheck && mkdir -p .typecheck
	@for src in onsale $(TIERS:%=onsale/%); do dst=.typecheck/$$src; [ $$src = onsale ] || src=$${src#onsale/}; \
	  cp -al $$src $$dst 2>/dev/null || cp -a $$src $$dst; done
	$(BIN)/mypy
	cd .typecheck && ../$(BIN)/lint-imports ../pyproject.toml

# The browser modules (web/static/js): ESLint (eslint.config.js) and tsc over their JSDoc
# types (jsconfig.json), from node_modules only (npx --no-install never downloads);
# their unit tests run under Node's own runner (tests/js). docs/design.md, "Browser code".
JS_TESTS := $(wildcard tests/js/*.test.js)

lint-js: node_modules/.installed
	npx --no-install eslint --max-warnings 0 .
	npx --no-install tsc --project jsconfig.json

test-js: node_modules/.installed
	@test -n "$(JS_TESTS)" || { echo "make: no tests/js/*.test.js" >&2; exit 1; }
	node --test --test-reporter=spec $(JS_TESTS)

# Node.js >= 18.18 and npm (Debian: apt-get install -y nodejs npm); the exact tools of
# package-lock.json, reinstalled when it changes.
node_modules/.installed: package.json package-lock.json
	@command -v node >/dev/null || { echo "make: node not found: onsale's browser code needs Node.js >= 18.18 and npm (apt-get install -y nodejs npm)" >&2; exit 1; }
	@command -v npm >/dev/null || { echo "make: npm not found: onsale's browser code needs Node.js >= 18.18 and npm (apt-get install -y nodejs npm)" >&2; exit 1; }
	@node -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a < 18 || (a === 18 && b < 18)) { console.error("make: the browser code needs Node.js >= 18.18, found " + process.version); process.exit(1); }'
	npm ci --no-audit --no-fund
	touch $@

# Figures: docs/benchmarks.md (each bench starts its own throwaway stack).
bench: $(VENV)/.installed
	$(BIN)/python bench/holds.py

# Every bench in bench/ for a few seconds: fails if one cannot run, prints no figure or
# its audit finds a violation; never on a time or a rate (bench/smoke.py).
bench-smoke: $(VENV)/.installed
	$(BIN)/python bench/smoke.py

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("onsale needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

# Patroni for the failover tests and `onsale dev --ha` (onsale/patroni.py): its own
# environment from the system Python, which the unprivileged user that runs PostgreSQL
# (and so Patroni) can execute; a Python under a mode-700 home could not be.
HA_PYTHON ?= /usr/bin/python3

ha: $(VENV)/ha/.installed

$(VENV)/ha/.installed: requirements-ha.txt | $(VENV)/.installed
	@test -x $(HA_PYTHON) || { echo "make: $(HA_PYTHON) not found: Patroni needs a system Python 3 (apt-get install -y python3 python3-venv)" >&2; exit 1; }
	$(HA_PYTHON) -m venv $(VENV)/ha
	$(VENV)/ha/bin/pip install --quiet -r requirements-ha.txt
	touch $@

clean:
	rm -rf $(VENV) .onsale .pytest_cache .mypy_cache .ruff_cache node_modules
