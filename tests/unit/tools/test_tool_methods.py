"""Every tool is a method of ``Memory`` naming its handler, and every such method is a tool
(docs/architecture.md#adding-a-tool): a tool is one declaration in tools/ and one method in api.py."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.tools import TOOLS


def _tool_methods() -> dict[str, str]:
    """Memory's methods that run a tool (``self._tool(handler, ...)``), each with the handler it names."""
    tree = ast.parse(inspect.getsource(Memory))
    found = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for call in ast.walk(node):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "_tool"
                and call.args
            ):
                found[node.name] = ast.unparse(call.args[0])
    return found


def test_every_tool_has_a_method_and_every_tool_method_is_a_tool() -> None:
    methods = _tool_methods()
    missing = sorted(set(TOOLS) - set(methods))
    assert not missing, f"tools without a Memory method (add `def <tool>(self, **arguments)` in api.py): {missing}"
    assert sorted(set(methods) - set(TOOLS)) == []


def test_each_method_names_its_own_tools_handler() -> None:
    for name, handler in _tool_methods().items():
        declared = TOOLS[name].handler
        assert handler.rpartition(".")[2] == declared.__name__, (name, handler, declared.__name__)


def test_each_method_runs_its_tool_through_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """A method is exactly ``call(name, arguments)``: the MCP path and the method validate and dispatch alike."""
    calls: list[tuple[str, Any, dict[str, Any]]] = []

    def call(self: Memory, tool: str, arguments: Any = None, **library: Any) -> dict[str, Any]:
        calls.append((tool, arguments, library))
        return {"ok": True}

    monkeypatch.setattr(Memory, "call", call)
    memory = Memory.__new__(Memory)  # no store: call is replaced
    for name in TOOLS:
        assert getattr(memory, name)(agent_id="a", x=1) == {"ok": True}
        tool, arguments, library = calls.pop()
        assert (tool, arguments) == (name, {"agent_id": "a", "x": 1})
        assert library == ({"progress": None} if name == "import_memories" else {})


def test_a_name_that_is_no_tool_is_no_method() -> None:
    assert not hasattr(Memory, "forget_everything")
