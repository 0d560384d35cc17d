# The two commands of the README. Both create .venv and install onsale first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean

demo: $(VENV)/.installed
	$(BIN)/onsale dev

test: $(VENV)/.installed lint
	$(BIN)/pytest

lint: $(VENV)/.installed
	$(BIN)/ruff check core edge seatmap web onsale psp tests bench e2e
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/python bench/holds.py

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("onsale needs Python >= 3.11, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

clean:
	rm -rf $(VENV) .onsale .pytest_cache .mypy_cache .ruff_cache
