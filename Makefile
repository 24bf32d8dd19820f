# Two commands do all the set-up: `make demo` and `make test` (both install into .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test install install-test bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.test-installed

demo: $(VENV)/.installed
	$(VENV)/bin/cuedrecall demo

test: $(VENV)/.test-installed
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
