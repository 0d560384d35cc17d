# The two commands of the README. Both create .venv and install onsale first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench bench-smoke clean

demo: $(VENV)/.installed
	$(BIN)/onsale dev

test: $(VENV)/.installed lint
	$(BIN)/pytest

# mypy and import-linter do not follow the editable install's import hook, so they read
# the package as the wheel lays it out (pyproject.toml's package-dir): .typecheck/onsale,
# real folders with the source files hard-linked in, rebuilt on every run.
TIERS := core edge seatmap web psp

lint: $(VENV)/.installed
	$(BIN)/ruff check onsale $(TIERS) tests bench e2e
	@rm -rf .typecheck && mkdir -p .typecheck
	@for src in onsale $(TIERS:%=onsale/%); do dst=.typecheck/$$src; [ $$src = onsale ] || src=$${src#onsale/}; \
	  cp -al $$src $$dst 2>/dev/null || cp -a $$src $$dst; done
	$(BIN)/mypy
	cd .typecheck && ../$(BIN)/lint-imports ../pyproject.toml

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

clean:
	rm -rf $(VENV) .onsale .pytest_cache .mypy_cache .ruff_cache
