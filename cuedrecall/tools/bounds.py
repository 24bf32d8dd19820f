"""The bounds every tool argument keeps, whatever its declared type: the hostile-input rules.

A value a caller sends is refused (ToolArgumentError naming the argument, so nothing is
written) when, anywhere inside it:

- a string holds a lone surrogate (``"\\ud800"`` in JSON): it cannot be stored as UTF-8;
- a string (or an object's key) holds a NUL character: PostgreSQL text cannot hold one, so neither backend
  takes it (one rule for both, whatever the argument: content, query, profile, a name, an identifier);
- a number is NaN or infinite, or an integer lies outside SQLite's 64-bit range;
- an object or array is nested deeper than ``MAX_DEPTH`` levels;
- a string is longer than ``MAX_TEXT`` characters, or the value holds more than
  ``MAX_NODES`` strings, numbers, objects and arrays in all.

An error message never echoes more than ``ECHO`` characters of what the caller sent.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from cuedrecall.errors import ToolArgumentError

MAX_DEPTH = 32  # objects and arrays within one argument (metadata, history, associations)
MAX_TEXT = 1_000_000  # characters of any one string (a memory's text is cut far below this: max_content_length)
MAX_NODES = 100_000  # values within one argument
MAX_INT = 2**63 - 1  # SQLite INTEGER is a signed 64-bit value
ECHO = 100  # characters of a caller's value an error message may show
_REF = re.compile(r"(mem|ep):([0-9]{1,19})")


def shown(value: Any, limit: int = ECHO) -> str:
    """A caller's value for an error message: its repr (surrogates escaped), cut to ``limit`` characters."""
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, (int, float, bool)) or value is None:
        text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else f"an integer of {limit}+ digits"
    else:
        text = f"{_json_type(value)}"
    return text if len(text) <= limit else text[:limit] + "..."


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (a code point UTF-8 cannot carry)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_value(name: str, value: Any) -> None:
    """ToolArgumentError naming ``name`` (and where inside it) when ``value`` breaks a bound above.

    Walks the value with an explicit stack, so a value nested thousands deep is refused, not
    a RecursionError.
    """
    stack: list[tuple[str, Any, int]] = [(name, value, 0)]
    nodes = 0
    while stack:
        where, item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ToolArgumentError(f"argument '{name}' holds too many values (more than {MAX_NODES:,})")
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ToolArgumentError(f"argument '{name}' is nested too deeply (more than {MAX_DEPTH} levels)")
            stack.extend(_children(where, item, depth + 1))
        else:
            _check_scalar(where, item)


def _children(where: str, item: dict[str, Any] | list[Any], depth: int) -> list[tuple[str, Any, int]]:
    if isinstance(item, list):
        return [(f"{where}[{i}]", child, depth) for i, child in enumerate(item)]
    out = []
    for key, child in item.items():
        if not isinstance(key, str):  # a Python caller's dict; JSON keys are always strings
            raise ToolArgumentError(f"argument '{where}' has a key that is not a string: {shown(key)}")
        _check_scalar(f"{where} (a key)", key)
        out.append((f"{where}.{key[:40]}", child, depth))
    return out


def _check_scalar(where: str, item: Any) -> None:
    if isinstance(item, str):
        if len(item) > MAX_TEXT:
            raise ToolArgumentError(f"argument '{where}' is too long ({len(item):,} characters, at most {MAX_TEXT:,})")
        if "\x00" in item:
            raise ToolArgumentError(
                f"argument '{where}' must not contain a NUL character (U+0000): "
                "PostgreSQL text cannot hold one, so no backend takes it"
            )
        if has_surrogate(item):
            raise ToolArgumentError(
                f"argument '{where}' is not valid Unicode text (it holds a lone surrogate, which UTF-8 cannot carry)"
            )
    elif isinstance(item, bool) or item is None:
        return
    elif isinstance(item, int):
        if not -MAX_INT - 1 <= item <= MAX_INT:
            raise ToolArgumentError(
                f"argument '{where}' is out of range: an integer from -2**63 to 2**63-1 (got {shown(item, 30)})"
            )
    elif isinstance(item, float):
        if not math.isfinite(item):
            raise ToolArgumentError(f"argument '{where}' must be a finite number, got {item!r}")
    else:
        raise ToolArgumentError(f"argument '{where}' has a value JSON cannot carry ({type(item).__name__})")


def check_ref(name: str, ref: Any, where: str = "") -> None:
    """A record ref is ``mem:<id>`` or ``ep:<id>`` with an id of ASCII digits within SQLite's range; ``where``
    names the item inside argument ``name`` (``refs[2]``)."""
    if not isinstance(ref, str):
        return  # the handler names the wrong type
    match = _REF.fullmatch(ref.strip())
    if match is None or int(match.group(2)) > MAX_INT:
        raise ToolArgumentError(
            f"argument '{name}': {where or name} is not a record ref: {shown(ref)} (expected "
            "mem:<id> or ep:<id>, the id a positive integer below 2**63)"
        )


def check_ref_range(name: str, text: Any) -> None:
    """A string that reads as a record ref (``mem:<digits>``, ``ep:<digits>``) must hold an id within SQLite's
    64-bit range; anything else (a name, a malformed ref) is left to the caller's own rule. Checked before any
    conversion of the id reaches SQL, where a larger one overflows."""
    if not isinstance(text, str):
        return
    kind, _, number = text.strip().partition(":")
    if kind in ("mem", "ep") and number.isdigit() and number.isascii() and int(number) > MAX_INT:
        raise ToolArgumentError(
            f"argument '{name}' is out of range: {shown(text, 40)} names a record id above 2**63-1, which no record has"
        )


def _json_type(value: Any) -> str:
    for label, kind in (("an object", dict), ("an array", list)):
        if isinstance(value, kind):
            return label
    return f"a {type(value).__name__}"


NAMED_MOST = 50  # names an ignored_arguments list gives; "(+N more)" stands for the rest


def named(names: Iterable[str], prefix: str = "") -> list[str]:
    """Argument names as an answer lists them: sorted, each cut to 40 characters, at most NAMED_MOST."""
    cut = [prefix + (n if len(n) <= 40 else n[:40] + "...") for n in sorted(names, key=str)]
    return cut if len(cut) <= NAMED_MOST else [*cut[:NAMED_MOST], f"(+{len(cut) - NAMED_MOST} more)"]
