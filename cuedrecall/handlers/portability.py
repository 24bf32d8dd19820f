"""Export to and import from JSONL: one header line, then one record a line.

Export writes ``cuedrecall-export/1``. Import reads that and CPersona's
``cpersona-export/1.0``, ``1.1`` and ``1.2`` (CPersona 2.6), so one import moves a
CPersona user over. The versions of CPersona's format differ only in what follows
the memory, episode and profile records: 1.1 adds its declared graph (``entity``,
``mention``, ``relation`` records, counted as ``entity_count`` ...), 1.2 adds
declared folders (``folder``, ``folder_member``). This server keeps neither, so
those records are checked against the header's counts and reported as
``not_imported``.

Files live in one folder. A tool caller's path is taken inside the export folder
(``CPERSONA_EXPORT_DIR``, default ``exports/`` beside the database): nothing
outside it is read or written, through ``..``, an absolute path or a symbolic
link, and never the database's own files. A refused path gets the same answer
whether or not something exists there. Only the operator's command line
(``cuedrecall import`` / ``export``) passes ``anywhere=True``, a Python keyword no
tool caller can send, to take any path.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from cuedrecall.access import EVERY_AGENT, LOCAL, READ, WRITE, Demand, Principal, denied
from cuedrecall.clock import iso, parse_instant
from cuedrecall.errors import ToolArgumentError
from cuedrecall.handlers.rows import episode_row, json_object, memory_row
from cuedrecall.handlers.write import normalise_source
from cuedrecall.runtime import Runtime
from cuedrecall.store.base import EPISODE, MEMORY
from cuedrecall.text.sanitise import sanitise

FORMAT = "cuedrecall-export/1"
_MEMORY_KEYS = ("agent_id", "project_id", "channel", "msg_id", "content", "source", "timestamp", "metadata",
                "locked", "created_at")
_EPISODE_KEYS = ("agent_id", "project_id", "channel", "summary", "keywords", "start_time", "end_time", "resolved",
                 "created_at")

# The record types each format version may hold, and the header key counting each.
_ROWS = ("memory", "episode", "profile")
_GRAPH = ("entity", "mention", "relation")
_FOLDERS = ("folder", "folder_member")
VERSIONS: dict[str, tuple[str, ...]] = {
    FORMAT: _ROWS,
    "cpersona-export/1.0": _ROWS,
    "cpersona-export/1.1": _ROWS + _GRAPH,
    "cpersona-export/1.2": _ROWS + _GRAPH + _FOLDERS,
}
_ALL_TYPES = _ROWS + _GRAPH + _FOLDERS

# The database's own files, by suffix of its name: never an export's source or destination.
_DATABASE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_SIDECAR = ".calibration.json"


# -- the export folder ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Path:
    shown: Path  # what the answer names
    real: Path  # the same file with every symbolic link resolved: what is opened
    confined: bool


def _refuse(name: str, rule: str) -> ToolArgumentError:
    return ToolArgumentError(f"argument '{name}' {rule}")


def _export_folder(rt: Runtime, name: str) -> Path:
    """The export folder, absolute. A configured one must exist; the default one may not exist yet."""
    configured = rt.settings.export_dir
    db_path = rt.settings.db_path
    if configured:
        folder = Path(os.path.abspath(Path(configured).expanduser()))
        if not folder.is_dir():
            raise _refuse(name, "cannot be used: the export folder does not exist (CPERSONA_EXPORT_DIR must name "
                                "an existing folder; export never creates it)")
        return folder
    if not db_path or db_path == ":memory:" or db_path.startswith("file:"):
        raise _refuse(name, "cannot be used: this server has no export folder (the database is in memory and "
                            "CPERSONA_EXPORT_DIR is not set)")
    return _default_folder(db_path)


def _default_folder(db_path: str) -> Path:
    """``exports/`` beside the database: made 0700 by the first export that writes into it."""
    return Path(os.path.abspath(Path(db_path).expanduser().parent / "exports"))


def _within(path: Path, folder: Path) -> Path | None:
    """path relative to folder when it lies inside it (lexically), else None."""
    try:
        return path.relative_to(folder)
    except ValueError:
        return None


def _resolve(rt: Runtime, name: str, given: str, *, anywhere: bool) -> _Path:
    """The caller's path, confined to the export folder unless ``anywhere`` (the operator's command line).

    Every refusal is decided from the path's spelling, the export folder and the
    symbolic links inside that folder, never from whether the named file exists, so
    the answer says nothing about files outside the folder.
    """
    if "\x00" in given:
        raise _refuse(name, "must not contain a NUL character")
    if anywhere:
        shown = Path(os.path.abspath(Path(given).expanduser()))
        found = _Path(shown, Path(os.path.realpath(shown)), confined=False)
    else:
        raw = Path(given)
        if ".." in raw.parts:
            raise _refuse(name, "must not contain '..': a path is taken inside the export folder")
        folder = _export_folder(rt, name)
        real_folder = Path(os.path.realpath(folder))
        if raw.is_absolute():
            normal = Path(os.path.normpath(raw))
            relative = _within(normal, folder)
            relative = relative if relative is not None else _within(normal, real_folder)
            if relative is None:
                raise _refuse(name, "is outside the export folder: a path is taken relative to it, and an "
                                    "absolute path must lie inside it")
        else:
            relative = raw
        real = Path(os.path.realpath(real_folder / relative))
        if real != real_folder and _within(real, real_folder) is None:
            raise _refuse(name, "leads out of the export folder through a symbolic link")
        found = _Path(folder / relative, real, confined=True)
    if _is_database_file(rt, found.real):
        raise _refuse(name, "names one of the database's own files, which export and import never touch")
    return found


def _is_database_file(rt: Runtime, real: Path) -> bool:
    db_path = rt.settings.db_path
    if not db_path or db_path == ":memory:" or db_path.startswith("file:"):
        return False
    db = Path(os.path.realpath(Path(db_path).expanduser()))
    if real.parent != db.parent:
        return False
    return real.name in {db.name + suffix for suffix in _DATABASE_SUFFIXES} or real.name.startswith(
        db.name + _SIDECAR)


# -- export ---------------------------------------------------------------------------------

def _encode(vector: np.ndarray | None, model: str) -> dict[str, str]:
    """The vector as base64 little-endian float32, with the label of the model that made it."""
    if vector is None:
        return {}
    encoded = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")
    return {"embedding_b64": encoded, "embedding_model": model}


def export_jsonl(rt: Runtime, agent_id: str, output_path: str, include_embeddings: bool,
                 anywhere: bool = False, principal: Principal = LOCAL) -> dict[str, Any]:
    """Write one agent's (or every agent's) records into the export folder.

    The file is created 0600 under a temporary name and renamed into place: never
    half a file. Export makes no folders (but the default export folder itself).
    ``anywhere`` (not a tool argument: the operator's command line) takes any path.
    """
    path = _resolve(rt, "output_path", output_path, anywhere=anywhere)
    if path.confined and not rt.settings.export_dir:
        try:
            _default_folder(rt.settings.db_path).mkdir(mode=0o700, exist_ok=True)
        except OSError:
            pass  # answered just below: its folder does not exist
    if path.real.is_dir():
        raise _refuse("output_path", "names a folder, not a file")
    if not path.real.parent.is_dir():
        raise _refuse("output_path", "names a folder that does not exist (export never creates folders)")
    owner = _owner(path.real)
    if owner is not None and not principal.allows(Demand(owner or EVERY_AGENT, WRITE)):
        return denied("export_memories", Demand(owner or EVERY_AGENT, WRITE), principal)  # another's export
    store = rt.store
    memories = list(store.export_rows(MEMORY, agent_id))
    episodes = list(store.export_rows(EPISODE, agent_id))
    profiles = store.profiles(agent_id)
    header = {"_type": "header", "version": FORMAT, "agent_id": agent_id, "exported_at": rt.now_iso(),
              "memory_count": len(memories), "episode_count": len(episodes), "profile_count": len(profiles)}
    lines = [header]
    for row in memories:
        record = {k: row[k] for k in _MEMORY_KEYS}
        record["source"], record["metadata"] = json_object(row["source"]), json_object(row["metadata"])
        lines.append({"_type": "memory", "id": row["id"], **record,
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for row in episodes:
        lines.append({"_type": "episode", "id": row["id"], **{k: row[k] for k in _EPISODE_KEYS},
                      **(_encode(row["embedding"], row["embedding_model"]) if include_embeddings else {})})
    for agent, content, updated_at in profiles:
        lines.append({"_type": "profile", "agent_id": agent, "content": content, "updated_at": updated_at})
    _write_private(path.real, lines)
    return {"ok": True, "path": str(path.shown), "memories": len(memories), "episodes": len(episodes),
            "profiles": len(profiles)}


def _write_private(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write the lines to a 0600 temp file beside path, then rename it over path."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # created 0600
    except OSError as exc:
        raise _refuse("output_path", f"cannot be written ({exc.strerror or type(exc).__name__})") from None
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise _refuse("output_path", f"cannot be written ({exc.strerror or type(exc).__name__})") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# -- import: reading the file -----------------------------------------------------------------

def _read_text(rt: Runtime, path: _Path) -> str:
    """The file's text: a regular file, at most max_import_bytes, UTF-8; else a refusal naming input_path.

    A missing file, a folder, a device or a pipe all get the one answer, and the
    file is opened without following a link and without blocking on a pipe.
    """
    unreadable = "is not a readable file" + (" in the export folder" if path.confined else "")
    limit = rt.settings.max_import_bytes
    too_big = f"is larger than the import limit of {limit} bytes (CPERSONA_MAX_IMPORT_BYTES)"
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path.real, flags)
    except OSError:
        raise _refuse("input_path", unreadable) from None
    try:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise _refuse("input_path", unreadable)
            if info.st_size > limit:
                raise _refuse("input_path", too_big)
            raw = handle.read(limit + 1)
    except OSError:
        raise _refuse("input_path", unreadable) from None
    if len(raw) > limit:  # it grew after the size was read
        raise _refuse("input_path", too_big)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _refuse("input_path", "is not UTF-8 text") from None


def _parse(text: str) -> tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, int]]:
    """(version, header, the records to import, how many of each record type the file holds)."""
    lines: list[tuple[int, Any]] = []
    # split on "\n" only: U+2028 / U+2029 are legal inside a JSON string and splitlines() would cut there
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            lines.append((number, json.loads(line)))
        except (ValueError, RecursionError):
            raise _refuse("input_path", f"has a line that is not JSON (line {number})") from None
    known = ", ".join(VERSIONS)
    if not lines or not isinstance(lines[0][1], dict) or lines[0][1].get("_type") != "header" \
            or lines[0][1].get("version") not in VERSIONS:
        raise _refuse("input_path", f"must start with an export header of a known version ({known})")
    header = lines[0][1]
    version = header["version"]
    allowed = VERSIONS[version]
    present = dict.fromkeys(_ALL_TYPES, 0)
    records = []
    for number, item in lines[1:]:
        kind = item.get("_type") if isinstance(item, dict) else None
        if kind not in allowed:
            raise _refuse("input_path", f"has a line that is not a {version} record (line {number})")
        present[kind] += 1
        if kind in _ROWS:
            records.append(item)
    _check_counts(header, present, allowed)
    return version, header, records, present


def _check_counts(header: dict[str, Any], present: dict[str, int], allowed: tuple[str, ...]) -> None:
    """A header's counts must match the records the file holds (a cut file is refused whole)."""
    for kind in allowed:
        key = f"{kind}_count"
        if key in header and header[key] != present[kind]:
            raise _refuse("input_path", f"is refused: the header says {header[key]} {kind} records, the "
                                        f"file has {present[kind]}")
    if "profile_count" not in header and isinstance(header.get("has_profile"), bool) \
            and header["has_profile"] != (present["profile"] > 0):
        raise _refuse("input_path", f"is refused: the header's has_profile is {header['has_profile']}, "
                                    f"the file has {present['profile']} profile records")


# -- import ---------------------------------------------------------------------------------

def import_jsonl(
    rt: Runtime, input_path: str, target_agent_id: str, dry_run: bool,
    progress: Callable[[int], None] | None = None, batch_size: int = 256, anywhere: bool = False,
    principal: Principal = LOCAL,
) -> dict[str, Any]:
    """Load an export (ours or CPersona's) in one transaction; a second run of the same file adds nothing.

    The file is read from the export folder (``anywhere``, the operator's command
    line only, takes any path). Our ids are new: a record's file id is not kept,
    and a memory's ``msg_id`` (with its content) is what finds it again, so a
    repeated import skips every record. A vector is kept only when the file names
    our embedder's model beside it (and has our width); any other is re-embedded,
    in batches.

    Agents are walls:

    - ``target_agent_id`` "" files each record under its own agent (the caller
      then needs write access on every agent); a name files them all under it.
    - An import never overwrites a profile: an agent that already has one keeps
      it, and the file's is counted in ``skipped_profiles`` (so are CPersona's
      per-user profile rows: only the row with user_id "" is an agent's profile).
    - Reading a file is reading its agents' memory: the caller needs read access
      on every agent the file's records name, whatever the target.
    - A memory's ``locked`` flag is kept only when the caller named the target
      explicitly and the record's own agent is that target (or the operator
      imports on the command line); otherwise the memory arrives unlocked, so
      nobody can plant undeletable rows in an agent by importing a file under it.
    """
    path = _resolve(rt, "input_path", input_path, anywhere=anywhere)
    version, _header, records, present = _parse(_read_text(rt, path))
    for agent in sorted({item["agent_id"] for item in records if isinstance(item.get("agent_id"), str)}):
        if not principal.allows(Demand(agent or EVERY_AGENT, READ)):
            return denied("import_memories", Demand(agent or EVERY_AGENT, READ), principal)
    foreign = version != FORMAT
    counts: dict[str, Any] = {"imported_memories": 0, "skipped_memories": 0, "imported_episodes": 0,
                              "skipped_episodes": 0, "profile_updated": 0, "skipped_profiles": 0}
    vectors = _vectors_for(rt, records, batch_size, progress)
    try:
        with rt.store.write() as conn:
            for item, vector in zip(records, vectors):
                own = item.get("agent_id") if isinstance(item.get("agent_id"), str) else ""
                agent = target_agent_id or own
                if not agent:
                    raise ToolArgumentError(
                        "argument 'target_agent_id' is required: a record of the file has no agent_id")
                keep_lock = anywhere or (bool(target_agent_id) and own == target_agent_id)
                counts[_import_one(rt, conn, item, agent, vector, keep_lock, foreign)] += 1
            if dry_run:
                raise _DryRun()  # counted inside the transaction, then rolled back
    except _DryRun:
        pass
    skipped_kinds = {kind: present[kind] for kind in _GRAPH + _FOLDERS if present[kind]}
    return {"ok": True, "dry_run": dry_run, **counts, **({"not_imported": skipped_kinds} if skipped_kinds else {})}


def _owner(path: Path) -> str | None:
    """The agent an existing export at ``path`` belongs to ("" = every agent), None when there is no export
    there to replace (no file, or not one of ours)."""
    try:
        with path.open(encoding="utf-8") as handle:
            header = json.loads(handle.readline(64 * 1024) or "null")
    except (OSError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("_type") != "header":
        return None
    agent = header.get("agent_id")
    return agent if isinstance(agent, str) else None


class _DryRun(Exception):
    """Raised inside the transaction to roll back a dry run."""


def _our_width(rt: Runtime) -> int | None:
    """The width of our embedder's vectors (one probe), None when it gives none."""
    probe = rt.embed(["width"])[0]
    return None if probe is None else int(np.asarray(probe).shape[-1])


def _vectors_for(rt: Runtime, records: list[dict[str, Any]], batch: int,
                 progress: Callable[[int], None] | None) -> list[np.ndarray | None]:
    """The file's vector when our embedder made it, else a fresh embedding (batched).

    "Our embedder made it" means the record names our model beside the vector; a
    vector with no label, or another model's, is re-embedded, and so is one whose
    width is not ours or that holds non-finite numbers.
    """
    out: list[np.ndarray | None] = [None] * len(records)
    todo: list[int] = []
    width: int | None = -1  # not probed yet
    model = rt.embedder.model
    for i, item in enumerate(records):
        if item["_type"] not in ("memory", "episode"):
            continue
        # a vector is only comparable with ours when the same model made it; anything else is re-embedded
        if "embedding_b64" in item and model and item.get("embedding_model") == model:
            try:
                vector = np.frombuffer(base64.b64decode(item["embedding_b64"], validate=True), dtype="<f4")
            except (TypeError, ValueError):  # not base64, or not a whole number of float32s
                raise ToolArgumentError(
                    f"argument 'input_path': record {i + 1} after the header has an unreadable embedding_b64"
                ) from None
            if width == -1:
                width = _our_width(rt)
            if vector.shape[0] == width and np.all(np.isfinite(vector)):
                out[i] = vector
                continue
        todo.append(i)
    if progress:
        progress(len(records) - len(todo))
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        texts = [_text(records[i].get("content")) or _text(records[i].get("summary")) for i in chunk]
        for i, vector in zip(chunk, rt.embed(texts)):
            out[i] = vector
        if progress:
            progress(len(chunk))
    return out


def _text(value: Any) -> str:
    """A file's string field: None and absent are "", anything else is its text."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _instant(value: Any, fallback: str) -> str:
    """A record time (ISO-8601, or SQLite's ``YYYY-MM-DD HH:MM:SS`` in UTC) as our ISO spelling, else fallback."""
    moment = parse_instant(value)
    return fallback if moment is None else iso(moment)


def _import_one(rt: Runtime, conn: Any, item: dict[str, Any], agent: str, vector: Any, keep_lock: bool,
                foreign: bool) -> str:
    store, model, now = rt.store, rt.embedder.model, rt.now_iso()
    project, channel = _text(item.get("project_id")), _text(item.get("channel"))
    if item["_type"] == "profile":
        return _import_profile(rt, conn, item, agent, now)
    created_at = _instant(item.get("created_at"), now)
    if item["_type"] == "memory":
        content = sanitise(_text(item.get("content")), rt.settings.max_content_length)[0]
        msg_id = _text(item.get("msg_id"))
        if not content.strip() or store.find_duplicate(agent, [project], [channel], msg_id, content):
            return "skipped_memories"
        source, metadata = json_object(item.get("source")), json_object(item.get("metadata"))
        if foreign:
            # CPersona carries a column that was not JSON verbatim beside the {} it exports
            if isinstance(item.get("source_text"), str) and item["source_text"]:
                source = normalise_source(item["source_text"])
            if isinstance(item.get("metadata_text"), str) and item["metadata_text"]:
                metadata = {"text": item["metadata_text"]}
            source = normalise_source(source)
        timestamp = _text(item.get("timestamp"))
        store.insert_memory(conn, memory_row(
            agent_id=agent, project_id=project, channel=channel, msg_id=msg_id, content=content,
            source=source, timestamp=timestamp if parse_instant(timestamp) else created_at, metadata=metadata,
            created_at=created_at, vector=vector, model=model, locked=keep_lock and bool(item.get("locked"))))
        return "imported_memories"
    summary = sanitise(_text(item.get("summary")), rt.settings.max_content_length)[0]
    if not summary.strip() or store.find_episode(agent, project, channel, summary) is not None:
        return "skipped_episodes"
    keywords = item.get("keywords")
    keywords = " ".join(_text(k) for k in keywords) if isinstance(keywords, list) else _text(keywords)
    store.insert_episode(conn, episode_row(
        agent_id=agent, project_id=project, channel=channel, summary=summary, keywords=keywords,
        start_time=_text(item.get("start_time")) or None, end_time=_text(item.get("end_time")) or None,
        resolved=bool(item.get("resolved")), created_at=created_at, vector=vector, model=model))
    return "imported_episodes"


def _import_profile(rt: Runtime, conn: Any, item: dict[str, Any], agent: str, now: str) -> str:
    """An agent's profile, set only when the agent has none (an import never overwrites one)."""
    if _text(item.get("user_id")):  # CPersona's per-user rows: the agent's own profile is user_id ""
        return "skipped_profiles"
    content = sanitise(_text(item.get("content")), rt.settings.max_profile_length)[0]
    existing = rt.store.profile(agent)
    if not content.strip() or (existing is not None and existing[0].strip()):
        return "skipped_profiles"
    rt.store.set_profile(conn, agent, content, _instant(item.get("updated_at"), now))
    return "profile_updated"
