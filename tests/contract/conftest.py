"""The contract tests: every test here runs once per backend, the backend a module-scoped parameter (SQLite, then
PostgreSQL: a private server from PyPI's pgserver, a fresh schema per test). The same assertions over both
stores; ``sqlite_only`` marks the few that check what only a SQLite file has."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import on_postgres, use_backend


@pytest.fixture(scope="module", autouse=True, params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The backend this module's tests run on; the settings tests/conftest.py makes point at it."""
    before = "postgres" if on_postgres() else "sqlite"
    use_backend(request.param)
    try:
        yield request.param
    finally:
        use_backend(before)
