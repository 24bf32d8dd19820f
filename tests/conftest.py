"""Shared fixtures: a Memory over a temporary database with the hash embedder and a pinned clock."""

from __future__ import annotations

import json
import os
import site
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.config import Settings
from cuedrecall.server.mcp import http_app
from cuedrecall.store.base import EPISODE, Scope
from cuedrecall.ui.app import running

NOW = "2025-11-01T12:00:00+00:00"
NO_BLOCKS = {"block_build_enabled": False, "block_retrieval_enabled": False}
NO_AUTO_CALIBRATION = {"calibrate_on_growth": False}
# The stage tests pin the four arms of the CPersona replica at its depth (the limit) and its rrf constant (60); the
# word arm, the episode and time context, the depth floor of 100 and k = 15 (the defaults) have their own tests
# (tests/contract/test_word_arm.py, tests/unit/recall/test_episode_context.py, test_time_context.py) and are on
# wherever a test asks for them.
REPLICA_ARMS = {
    "word_arm_enabled": False,
    "short_word_arm_enabled": False,
    "episode_context_enabled": False,
    "time_context_enabled": False,
    "lexical_coverage_enabled": False,
    "recall_depth_floor": 0,
    "rrf_k": 60,
}


def make_settings(**overrides: Any) -> Settings:
    """Settings from an empty environment (the developer's CPERSONA_* never leak in), hash embedder, and no
    block building, block arm or calibration on growth unless a test asks: a background build or calibration
    would make results depend on timing. The replica's arms only, unless a test turns the word arm on."""
    return Settings.from_env(
        {},
        **{
            "embedding_mode": "hash",
            **NO_BLOCKS,
            **NO_AUTO_CALIBRATION,
            **REPLICA_ARMS,
            **_test_backend(),
            **overrides,
        },
    )


# The backend the running test's settings point at: SQLite unless CUEDRECALL_TEST_BACKEND=postgres, and the
# contract tests' ``backend`` parameter sets it per module (tests/contract/conftest.py).
_BACKEND = {"postgres": os.environ.get("CUEDRECALL_TEST_BACKEND", "") == "postgres"}


def on_postgres() -> bool:
    """Whether the running test's stores are PostgreSQL schemas."""
    return _BACKEND["postgres"]


def use_backend(name: str) -> None:
    """Point the settings made from now on at ``name`` ("sqlite" or "postgres")."""
    _BACKEND["postgres"] = name == "postgres"


_TEST_SCHEMA: dict[str, str] = {}  # the running test's PostgreSQL URL, when the suite runs on PostgreSQL
_PATH_SCHEMAS: dict[str, str] = {}  # the running test's database paths -> the schema standing for each


def _test_backend() -> dict[str, Any]:
    """CUEDRECALL_TEST_BACKEND=postgres runs the tests that build their settings here against PostgreSQL: every
    store one test opens is the test's own schema of the session's private server (tests/pg_server.py), so a
    store reopened by path sees what was written; unset, the SQLite file."""
    if not on_postgres():
        return {}
    if "url" not in _TEST_SCHEMA:  # settings built outside a test (a module's fixture): a schema of their own
        from tests.pg_server import postgres_url

        return {"db_url": postgres_url()}
    return {"db_url": _TEST_SCHEMA["url"]}


@pytest.fixture(autouse=True)
def _postgres_schema_per_test() -> Iterator[None]:
    """One fresh PostgreSQL schema per test when the suite runs on PostgreSQL; nothing otherwise."""
    if not on_postgres():
        yield
        return
    from tests.pg_server import postgres_url

    _TEST_SCHEMA["url"] = postgres_url()
    try:
        yield
    finally:
        _TEST_SCHEMA.clear()
        _PATH_SCHEMAS.clear()


def apart_settings(**overrides: Any) -> Settings:
    """make_settings for a store apart from the test's others, as each ``Memory(":memory:")`` is on SQLite: on
    PostgreSQL a fresh schema of its own rather than the test's schema."""
    settings = make_settings(**overrides)
    if not on_postgres():
        return settings
    from tests.pg_server import postgres_url

    return replace(settings, db_url=postgres_url())


def open_memory(path: Path | str, **kwargs: Any) -> Memory:
    settings = _placed(path, kwargs.pop("settings", None) or make_settings())
    return Memory(path, settings=settings, clock=kwargs.pop("clock", fixed_clock(NOW)), **kwargs)


def _placed(path: Path | str, settings: Settings) -> Settings:
    """On PostgreSQL, one store per path as on files: the test's first path is the test's schema, each other path
    a fresh schema of its own (a property test's examples each open a new path, so each gets an empty store)."""
    if not on_postgres() or "url" not in _TEST_SCHEMA or settings.db_url != _TEST_SCHEMA["url"]:
        return settings
    from tests.pg_server import postgres_url

    key = str(path)
    if key not in _PATH_SCHEMAS:
        _PATH_SCHEMAS[key] = postgres_url() if _PATH_SCHEMAS else _TEST_SCHEMA["url"]
    return replace(settings, db_url=_PATH_SCHEMAS[key])


@contextmanager
def helpers_waited_for(store: Any) -> Iterator[list[str]]:
    """Inside: every ``store.beside`` waits until its helper thread has read (so the helper reads every time,
    not only when the recall's own thread is slow); yields the names of the threads that read."""
    beside, threads = store.beside, []

    def waited(work: Callable[[], Any]) -> Callable[[], Any]:
        done = threading.Event()

        def watched() -> Any:
            try:
                threads.append(threading.current_thread().name)
                return work()
            finally:
                done.set()

        pending = beside(watched)
        done.wait(10)
        return pending

    store.beside = waited
    try:
        yield threads
    finally:
        del store.beside


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "m.db"


@pytest.fixture
def memory(db_path: Path) -> Iterator[Memory]:
    with open_memory(db_path) as m:
        yield m


def snapshot(memory: Memory, agents: tuple[str, ...] = ()) -> str:
    """Everything a reader can see (every agent's memories and episodes, the named agents' profiles).

    Two equal snapshots mean nothing was written, updated or deleted in between.
    """
    state = {
        "memories": memory.list_memories(agent_id="", limit=500),
        "episodes": memory.list_episodes(agent_id="", limit=200),
        "profiles": {agent: memory.get_profile(agent_id=agent) for agent in agents},
    }
    return json.dumps(state, sort_keys=True)


def failed(result: dict[str, Any], argument: str) -> bool:
    """True when the result is an ok:false failure whose error names the argument."""
    return result.get("ok") is False and argument in str(result.get("error", ""))


def visible(row: Any, scope: Scope) -> bool:
    """The read semantics, written out independently of the store: ``row`` has agent_id,
    project_id, channel, kind and source_id (docs/recall-process.md#invariants: isolation is the search space)."""
    if row.agent_id != scope.agent_id:
        return False
    if scope.project_id is not None and row.project_id not in ({"", scope.project_id} if scope.project_id else {""}):
        return False
    if scope.channel and row.channel not in ("", scope.channel):
        return False
    if row.kind == EPISODE:
        return not scope.source_id or bool(scope.channel)
    if not scope.source_id:
        return True
    if scope.source_id[-1:].isalnum():  # ends in a letter or a digit: names one source, matched exactly
        return row.source_id == scope.source_id
    return row.source_id.startswith(scope.source_id)  # ends otherwise: a case-sensitive namespace prefix


@contextmanager
def serving(memory: Memory) -> Iterator[str]:
    """http_app(memory) under uvicorn on a free loopback port in a background thread; yields its base URL."""
    with running(http_app(memory), lifespan="on") as url:
        yield url


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A configured export folder, apart from the database's folder (tests/unit/test_export_confinement.py,
    tests/unit/test_file_hardening.py)."""
    path = tmp_path / "exchange"
    path.mkdir()
    return path


@pytest.fixture
def confined(tmp_path: Path, folder: Path) -> Iterator[Memory]:
    """A store in ``db/`` whose export folder is ``folder``, holding one memory of agent-a."""
    with open_memory(tmp_path / "db" / "m.db", settings=make_settings(export_dir=str(folder))) as memory:
        memory.store(agent_id="agent-a", message={"content": "what the database holds"})
        yield memory


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A permissive umask, so a private mode must come from the code, not the environment (the 0600 tests)."""
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def http_url(tmp_path: Path) -> Iterator[str]:
    """The HTTP app (bearer token ``t``) over a fresh store under uvicorn on loopback: its base URL."""
    with open_memory(tmp_path / "w.db", settings=make_settings(auth_token="t")) as memory, serving(memory) as url:
        yield url


def database_at(path: Path, version: int, memory_text: str, when: str) -> None:
    """A database left by an earlier version: the migrations up to ``version`` applied, one memory stored."""
    import sqlite3

    from cuedrecall.store.sqlite import schema

    conn = sqlite3.connect(path, isolation_level=None)
    schema.current_version(conn)
    for step, script in schema.MIGRATIONS[:version]:
        for statement in schema._statements(script):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version(version) VALUES (?)", (step,))
    conn.execute(
        "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', ?, ?, ?)",
        (memory_text, when, when),
    )
    conn.close()


# -- nothing outside the repository (issue 25) ---------------------------------------------------
#
# A clone must pass its tests alone: no test may read or write a file outside the repository, the
# temporary folder, the installed Python and packages, the system's own files (/proc, /sys, /dev, /etc;
# the fonts, time zones and libraries under /usr: matplotlib scans the fonts when it builds its font list)
# and the user's cache folder that libraries write to (~/.cache: matplotlib's font list). An audit hook
# records every other path the test process opens; the test that opened it fails, and anything opened
# outside a test (collection, a module's fixture) fails the session. Child processes are not watched.

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOCOMO_MINI = FIXTURES / "locomo_mini.json"  # LoCoMo's layout, text of our own (fixtures/make_locomo_mini.py)


def study_argv(tmp_path: Path, out: Path, *options: str, locomo: bool = True, long_span: str = "small") -> list[str]:
    """A benchmark study's smallest run: the LoCoMo fixture's first conversation (or, ``locomo=False``, no LoCoMo),
    the generated long-span history at ``long_span``, the hash embedder, ``options``, its databases under
    ``tmp_path/db`` and its report at ``out``."""
    argv = ["--locomo", str(LOCOMO_MINI), "--limit-conversations", "1"] if locomo else ["--locomo", "none"]
    argv += ["--long-span", long_span, "--embedders", "hash", *options]
    return [*argv, "--workdir", str(tmp_path / "db"), "--out", str(out)]


def _allowed_roots() -> tuple[str, ...]:
    """The folders a test may open files in, each ending in a separator, as written and as resolved."""
    candidates: list[str | Path] = [
        REPO_ROOT,
        tempfile.gettempdir(),
        "/tmp",
        "/var/tmp",
        "/proc",
        "/sys",
        "/dev",
        "/etc",
        "/usr/share",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/share",
        "/System/Library",
        "/Library/Fonts",
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *sysconfig.get_paths().values(),
        *getattr(site, "getsitepackages", list)(),
        site.getusersitepackages(),
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache",
    ]
    forms = (os.path.abspath(c) for c in candidates)
    roots = {form.rstrip(os.sep) + os.sep for c in forms for form in (c, os.path.realpath(c))}
    return tuple(sorted(roots))


_ALLOWED = _allowed_roots()
_OUTSIDE: list[str] = []  # paths opened outside _ALLOWED, in order
_SEEN = [0]  # how many of them a test or _LOOSE has taken
_LOOSE: list[str] = []  # those opened outside any test


def _outside(path: Any) -> str | None:
    """The path, absolute, when it lies outside every allowed folder; None otherwise (or not a path)."""
    if isinstance(path, int) or path is None:
        return None
    text = os.fsdecode(path)
    if text in ("", ":memory:") or text.startswith("file:"):  # SQLite's in-memory and URI forms
        return None
    absolute = os.path.abspath(text)
    if (absolute + os.sep).startswith(_ALLOWED) or (os.path.realpath(absolute) + os.sep).startswith(_ALLOWED):
        return None
    return absolute


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Record a file opened outside the allowed folders (``open``: builtins, io, os.open; ``sqlite3.connect``)."""
    if event != "open" and event != "sqlite3.connect":
        return
    try:
        found = _outside(args[0])
    except Exception:  # never let the audit break the open it watches
        return
    if found is not None:
        _OUTSIDE.append(found)


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _nothing_outside_the_repository() -> Iterator[None]:
    """Fail the test that opened a file outside the allowed folders, naming the file."""
    start = len(_OUTSIDE)
    _LOOSE.extend(_OUTSIDE[_SEEN[0] : start])
    yield
    end = len(_OUTSIDE)
    opened = list(dict.fromkeys(_OUTSIDE[start:end]))
    _SEEN[0] = end
    if opened:
        pytest.fail(f"opened outside the repository: {', '.join(opened)}", pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when a file outside the allowed folders was opened outside any test. Under pytest-xdist a
    worker hands its list to the controller (``workeroutput``), which fails the run."""
    loose = list(dict.fromkeys(_LOOSE + _OUTSIDE[_SEEN[0] :] + _WORKERS_LOOSE))
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller decides
        workeroutput["loose_opens"] = loose
        return
    if loose:
        print(f"\nopened outside the repository, outside any test: {', '.join(loose)}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_WORKERS_LOOSE: list[str] = []  # what xdist workers opened outside any test (the controller's list)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """An xdist worker finished: keep what it opened outside any test, for the controller's sessionfinish."""
    _WORKERS_LOOSE.extend(getattr(node, "workeroutput", {}).get("loose_opens", []))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark what runs under tests/system/ slow (several processes, kills, load, a browser); leave out the
    PostgreSQL run of a contract test that checks what only a SQLite file has (``sqlite_only``) or whose module
    chooses its backends itself (``BACKENDS``)."""
    system = REPO_ROOT / "tests" / "system"
    kept, dropped = [], []
    for item in items:
        if system in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.slow)
        callspec = getattr(item, "callspec", None)
        on_pg = callspec is not None and callspec.params.get("backend") == "postgres"
        chooses = item.get_closest_marker("sqlite_only") is not None or hasattr(
            getattr(item, "module", None), "BACKENDS"
        )
        (dropped if on_pg and chooses else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
