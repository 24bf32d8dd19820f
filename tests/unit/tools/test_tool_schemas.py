"""The published schemas are ones an LLM and a strict client can follow.

Every tool's input schema is valid JSON Schema; every object argument is published as
exactly ``"object"`` (the MCP Inspector only parses an argument as JSON then); the time
cue is fully declared; and the README's examples pass the schema and run.
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from cuedrecall.api import Memory
from cuedrecall.tools import TOOLS
from tests.conftest import FIXTURES, REPO_ROOT

README = REPO_ROOT / "README.md"
EXAMPLE = re.compile(r"<!-- tool-example: (\w+) -->\s*```json\n(.*?)```", re.S)


def examples() -> list[tuple[str, dict[str, Any]]]:
    return [(name, json.loads(body)) for name, body in EXAMPLE.findall(README.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("name", list(TOOLS))
def test_every_published_schema_is_valid_json_schema_with_every_argument_described(name: str) -> None:
    schema = TOOLS[name].input_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for argument, declared in schema["properties"].items():
        assert declared.get("description"), f"{name}.{argument} has no description"


@pytest.mark.parametrize("name", list(TOOLS))
def test_an_object_argument_is_published_as_exactly_object(name: str) -> None:
    for argument, param in TOOLS[name].params.items():
        if param.type == "object" and not param.also:
            assert TOOLS[name].input_schema()["properties"][argument]["type"] == "object", (name, argument)


def test_the_time_cue_is_declared_field_by_field() -> None:
    cue = TOOLS["recall"].input_schema()["properties"]["time_cue"]
    assert set(cue["properties"]) == {"after", "before", "ago", "confidence"}
    assert cue["required"] == ["confidence"] and cue["additionalProperties"] is False
    validator = jsonschema.Draft202012Validator(cue)
    assert validator.is_valid({"ago": "long_ago", "confidence": "vague"})
    assert validator.is_valid({"ago": {"unit": "weeks", "value": 2}, "confidence": "sure"})
    assert not validator.is_valid({"after": "2025-01-01"})  # confidence is required
    assert not validator.is_valid({"ago": {"unit": "years", "value": 2}, "confidence": "sure"})


def test_the_readme_shows_examples_and_each_passes_its_tools_schema_and_runs(memory: Memory) -> None:
    found = examples()
    assert {name for name, _ in found} >= {"store", "recall"}
    for name, arguments in found:
        jsonschema.validate(arguments, TOOLS[name].input_schema())
        result = memory.call(name, arguments)
        assert result.get("ok") is not False, (name, result)


# CPersona 2.6.14's tools/list, recorded (tests/fixtures/README.md)
CPERSONA_TOOLS = FIXTURES / "cpersona-2.6.14-tools.json"


def test_the_tool_list_is_every_tool_a_cpersona_client_expects() -> None:
    assert set(TOOLS) == set(json.loads(CPERSONA_TOOLS.read_text(encoding="utf-8")))
    assert len(TOOLS) == 34


def test_every_argument_a_cpersona_client_may_send_is_accepted() -> None:
    """archive_episode's start_time and end_time are ours in addition."""
    for name, declared in json.loads(CPERSONA_TOOLS.read_text(encoding="utf-8")).items():
        if name in TOOLS:
            schema = declared.get("inputSchema", declared)
            assert set(schema.get("properties", {})) <= set(TOOLS[name].params), name
