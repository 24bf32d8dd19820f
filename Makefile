# Two commands do all the set-up: `make demo` and `make test` (both install into .venv first).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Every install takes the exact versions of constraints.txt (pyproject.toml only declares ranges), and a
# changed constraints.txt reinstalls.
CONSTRAINTS := constraints.txt
PIP_INSTALL := $(PY) -m pip install --quiet -c $(CONSTRAINTS)

.PHONY: demo test test-fast lint install install-test bench clean browser

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

# The browser tests drive the system Chromium (Debian's chromium package); a root session installs it when
# missing. Where it cannot be had, those tests fail and say why.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "make: chromium could not be installed: the browser tests will fail"; \
	  else \
	    echo "make: /usr/bin/chromium is missing (apt-get install -y chromium, as root): the browser tests will fail"; \
	  fi; \
	fi

# Lint, format and types: ruff over the whole repository, mypy over the package (configuration in pyproject.toml).
lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Everything: unit tests (tests/unit/, mirroring the package), the contract tests once per backend (tests/contract/:
# SQLite, then PostgreSQL from PyPI's pgserver, started by the tests), the system tests (tests/system/: several
# processes, kills, load, the browser) and the benchmarks' own tests (tests/benchmarks/).
# The tests that run in one process are spread over the cores (pytest-xdist); the system tests, which start
# processes and time them, run after them one at a time.
test: $(VENV)/.test-installed browser
	$(PY) -m pytest -n auto --durations=30 -m "not slow"
	$(PY) -m pytest --durations=10 -m slow

# The inner loop: the unit tests on SQLite, spread over the cores (pytest-xdist), without the slow system tests or
# the PostgreSQL server.
test-fast: $(VENV)/.test-installed
	$(PY) -m pytest -n auto -m "not slow and not postgres" tests/unit

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
