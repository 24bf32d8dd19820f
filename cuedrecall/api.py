"""``Memory``: the tools as a Python object. The MCP server, the CLI, benchmarks and tests all come through here.

Every tool takes a dict of JSON arguments and returns a JSON-ready dict. A bad
argument is answered ``{"ok": false, "error": ...}`` naming it, and nothing is
written. ``Memory`` validates, dispatches and shapes failures; the handlers in
``handlers/`` do the work, each given the runtime, never this object.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cuedrecall.clock import Clock, system_clock
from cuedrecall.config import Settings
from cuedrecall.embed import Embedder, QueryVectorCache
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers import calibrate, portability, read, write
from cuedrecall.handlers.recall import run_recall
from cuedrecall.recall.calibration import Calibration
from cuedrecall.runtime import Runtime, open_runtime
from cuedrecall.store.base import Scope, Store
from cuedrecall.tools import TOOLS

# Failures still carry the collection key the tool documents, so a caller can always read it.
_EMPTY_ON_FAILURE: dict[str, dict[str, Any]] = {
    "recall": {"messages": []},
    "get_contents": {"items": []},
    "list_memories": {"memories": [], "count": 0},
    "list_episodes": {"episodes": [], "count": 0},
    "archive_episode": {"episode_id": None},
    "store": {"result": "rejected"},
}

# tool name -> handler(runtime, **validated arguments)
HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {
    "store": write.store,
    "archive_episode": write.archive_episode,
    "update_memory": write.update_memory,
    "delete_memory": write.delete_memory,
    "delete_episode": write.delete_episode,
    "update_profile": write.update_profile,
    "recall": run_recall,
    "get_contents": read.get_contents,
    "list_memories": read.list_memories,
    "list_episodes": read.list_episodes,
    "get_profile": read.get_profile,
    "calibrate_threshold": calibrate.calibrate_threshold,
    "set_recall_precision": calibrate.set_recall_precision,
    "get_recall_precision": calibrate.get_recall_precision,
    "export_memories": portability.export_jsonl,
    "import_memories": portability.import_jsonl,
}


class Memory:
    """A memory server over one database: ``Memory(path)`` then ``memory.store(...)``, ``memory.recall(...)``."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Clock = system_clock,
    ) -> None:
        settings = settings or Settings.from_env()
        if path is not None:
            settings = replace(settings, db_path=str(path))
        self.runtime: Runtime = open_runtime(settings, embedder, clock)
        rt = self.runtime
        calibrate.adopt_sidecar(rt)
        if rt.calibration.stale and settings.calibrate_on_model_change and rt.embedder.available:
            calibrate.recalibrate_stale(rt)

    # The runtime's parts, for benchmarks and tests that reach below the tools.
    settings: Settings = property(lambda self: self.runtime.settings)  # type: ignore[assignment]
    store_: Store = property(lambda self: self.runtime.store)  # type: ignore[assignment]
    queries: QueryVectorCache = property(lambda self: self.runtime.queries)  # type: ignore[assignment]
    calibration: Calibration = property(lambda self: self.runtime.calibration)  # type: ignore[assignment]

    @property
    def embedder(self) -> Embedder:
        return self.runtime.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        """Swap the embedder (tests of a failing one); stored vectors and calibration stay as they are."""
        self.runtime = replace(self.runtime, embedder=embedder)

    @property
    def clock(self) -> Clock:
        return self.runtime.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        """A replay moves time on between calls (benchmarks); the store and caches stay as they are."""
        self.runtime = replace(self.runtime, clock=clock)

    def close(self) -> None:
        self.runtime.store.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dispatch ----------------------------------------------------------------------

    def call(self, tool: str, arguments: Any = None, **library: Any) -> dict[str, Any]:
        """Run one tool by name with JSON arguments; bad input becomes ok:false, never an exception.

        ``library`` passes what only a Python caller can give (a progress callback) to the handler as is.
        """
        spec = TOOLS.get(tool)
        if spec is None:
            return {"ok": False, "error": f"unknown tool {tool!r} (tools: {', '.join(TOOLS)})"}
        try:
            return HANDLERS[tool](self.runtime, **spec.bind(arguments), **library)
        except ToolArgumentError as exc:
            return {"ok": False, "error": str(exc), **_EMPTY_ON_FAILURE.get(tool, {})}

    def store(self, **arguments: Any) -> dict[str, Any]:
        return self.call("store", arguments)

    def recall(self, **arguments: Any) -> dict[str, Any]:
        return self.call("recall", arguments)

    def get_contents(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_contents", arguments)

    def archive_episode(self, **arguments: Any) -> dict[str, Any]:
        return self.call("archive_episode", arguments)

    def update_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("update_memory", arguments)

    def delete_memory(self, **arguments: Any) -> dict[str, Any]:
        return self.call("delete_memory", arguments)

    def delete_episode(self, **arguments: Any) -> dict[str, Any]:
        return self.call("delete_episode", arguments)

    def list_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("list_memories", arguments)

    def list_episodes(self, **arguments: Any) -> dict[str, Any]:
        return self.call("list_episodes", arguments)

    def get_profile(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_profile", arguments)

    def update_profile(self, **arguments: Any) -> dict[str, Any]:
        return self.call("update_profile", arguments)

    def calibrate_threshold(self, **arguments: Any) -> dict[str, Any]:
        return self.call("calibrate_threshold", arguments)

    def set_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self.call("set_recall_precision", arguments)

    def get_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self.call("get_recall_precision", arguments)

    def export_memories(self, **arguments: Any) -> dict[str, Any]:
        return self.call("export_memories", arguments)

    def import_memories(self, progress: Callable[[int], None] | None = None, **arguments: Any) -> dict[str, Any]:
        """Import a file; ``progress`` (not a tool argument) is told how many records each step read."""
        return self.call("import_memories", arguments, progress=progress)

    # -- helpers for callers below the tools ----------------------------------------------

    def now_iso(self) -> str:
        return self.runtime.now_iso()

    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        return self.runtime.embed(texts)

    def scope(self, agent_id: str, project_id: str | None, channel: str, source_id: str) -> Scope:
        return Scope(agent_id, project_id, channel, source_id)
