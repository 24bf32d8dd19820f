"""The operating context: a TOML file of instructions and defaults the operator points the server at.

CPersona's operating context, in the same file format, so an operator's file works
unchanged (docs/tools.md#the-operating-context):

    version = 1
    context_revision = "2026-07-18.1"
    [instructions]
    summary = "..."                       # added to the server's instructions at initialize
    [registry]
    project_ids = ["", "shop"]            # the projects in use
    enforce = "warn"                      # off | warn | reject (a write to another project)
    [defaults]
    "claude-code" = "shop"                # the project "@auto" stands for, per agent
    [[doctrine]]
    name = "recall-discipline"            # sections a client reads in full on demand
    body = "..."

The file is the operator's setting (``CUEDRECALL_OPERATING_CONTEXT_PATH``), never a
caller's: no tool names a file. It is read again when it changes (its modification time
and size). Without one, or with one that cannot be used, the context is dormant:
``get_operating_context`` says why, and a ``project_id`` of ``"@auto"`` is refused, since
nothing says what it stands for (CPersona would store it as the literal project "@auto").
A file that cannot be used never stops the server; its problem is logged and answered.
"""

from __future__ import annotations

import logging
import os
import threading
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuedrecall.config import Settings
from cuedrecall.errors import ToolArgumentError
from cuedrecall.runtime import Runtime

log = logging.getLogger("cuedrecall")

AUTO = "@auto"  # the project_id that stands for the agent's default in [defaults]
FORMAT_VERSION = 1
ENFORCE_MODES = ("off", "warn", "reject")
MAX_FILE_BYTES = 1024 * 1024  # an operating context is a page of text; a larger file is refused unread
SETTING = "CUEDRECALL_OPERATING_CONTEXT_PATH"


@dataclass(frozen=True)
class Context:
    """A file that could be used: what it says."""

    revision: str
    summary: str
    project_ids: tuple[str, ...]
    enforce: str
    defaults: dict[str, str]
    doctrine: dict[str, str]  # section name -> body, in the file's order


@dataclass(frozen=True)
class State:
    """Where the operating context stands: in use (``context``), or dormant and why (``dormant``: not_configured,
    off, missing or unusable, with ``problem`` in words)."""

    context: Context | None
    dormant: str = ""
    problem: str = ""
    file: str = ""  # the file's name (its folder is the operator's business)


@dataclass
class _Cache:
    lock: threading.Lock = field(default_factory=threading.Lock)
    seen: dict[str, tuple[tuple[int, int], State]] = field(default_factory=dict)  # path -> (mtime_ns, size), state


_CACHE = _Cache()


def parse(text: str) -> Context:
    """The context a file's text declares; ValueError naming the first thing wrong with it."""
    data = tomllib.loads(text)
    if data.get("version") != FORMAT_VERSION:
        raise ValueError(f"version must be {FORMAT_VERSION}, got {data.get('version')!r}")
    revision = _typed(data, "context_revision", str, "")
    instructions = _typed(data, "instructions", dict, {})
    registry = _typed(data, "registry", dict, {})
    defaults = _typed(data, "defaults", dict, {})
    sections = _typed(data, "doctrine", list, [])
    summary = _typed(instructions, "summary", str, "", "instructions.summary")
    projects = _typed(registry, "project_ids", list, [], "registry.project_ids")
    if not all(isinstance(project, str) for project in projects):
        raise ValueError("registry.project_ids must be a list of strings")
    enforce = _typed(registry, "enforce", str, "warn", "registry.enforce")
    if enforce not in ENFORCE_MODES:
        raise ValueError(f"registry.enforce must be one of {', '.join(ENFORCE_MODES)}, got {enforce!r}")
    if not all(isinstance(agent, str) and isinstance(project, str) for agent, project in defaults.items()):
        raise ValueError("[defaults] must map agent ids to project ids (strings)")
    doctrine: dict[str, str] = {}
    for position, section in enumerate(sections):
        name = section.get("name") if isinstance(section, dict) else None
        body = section.get("body") if isinstance(section, dict) else None
        if not isinstance(name, str) or not name or not isinstance(body, str):
            raise ValueError(f"[[doctrine]] section {position + 1} needs a name and a body (strings)")
        if name in doctrine:
            raise ValueError(f"[[doctrine]] section {name!r} is named twice")
        doctrine[name] = body
    return Context(revision, summary, tuple(projects), enforce, dict(defaults), doctrine)


def _typed(table: dict[str, Any], key: str, kind: type, default: Any, shown: str = "") -> Any:
    value = table.get(key, default)
    if not isinstance(value, kind):
        word = "a string" if kind is str else "a table" if kind is dict else "a list"
        raise ValueError(f"{shown or key} must be {word}")
    return value


def load(settings: Settings) -> State:
    """The operating context the settings name, read again only when the file changed (never raises)."""
    if not settings.operating_context_path:
        return State(None, "not_configured", f"no file is configured ({SETTING})")
    path = os.path.expanduser(settings.operating_context_path)
    name = Path(path).name
    if not settings.operating_context:
        return State(None, "off", "disabled (CUEDRECALL_OPERATING_CONTEXT=off)", name)
    try:
        stat = os.stat(path)
    except OSError:
        return State(None, "missing", f"no sidecar file at {name!r}", name)
    key = (stat.st_mtime_ns, stat.st_size)
    with _CACHE.lock:
        seen = _CACHE.seen.get(path)
        if seen is not None and seen[0] == key:
            return seen[1]
        state = _read(path, name)
        _CACHE.seen[path] = (key, state)
    return state


def _read(path: str, name: str) -> State:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
        if len(raw) > MAX_FILE_BYTES:
            raise ValueError(f"it is larger than {MAX_FILE_BYTES:,} bytes")
        context = parse(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError, TypeError, RecursionError) as exc:
        log.warning("the operating context %s cannot be used, so it is dormant: %s", path, exc)
        return State(None, "unusable", f"sidecar unusable: {name!r}: {str(exc)[:300]}", name)
    log.info("operating context %s in use (revision %r)", path, context.revision)
    return State(context, file=name)


def instructions(settings: Settings) -> str:
    """The summary the operator wrote for every client, or "" (dormant, or no summary)."""
    context = load(settings).context
    return context.summary.strip() if context is not None else ""


# -- project_id "@auto" and the registry, at every tool that takes a project --------------------------------------


def gate(settings: Settings, bound: dict[str, Any], writes: bool) -> dict[str, Any]:
    """Resolve ``project_id: "@auto"`` in ``bound`` (in place) and check the project against the registry; the
    keys the answer carries for it (``resolved_project_id``, ``operating_context_warning``). ToolArgumentError
    when the call cannot go on: "@auto" with no context in use, or a write to a project the registry refuses.

    An omitted project and "" (the global pool) are never checked; a read only warns, since a wrong filter
    loses nothing, while a write would file rows under the wrong project."""
    project = bound.get("project_id")
    if not isinstance(project, str) or project == "":
        return {}
    state = load(settings)
    context = state.context
    if context is None:
        if project == AUTO:
            raise ToolArgumentError(
                "argument 'project_id' is \"@auto\", which stands for the agent's project in the operating "
                f'context, and none is in use: {state.problem}; name the project, or "" for the global pool'
            )
        return {}
    agent = str(bound.get("agent_id") or "")
    notes: dict[str, Any] = {}
    warnings: list[str] = []
    resolved = project
    if project == AUTO:
        mapped = context.defaults.get(agent)
        if mapped is None:
            problem = (
                f'"@auto" has no project for agent {agent!r} in the operating context\'s [defaults] '
                f"(revision {context.revision!r})"
            )
            if writes and context.enforce == "reject":
                raise ToolArgumentError(f"argument 'project_id': {problem}; nothing was written")
            warnings.append(f'{problem}: the global pool ("") was used')
            mapped = ""
        resolved = mapped
        bound["project_id"] = resolved
        notes["resolved_project_id"] = resolved
    if resolved and context.enforce != "off" and resolved not in context.project_ids:
        problem = f"project {resolved!r} is not in the operating context's registry (revision {context.revision!r})"
        if writes and context.enforce == "reject":
            raise ToolArgumentError(f"argument 'project_id': {problem}; nothing was written")
        warnings.append(problem)
    if warnings:
        notes["operating_context_warning"] = "; ".join(warnings)
    return notes


# -- the tool ------------------------------------------------------------------------------------------------------


def get_operating_context(rt: Runtime, section: str = "") -> dict[str, Any]:
    """The context in use: its revision, summary, registry, @auto defaults and section names, or one section's
    body; while dormant, why (``ok: false``, ``enabled: false``, as CPersona answers)."""
    state = load(rt.settings)
    context = state.context
    if context is None:
        return {
            "ok": False,
            "enabled": False,
            "dormant": state.dormant,
            "error": f"the operating context is dormant: {state.problem}",
        }
    sections = sorted(context.doctrine)
    if section:
        if section not in context.doctrine:
            return {
                "ok": False,
                "error": f"unknown doctrine section {section[:80]!r} (sections: {', '.join(sections) or 'none'})",
                "doctrine_sections": sections,
            }
        return {"ok": True, "context_revision": context.revision, "section": section, "body": context.doctrine[section]}
    return {
        "ok": True,
        "enabled": True,
        "context_revision": context.revision,
        "instructions_summary": context.summary,
        "registry": {"project_ids": list(context.project_ids), "enforce": context.enforce},
        "defaults": dict(context.defaults),
        "doctrine_sections": sections,
    }
