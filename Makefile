# Two commands do all the set-up: `make demo` and `make test` (both install into .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Every install takes the exact versions of constraints.txt (pyproject.toml only declares ranges), and a
# changed constraints.txt reinstalls.
CONSTRAINTS := constraints.txt
PIP_INSTALL := $(PY) -m pip install --quiet -c $(CONSTRAINTS)

.PHONY: demo test install install-test bench clean

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --upgrade pip
	$(PIP_INSTALL) -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.installed pyproject.toml $(CONSTRAINTS)
	$(PIP_INSTALL) -e '.[test]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.test-installed

demo: $(VENV)/.installed
	$(VENV)/bin/cuedrecall demo

test: $(VENV)/.test-installed
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
