"""``Memory``: the tools as a Python object. The MCP server, the CLI, benchmarks and tests all come through here.

Every tool takes a dict of JSON arguments and returns a JSON-ready dict. A bad
argument is answered ``{"ok": false, "error": ...}`` naming it, and nothing is
written. ``Memory`` validates, dispatches and shapes failures; the handlers in
``handlers/`` do the work, each given the runtime, never this object.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

# the declarations before the handlers: tools/ imports the handlers it names, and a handler imports
# tools.bounds, so a handler imported first would meet its own declaration half made
from cuedrecall.tools import TOOLS, Tool

# isort: split
from cuedrecall.access import LOCAL, WRITE, Principal, denied
from cuedrecall.clock import Clock, system_clock
from cuedrecall.config import Settings
from cuedrecall.embed import Embedder, QueryVectorCache
from cuedrecall.errors import ToolArgumentError, describe_storage_error
from cuedrecall.handlers import (
    associations,
    browse,
    calibrate,
    channel_axis,
    health,
    merge,
    operating_context,
    portability,
    read,
    recall,
    reconstruct,
    reembed,
    session,
    update_check,
    write,
)
from cuedrecall.handlers.blocks import BlockBuilder, building
from cuedrecall.handlers.session import paused_answer
from cuedrecall.recall.calibration import Calibration
from cuedrecall.runtime import Runtime, open_runtime
from cuedrecall.sessions import SessionKey
from cuedrecall.store.base import Scope, Store
from cuedrecall.tools.bounds import shown

log = logging.getLogger("cuedrecall")
ERROR_MAX = 2000  # characters of an error message: whatever a handler quoted, a huge value is never echoed back
Handler = Callable[..., dict[str, Any]]
_TOOL_OF: dict[Handler, str] = {tool.handler: name for name, tool in TOOLS.items()}  # Memory's tool methods' names


class Memory:
    """A memory server over one database: ``Memory(path)`` then ``memory.store(...)``, ``memory.recall(...)``."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        settings: Settings | None = None,
        embedder: Embedder | None = None,
        clock: Clock = system_clock,
        background: bool = True,
        read_only: bool = False,
    ) -> None:
        """``background=False`` starts no block-builder thread and queues no backfill: the queue waits for
        ``blocks.drain()`` or for a server (one-shot commands, tests). Rows whose vectors another model made queue
        their re-embedding either way (``handlers.reembed``). ``read_only`` (the read-only explorer) writes
        nothing at all: no re-embedding or calibration queued, no sidecar adopted, no queue runner, every write
        tool refused and the store's write transaction closed to it."""
        settings = settings or Settings.from_env()
        if path is not None:
            settings = replace(settings, db_path=str(path))
        self.runtime: Runtime = open_runtime(settings, embedder, clock)
        self.read_only = read_only
        self.blocks: BlockBuilder | None = None
        if read_only:
            self.runtime.store.read_only = True
            return
        rt = self.runtime
        calibrate.adopt_sidecar(rt)
        growing = calibrate.calibrating_on_growth(rt)
        # rows of another model's vectors are re-embedded in the background; its last step recalibrates
        reembedding = reembed.start(rt)
        if rt.calibration.stale and settings.calibrate_on_model_change and rt.embedder.available and not reembedding:
            if growing:
                calibrate.queue_stale(rt)  # measured in the background, by the queue's runner
            else:
                calibrate.recalibrate_stale(rt)
        # the queue's runner (blocks, calibrations) while either is on: a daemon thread (and the backfill queued),
        # unless the caller runs the queue itself (blocks.drain()) or leaves it to a server
        if building(rt) or growing or reembedding:
            self.blocks = BlockBuilder(lambda: self.runtime)
            if background:
                self.blocks.start()

    # The runtime's parts, for benchmarks and tests that reach below the tools.
    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def store_(self) -> Store:
        return self.runtime.store

    @property
    def queries(self) -> QueryVectorCache:
        return self.runtime.queries

    @property
    def calibration(self) -> Calibration:
        return self.runtime.calibration

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
        if self.blocks is not None:
            self.blocks.stop()  # after its current step; a task it leaves claimed is taken again later
        self.runtime.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dispatch ----------------------------------------------------------------------

    def call(self, tool: str, arguments: Any = None, *, principal: Principal = LOCAL, **library: Any) -> dict[str, Any]:
        """Run one tool by name with JSON arguments, as ``principal``; never raises.

        Bad input, a missing grant or a failure inside becomes ``ok: false`` naming what
        was wrong, with the collection keys the tool documents. ``library`` passes what
        only a Python caller can give (a progress callback) to the handler as is.
        """
        spec = TOOLS.get(tool) if isinstance(tool, str) else None
        if spec is None:
            return {"ok": False, "error": f"unknown tool {shown(tool, 80)} (tools: {', '.join(TOOLS)})"}
        try:
            answer = self._dispatch(spec, arguments, principal, library)
        except ToolArgumentError as exc:
            answer = _refused(spec, str(exc))
        except Exception as exc:  # nothing a caller sends may crash the server; the log keeps the detail
            answer = _failed(spec, exc)
        return _echo_capped(answer)

    def _dispatch(self, spec: Tool, arguments: Any, principal: Principal, library: dict[str, Any]) -> dict[str, Any]:
        """Bind, then run; an argument the tool does not take is refused under settings.strict_arguments, else
        ignored: logged, and named in the answer's ``ignored_arguments`` (docs/tools.md#unknown-arguments)."""
        strict = self.runtime.settings.strict_arguments
        bound = spec.bind(arguments, strict=strict)
        ignored = [] if strict else spec.unknown(arguments)
        try:
            answer = self._run(spec, bound, principal, library)
        except ToolArgumentError as exc:  # a refusal says what it ignored too
            answer = _refused(spec, str(exc))
        ignored += answer.pop("ignored_arguments", [])  # a handler's own (a message's fields)
        if not ignored:
            return answer
        log.warning("tool %s ignored argument(s) it does not take: %s", spec.name, ", ".join(ignored))
        return {**answer, "ignored_arguments": ignored}

    def _run(self, spec: Tool, bound: dict[str, Any], principal: Principal, library: dict[str, Any]) -> dict[str, Any]:
        rt = self.runtime
        if self.read_only and not spec.read_only:
            return {
                "ok": False,
                "error": f"{spec.name} writes, and this memory was opened read-only (the "
                "explorer without --write): nothing was written",
                **spec.failure,
            }
        # a session is the caller's own: the same key named by another principal is another session
        session_key = SessionKey.of(principal.client_id, bound.pop("session_key", None) or "")
        if spec.omit_agent and not bound.get("agent_id"):
            bound["agent_id"] = _sole_agent(principal)
        for demand in spec.demands(bound):
            if not principal.allows(demand):
                return {**denied(spec.name, demand, principal), **spec.failure}
        # project_id "@auto" resolved, and the project checked, against the operator's operating context
        noted = operating_context.gate(rt.settings, bound, writes=not spec.read_only)
        previewing = spec.previews and bound.get("dry_run") is True  # a preview writes nothing: it runs as usual
        if spec.paused is not None and not previewing and rt.pauses.remaining(session_key, rt.clock()) > 0:
            return {**paused_answer(rt, session_key, spec.paused_body(rt, bound)), **noted}
        if spec.takes_session:
            bound["session_key"] = session_key
        if spec.takes_principal:
            bound["principal"] = principal
        answer = spec.handler(rt, **bound, **library)
        calibrate.after_write(rt, spec.name, bound, answer)  # a milestone of the agent's memories queues a calibration
        # a refusal from inside a handler carries the collection keys the tool documents too
        return {**spec.failure, **answer, **noted} if answer.get("ok") is False else {**answer, **noted}

    def _tool(self, handler: Handler, arguments: dict[str, Any], **library: Any) -> dict[str, Any]:
        """The tool whose declaration names ``handler``, run exactly as ``call`` runs it by name."""
        return self.call(_TOOL_OF[handler], arguments, **library)

    # -- the tools, one method each: ``memory.recall(agent_id="me", query="...")`` is ``call("recall", ...)``. Each
    # names its tool's handler, so an editor or a type checker follows it there (docs/architecture.md#adding-a-tool)

    def store(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.store, arguments)

    def recall(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(recall.run_recall, arguments)

    def recall_with_context(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(recall.recall_with_context, arguments)

    def get_contents(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(read.get_contents, arguments)

    def archive_episode(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.archive_episode, arguments)

    def update_memory(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.update_memory, arguments)

    def lock_memory(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.lock_memory, arguments)

    def unlock_memory(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.unlock_memory, arguments)

    def delete_memory(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.delete_memory, arguments)

    def delete_episode(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.delete_episode, arguments)

    def delete_agent_data(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.delete_agent_data, arguments)

    def list_memories(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(read.list_memories, arguments)

    def list_episodes(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(read.list_episodes, arguments)

    def get_profile(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(read.get_profile, arguments)

    def update_profile(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(write.update_profile, arguments)

    def calibrate_threshold(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(calibrate.calibrate_threshold, arguments)

    def set_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(calibrate.set_recall_precision, arguments)

    def get_recall_precision(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(calibrate.get_recall_precision, arguments)

    def export_memories(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(portability.export_jsonl, arguments)

    def import_memories(self, progress: Callable[[int], None] | None = None, **arguments: Any) -> dict[str, Any]:
        """``progress`` (not a tool argument) is told how many records each step read."""
        return self._tool(portability.import_jsonl, arguments, progress=progress)

    def merge_memories(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(merge.merge_memories, arguments)

    def check_health(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(health.check_health, arguments)

    def deep_check(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(health.deep_check, arguments)

    def get_queue_status(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(health.queue_status, arguments)

    def get_session_findings(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(health.session_findings, arguments)

    def pause_persistence(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(session.pause_persistence, arguments)

    def resume_persistence(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(session.resume_persistence, arguments)

    def persistence_status(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(session.persistence_status, arguments)

    def declare_associations(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(associations.declare_associations, arguments)

    def traverse(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(associations.traverse, arguments)

    def reconstruct(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(reconstruct.reconstruct, arguments)

    def get_operating_context(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(operating_context.get_operating_context, arguments)

    def check_update(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(update_check.check_update, arguments)

    def migrate_channel_axis(self, **arguments: Any) -> dict[str, Any]:
        return self._tool(channel_axis.migrate_channel_axis, arguments)

    # -- helpers for callers below the tools ----------------------------------------------

    def now_iso(self) -> str:
        return self.runtime.now_iso()

    def embed(self, texts: list[str]) -> list[np.ndarray | None]:
        return self.runtime.embed(texts)

    def scope(self, agent_id: str, project_id: str | None, channel: str, source_id: str) -> Scope:
        return Scope(agent_id, project_id, channel, source_id)

    # -- browsing, for the explorer (cuedrecall ui): the operator's reads, not tools (handlers/browse.py) --------

    def agents(self) -> dict[str, Any]:
        """Every agent the store holds a memory, an episode or a profile of, with counts, projects and channels."""
        return browse.agents(self.runtime)

    def browse(self, kind: str, agent_id: str, **filters: Any) -> dict[str, Any]:
        """One page of an agent's memories or episodes, newest first (``handlers.browse.browse``'s filters:
        project_id, channel, limit, before_id, offset, after, before); ToolArgumentError on a bad filter."""
        return browse.browse(self.runtime, kind=kind, agent_id=agent_id, **filters)

    def scope_span(self, agent_id: str, project_id: str | None = None, channel: str = "") -> list[str] | None:
        """[oldest, newest] memory time of the scope, ISO-8601 (a trace view's timeline); None when undated."""
        return browse.scope_span(self.runtime, agent_id, project_id, channel)


def _sole_agent(principal: Principal) -> str:
    """The agent an omitted agent_id stands for: the one agent the caller may write, if there is exactly one."""
    agent = principal.sole_agent(WRITE)
    if agent is None:
        raise ToolArgumentError(
            "argument 'agent_id' is required (it may be omitted only when your access names "
            "exactly one agent you can write)"
        )
    return agent


def _refused(spec: Tool, error: str) -> dict[str, Any]:
    """A refused argument: ``ok: false`` naming it, with the tool's collection keys; a tool that answers a verdict
    (store's ``result: rejected``) says why under ``reason`` too, as CPersona's does."""
    answer = {"ok": False, "error": error, **spec.failure}
    return {**answer, "reason": error} if spec.failure.get("result") == "rejected" else answer


def _failed(spec: Tool, exc: Exception) -> dict[str, Any]:
    """The last resort of ``call``: an unexpected failure is logged with its traceback and answered ``ok: false``
    without one; a storage failure (read-only, disk full, locked, ...) is answered in words the caller can act on."""
    try:
        log.error("tool %s failed", spec.name, exc_info=exc)
    except Exception:  # a failure too deep to format (RecursionError): the answer matters more than the log
        log.error("tool %s failed (%s; its traceback could not be formatted)", spec.name, type(exc).__name__)
    error = describe_storage_error(exc) or (
        f"{spec.name} failed inside the server ({type(exc).__name__}); nothing was written by the failed step"
    )
    return {"ok": False, "error": error, **spec.failure}


def _echo_capped(answer: dict[str, Any]) -> dict[str, Any]:
    """An error message of at most ERROR_MAX characters (its start names the argument; the rest is the echo)."""
    error = answer.get("error") if answer.get("ok") is False else None
    if isinstance(error, str) and len(error) > ERROR_MAX:
        return {**answer, "error": error[:ERROR_MAX] + "... (cut)"}
    return answer
