"""How a tool is declared: its arguments (types, bounds, defaults), its schema, its handler and its demands.

The dispatcher validates every call against these declarations and the MCP server
publishes them, so the two can never disagree.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cuedrecall.access import EVERY_AGENT, READ, WRITE, Demand
from cuedrecall.errors import ToolArgumentError
from cuedrecall.tools.bounds import check_value, named, shown

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}
_MISSING = object()


def _said_by_omission(default: Any) -> bool:
    """A default a schema leaves unsaid: what leaving the argument out plainly means (none, false, "", an empty
    list or object), so the published list stays short (docs/tools.md#the-compact-tool-list)."""
    return default is None or default is False or (type(default) in (str, list, dict) and not default)


@dataclass(frozen=True)
class Param:
    """One argument: its JSON type, whether it is required, its default and bounds."""

    type: str
    doc: str
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[str, ...] = ()
    max_length: int | None = None
    non_empty: bool = False  # a required string that must hold more than whitespace
    nullable: bool = False
    items: str | dict[str, Any] | None = None  # JSON type (or schema) of array items
    clamp: bool = False  # a number outside [minimum, maximum] is moved to the bound, not refused
    properties: dict[str, Any] | None = None  # an object's fields, published in the schema
    extra: dict[str, Any] = field(default_factory=dict)  # further schema keywords, published as they are
    ref: str | None = None  # an integer id that may also come as its ref ("mem:12" for ref "mem")
    also: tuple[str, ...] = ()  # other JSON types accepted as they are (a source given as a word)
    max_items: int | None = None  # an array's most items
    strict_fields: bool = False  # the maxLength of each field ``properties`` declares is enforced, not only published
    refine: Callable[[str, Any], None] | None = None  # a further check of the accepted value (raises to refuse)

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self._published_type(), "description": self.doc}
        bounds = () if self.clamp else (("minimum", self.minimum), ("maximum", self.maximum))
        for key, value in (*bounds, ("maxLength", self.max_length), ("maxItems", self.max_items)):
            if value is not None:
                out[key] = value
        if self.enum:
            out["enum"] = list(self.enum)
        if self.items:
            out["items"] = {"type": self.items} if isinstance(self.items, str) else self.items
        if self.properties is not None:
            out["properties"] = self.properties
        if not _said_by_omission(self.default):
            out["default"] = self.default
        return {**out, **self.extra}

    def _published_type(self) -> str | list[str]:
        # An object stays exactly "object" even when null is accepted: some clients (the MCP Inspector)
        # parse an argument as JSON only when its schema type is exactly "object".
        if self.ref or self.also:
            return [self.type, *(self.also or ("string",))]
        return [self.type, "null"] if self.nullable and self.type != "object" else self.type

    def check(self, name: str, value: Any) -> Any:
        """The value when it is acceptable, else ToolArgumentError naming the argument. A null where null is
        accepted stands for the argument left out: its default."""
        if value is None and self.nullable:
            return self.default
        value = self._decoded(value)
        if self.clamp and (type(value) is int or (type(value) is float and math.isfinite(value))):
            value = self._bounded(name, value)  # a clamped number is moved to its bound, however far out
        if (
            self.max_length is not None
            and self.type == "string"
            and isinstance(value, str)
            and len(value) > self.max_length
        ):  # the argument's own bound first, not check_value's wider one
            raise ToolArgumentError(
                f"argument '{name}' is too long ({len(value):,} characters, at most {self.max_length:,})"
            )
        check_value(name, value)  # surrogates, NaN, 64-bit range, depth, size: whatever the declared type
        if not any(isinstance(value, _JSON_TYPES[kind]) for kind in self.also):
            value = self._typed(name, value)
            self._within(name, value)
        if self.refine is not None:
            self.refine(name, value)
        return value

    def _typed(self, name: str, value: Any) -> Any:
        """The value of the declared type, inside its bounds and enum (a clamped number moved to its bound)."""
        expected = _JSON_TYPES[self.type]
        if isinstance(value, bool) and self.type in ("integer", "number"):
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got a boolean")
        if not isinstance(value, expected):
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got {_json_type(value)}")
        if self.non_empty and isinstance(value, str) and not value.strip():
            raise ToolArgumentError(f"argument '{name}' must not be empty")
        value = self._bounded(name, value)
        if self.enum and value not in self.enum:
            raise ToolArgumentError(f"argument '{name}' must be one of {', '.join(self.enum)}, got {shown(value)}")
        return value

    def _within(self, name: str, value: Any) -> None:
        """The declared lengths: of a string, of an array and its items, of an object's declared fields."""
        if self.max_length is not None and len(value) > self.max_length:
            raise ToolArgumentError(f"argument '{name}' is too long ({len(value):,}, at most {self.max_length:,})")
        if self.max_items is not None and len(value) > self.max_items:
            raise ToolArgumentError(
                f"argument '{name}' has too many items ({len(value):,}, at most {self.max_items:,})"
            )
        if self.strict_fields and self.properties:
            _check_fields(name, value, self.properties)
        item_type = self.items if isinstance(self.items, str) else (self.items or {}).get("type")
        if item_type and any(
            not isinstance(v, _JSON_TYPES[item_type]) or isinstance(v, bool) != (item_type == "boolean") for v in value
        ):
            raise ToolArgumentError(f"argument '{name}' must be an array of {item_type}s")
        item_most = self.items.get("maxLength") if isinstance(self.items, dict) else None
        if item_most is None:
            return
        for position, item in enumerate(value):
            if isinstance(item, str) and len(item) > item_most:
                raise ToolArgumentError(
                    f"argument '{name}[{position}]' is too long ({len(item):,} characters, at most {item_most})"
                )

    def _decoded(self, value: Any) -> Any:
        """An object or array sent as JSON text (some clients can only send strings) is read as JSON; a ref
        ("mem:12") where its integer id is declared is read as that id."""
        if self.ref and isinstance(value, str):
            kind, _, number = value.partition(":")
            wellformed = number.isdigit() and number.isascii() and len(number) <= 19
            return int(number) if kind == self.ref and wellformed else value
        if self.type in ("object", "array") and isinstance(value, str):
            try:
                return json.loads(value)
            except (ValueError, RecursionError):  # not JSON, an integer over 4,300 digits, or nested ~1,000 deep
                return value  # refused below, as the wrong type
        return value

    def _bounded(self, name: str, value: Any) -> Any:
        if self.type not in ("integer", "number"):
            return value
        low, high = self.minimum, self.maximum
        if self.clamp:
            value = value if low is None else max(low, value)
            return value if high is None else min(high, value)
        if (low is not None and value < low) or (high is not None and value > high):
            raise ToolArgumentError(f"argument '{name}' must be {self._kind()}, got {shown(value)}")
        return value

    def _kind(self) -> str:
        word = {"integer": "an integer", "number": "a number", "object": "an object", "array": "an array"}
        kind = word.get(self.type, f"a {self.type}")
        if self.minimum is not None and self.maximum is not None:
            kind += f" from {self.minimum:g} to {self.maximum:g}"
        elif self.minimum is not None:
            kind += f" of at least {self.minimum:g}"
        if self.ref:
            kind += f" (or its ref, {self.ref}:<id>)"
        return kind


def _check_fields(name: str, value: dict[str, Any], properties: dict[str, Any]) -> None:
    """Each declared string field within its published maxLength (a message's id, a cue's instants)."""
    for field_name, schema in properties.items():
        field_value, most = value.get(field_name), schema.get("maxLength")
        if isinstance(field_value, str) and most is not None and len(field_value) > most:
            raise ToolArgumentError(
                f"argument '{name}.{field_name}' is too long ({len(field_value):,} characters, at most {most})"
            )


def _json_type(value: Any) -> str:
    for name, kind in (
        ("null", type(None)),
        ("a boolean", bool),
        ("an integer", int),
        ("a number", float),
        ("a string", str),
        ("an object", dict),
        ("an array", list),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _decoded_arguments(arguments: Any) -> Any:
    """A call's arguments: {} for none, an object sent as JSON text read as JSON (refused when it is not)."""
    if arguments is None:
        return {}
    return Param("object", "").check("arguments", arguments) if isinstance(arguments, str) else arguments


Demands = Callable[[dict[str, Any]], list[Demand]]


def on_agent(need: str, argument: str = "agent_id") -> Demands:
    """The demand of most tools: ``need`` on the agent the argument names ("" = every agent)."""
    return lambda bound: [Demand(bound.get(argument) or EVERY_AGENT, need)]


def on_every_agent(need: str) -> Demands:
    """A demand across every agent (a pause of the whole process, a sweep of the database)."""
    return lambda bound: [Demand(EVERY_AGENT, need)]


def no_demand(bound: dict[str, Any]) -> list[Demand]:
    return []


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    params: dict[str, Param]
    handler: Callable[..., dict[str, Any]]
    demands: Demands
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    # a write tool's answer while the session is paused (None: not a write), or the function of the runtime and
    # the bound arguments that makes it (an answer that repeats them)
    paused: dict[str, Any] | Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None
    previews: bool = False  # dry_run: true only looks, and runs while the session is paused
    failure: dict[str, Any] = field(default_factory=dict)  # the collection keys a failure still carries
    omit_agent: bool = False  # agent_id may be omitted when the caller can act on exactly one agent
    takes_session: bool = False  # the handler is given the session_key (the session controls)
    takes_principal: bool = False  # the handler is given the caller, for demands only the data can tell

    def paused_body(self, rt: Any, bound: dict[str, Any]) -> dict[str, Any]:
        """The keys of the tool's answer while paused, for these arguments."""
        return self.paused(rt, bound) if callable(self.paused) else dict(self.paused or {})

    def input_schema(self, strict: bool = False) -> dict[str, Any]:
        """The published schema; ``additionalProperties: false`` only when unknown arguments are refused
        (settings.strict_arguments), since otherwise they are ignored (docs/tools.md#unknown-arguments)."""
        schema: dict[str, Any] = {"type": "object", "properties": {name: p.schema() for name, p in self.params.items()}}
        required = [name for name, p in self.params.items() if p.required]
        if required:  # none required is JSON Schema's default: left unsaid, as CPersona leaves it on some tools
            schema["required"] = required
        return {**schema, "additionalProperties": False} if strict else schema

    def unknown(self, arguments: Any) -> list[str]:
        """The names among ``arguments`` the tool does not take, sorted (``named``)."""
        arguments = _decoded_arguments(arguments)
        if not isinstance(arguments, dict):
            return []
        return named(n for n in arguments if n not in self.params)

    def bind(self, arguments: Any, strict: bool = True) -> dict[str, Any]:
        """Validated arguments with defaults filled in; the first problem raises ToolArgumentError. An argument
        the tool does not take is such a problem when ``strict``, else it is left out (``unknown`` names it)."""
        arguments = _decoded_arguments(arguments)
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"arguments of '{self.name}' must be an object, got {_json_type(arguments)}")
        unknown = sorted((name for name in arguments if name not in self.params), key=str)
        if unknown and strict:
            names = ", ".join(shown(name, 40) for name in unknown[:5])
            raise ToolArgumentError(
                f"unknown argument(s) for '{self.name}': {names} (accepted: {', '.join(self.params)})"
            )
        bound = {}
        for name, param in self.params.items():
            value = arguments.get(name, _MISSING)
            if value is _MISSING:
                if param.required:
                    raise ToolArgumentError(f"argument '{name}' is required: {param.doc}")
                # a fresh copy: a handler may extend the list or object it was given
                bound[name] = (
                    json.loads(json.dumps(param.default)) if isinstance(param.default, (list, dict)) else param.default
                )
            else:
                bound[name] = param.check(name, value)
        return bound


__all__ = ["READ", "WRITE", "Demand", "Demands", "Param", "Tool", "no_demand", "on_agent", "on_every_agent"]
