"""The file formats: ours, ``cuedrecall-export/1`` and ``/2``, and CPersona's ``cpersona-export/1.0``, ``1.1`` and
``1.2``.

A file is one header line, then one record a line. Import reads every one of
them, so one import moves a CPersona user over. A file of CPersona's records with
no header line (plain JSONL, which CPersona's import reads too) is read as
``PLAIN``: any record type, no counts to check. The versions of CPersona's format
differ only in what follows the memory, episode and profile records: 1.1 adds its
declared graph (``entity`` records with their aliases, ``mention``, ``relation``,
counted as ``entity_count`` ...), 1.2 adds declared folders (``folder``,
``folder_member``). Ours follows the same pattern: export writes
``cuedrecall-export/1`` (records only) when nothing is declared, and
``cuedrecall-export/2`` with the graph and folder records, in CPersona's record
shapes, when something is. Every count the header gives is checked against the
file; the graph and folders are carried by ``declared``.
"""

from __future__ import annotations

import json
from typing import Any

from cuedrecall.clock import iso, parse_instant
from cuedrecall.handlers.portability.paths import refuse

FORMAT = "cuedrecall-export/1"  # records only
FORMAT_DECLARED = "cuedrecall-export/2"  # records, then the declared graph and folders
OURS = (FORMAT, FORMAT_DECLARED)
MEMORY_KEYS = (
    "agent_id",
    "project_id",
    "channel",
    "msg_id",
    "content",
    "source",
    "timestamp",
    "metadata",
    "locked",
    "created_at",
)
EPISODE_KEYS = (
    "agent_id",
    "project_id",
    "channel",
    "summary",
    "keywords",
    "start_time",
    "end_time",
    "resolved",
    "created_at",
)

# The record types each format version may hold, and the header key counting each.
_ROWS = ("memory", "episode", "profile")
_GRAPH = ("entity", "mention", "relation")
_FOLDERS = ("folder", "folder_member")
VERSIONS: dict[str, tuple[str, ...]] = {
    FORMAT: _ROWS,
    FORMAT_DECLARED: _ROWS + _GRAPH + _FOLDERS,
    "cpersona-export/1.0": _ROWS,
    "cpersona-export/1.1": _ROWS + _GRAPH,
    "cpersona-export/1.2": _ROWS + _GRAPH + _FOLDERS,
}
_ALL_TYPES = _ROWS + _GRAPH + _FOLDERS
PLAIN = "cpersona-jsonl"  # no header line: CPersona's records, one a line (not a version a header may name)
DECLARED = _GRAPH + _FOLDERS  # what is declared beside the records: carried by ``declared``


def parse(text: str) -> tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, int]]:
    """(version, header, the records to import in file order, how many of each record type the file holds).

    The first line must be a header of a known version, every further line a
    record type that version holds, and the header's counts must match the file;
    or every line a record of any type, with no header (``PLAIN``).
    """
    lines = _json_lines(text)
    plain = bool(lines) and isinstance(lines[0][1], dict) and lines[0][1].get("_type") in _ALL_TYPES
    header = {"version": PLAIN} if plain else _header(lines)
    version = header["version"]
    allowed = _ALL_TYPES if plain else VERSIONS[version]
    present = dict.fromkeys(_ALL_TYPES, 0)
    records = []
    for number, item in lines if plain else lines[1:]:
        kind = item.get("_type") if isinstance(item, dict) else None
        if kind not in allowed:
            raise refuse("input_path", f"has a line that is not a {version} record (line {number})")
        present[kind] += 1
        records.append(item)
    _check_counts(header, present, allowed)
    return version, header, records, present


def _json_lines(text: str) -> list[tuple[int, Any]]:
    """Each non-blank line, decoded, with its line number; a line that is not JSON is refused."""
    lines: list[tuple[int, Any]] = []
    # split on "\n" only: U+2028 / U+2029 are legal inside a JSON string and splitlines() would cut there
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            raise refuse("input_path", f"has a line that is not JSON (line {number})") from None
        if "\\ud" in line.lower() and not _utf8(value):  # a lone surrogate can only come as an escape
            raise refuse(
                "input_path", f"has a line with text that is not valid Unicode: a lone surrogate (line {number})"
            )
        lines.append((number, value))
    return lines


def _utf8(value: Any) -> bool:
    """Whether every string in a decoded line can be stored as UTF-8 (a lone surrogate escape cannot)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _header(lines: list[tuple[int, Any]]) -> dict[str, Any]:
    """The first line, when it is an export header of a known version; else a refusal naming the versions."""
    known = ", ".join(VERSIONS)
    if (
        not lines
        or not isinstance(lines[0][1], dict)
        or lines[0][1].get("_type") != "header"
        or lines[0][1].get("version") not in VERSIONS
    ):
        raise refuse(
            "input_path",
            f"must start with an export header of a known version ({known}), or be plain JSONL: one record "
            f"({', '.join(_ALL_TYPES)}) a line",
        )
    return lines[0][1]


def _check_counts(header: dict[str, Any], present: dict[str, int], allowed: tuple[str, ...]) -> None:
    """A header's counts must match the records the file holds (a cut file is refused whole)."""
    for kind in allowed:
        key = f"{kind}_count"
        if key in header and header[key] != present[kind]:
            raise refuse(
                "input_path", f"is refused: the header says {header[key]} {kind} records, the file has {present[kind]}"
            )
    # a header without profile_count may say has_profile instead: it must match too
    if (
        "profile_count" not in header
        and isinstance(header.get("has_profile"), bool)
        and header["has_profile"] != (present["profile"] > 0)
    ):
        raise refuse(
            "input_path",
            f"is refused: the header's has_profile is {header['has_profile']}, "
            f"the file has {present['profile']} profile records",
        )


# -- a record's fields, as either format spells them -------------------------------------------


def as_text(value: Any) -> str:
    """A file's string field: None and absent are "", anything else is its text."""
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def as_instant(value: Any, fallback: str) -> str:
    """A record time (ISO-8601, or SQLite's ``YYYY-MM-DD HH:MM:SS`` in UTC) as our ISO spelling, else fallback."""
    moment = parse_instant(value)
    return fallback if moment is None else iso(moment)
