"""The compatibility session (benchmarks/compat.py) against our server over MCP stdio: every step must pass.

The session calls every tool of our surface with every argument form a CPersona 2.6
client sends and checks the response fields such a client reads. The same script runs
against CPersona 2.6.14 in ``python -m benchmarks.compat`` (benchmarks/results/compat.md);
this test needs only our server, started as a subprocess (hash embedder, a temporary
database and export folder).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from benchmarks import compat
from cuedrecall.tools import TOOLS


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[compat.StepResult]:
    folder = tmp_path_factory.mktemp("compat")

    async def session() -> list[compat.StepResult]:
        async with compat.our_compat_server(folder) as server:
            return await compat.run_session(server, name="ours")

    return anyio.run(session)


def test_every_step_of_the_session_passes_against_our_server(results: list[compat.StepResult]) -> None:
    failed = {r.label: r.failures for r in results if not r.passed}
    assert not failed, "\n".join(f"{label}: {'; '.join(problems)}" for label, problems in failed.items())
    assert len(results) == len(compat.SESSION)


def test_the_session_calls_every_tool_of_our_surface() -> None:
    assert {step.tool for step in compat.SESSION} == set(TOOLS)


def test_the_session_writes_nothing_outside_its_export_folder(results: list[compat.StepResult]) -> None:
    exported = next(r for r in results if r.label == "export_memories")
    assert Path(exported.response["path"]).parent.name == "exports"
    assert not (Path(compat.REPO) / compat.EXPORT_NAME).exists()


def test_step_labels_are_unique_and_every_reason_names_a_step() -> None:
    labels = [step.label for step in compat.SESSION]
    assert len(labels) == len(set(labels))
    assert set(compat.REASONS) <= set(labels)
    assert all(label.count(".") == 0 for label in labels)  # a placeholder is ${label.path}


def test_every_placeholder_names_an_earlier_step() -> None:
    seen: set[str] = set()
    for step in compat.SESSION:
        text = repr(step.arguments) + repr(step.expect) + repr(step.ours) + repr(step.cpersona)
        for label in compat._PLACEHOLDER.findall(text):
            assert label[0] in seen, f"{step.label} refers to {label[0]!r}, which is not an earlier step"
        seen.add(step.label)
