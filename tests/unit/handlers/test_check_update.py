"""check_update is honest: which release runs, how it was installed, whether the index may be asked; it never
says it checked when it did not, never fetches unless the operator allows it, and never installs unless asked
(docs/tools.md#check_update).

The index is never reached from here: ``update_check.fetch`` and ``update_check.install`` are replaced.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuedrecall.api import Memory
from cuedrecall.handlers import update_check
from cuedrecall.handlers.update_check import Unanswered, decide, version_of
from cuedrecall.version import __version__
from tests.conftest import make_settings, open_memory


def page(*versions: str, yanked: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PEP 691 page holding a wheel of each version (``yanked``: version -> its yanked value)."""
    files = [{"filename": f"cuedrecall-{v}-py3-none-any.whl", "yanked": (yanked or {}).get(v, False)} for v in versions]
    return {"name": "cuedrecall", "versions": list(versions), "files": files}


@pytest.fixture(autouse=True)
def nothing_known() -> Iterator[None]:
    update_check.forget()
    yield
    update_check.forget()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every ask of the index, recorded; none reaches the network."""
    asked: list[str] = []

    def fetch(url: str) -> Any:
        asked.append(url)
        raise AssertionError("the index was asked")

    monkeypatch.setattr(update_check, "fetch", fetch)
    return asked


@pytest.fixture
def allowed(tmp_path: Path) -> Iterator[Memory]:
    with open_memory(tmp_path / "m.db", settings=make_settings(update_check=True)) as memory:
        yield memory


def answering(monkeypatch: pytest.MonkeyPatch, answer: Any) -> list[str]:
    asked: list[str] = []

    def fetch(url: str) -> Any:
        asked.append(url)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(update_check, "fetch", fetch)
    return asked


def test_without_the_operators_permission_it_says_it_did_not_check_and_asks_nothing(
    memory: Memory, no_network: list[str]
) -> None:
    answer = memory.check_update()
    assert answer["ok"] is True and answer["checked"] is False and answer["state"] == "disabled"
    assert answer["running"] == __version__ and answer["available"] is None and answer["checked_at"] is None
    assert answer["index"]["may_ask"] is False and "CUEDRECALL_UPDATE_CHECK" in answer["not_checked"]
    assert answer["install"]["method"] in ("wheel", "editable", "source")
    refreshed = memory.check_update(refresh=True)
    assert refreshed["ok"] is False and "nothing was fetched" in refreshed["error"]
    assert refreshed["refreshed"] is False and refreshed["checked"] is False
    assert no_network == []


def test_a_bare_call_never_asks_the_index_even_when_allowed(allowed: Memory, no_network: list[str]) -> None:
    answer = allowed.check_update()
    assert answer["ok"] is True and answer["checked"] is False and answer["state"] == "unknown"
    assert "refresh: true" in answer["not_checked"] and no_network == []


def test_refresh_asks_the_index_and_reports_a_newer_final_release(
    allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = answering(monkeypatch, page(__version__, "99.0.0", "100.0.0a1"))
    answer = allowed.check_update(refresh=True)
    assert answer["ok"] is True and answer["checked"] is True and answer["refreshed"] is True
    assert answer["state"] == "newer" and answer["kind"] == "newer" and answer["available"] == "99.0.0"
    assert "99.0.0" in answer["message"] and answer["checked_at"]
    assert asked == [allowed.settings.update_index_url]
    again = allowed.check_update()  # the verdict stands in this process; nothing is asked again
    assert again["available"] == "99.0.0" and again["refreshed"] is False and len(asked) == 1


def test_refresh_at_most_once_a_minute(allowed: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = answering(monkeypatch, page(__version__))
    assert allowed.check_update(refresh=True)["state"] == "ok"
    second = allowed.check_update(refresh=True)
    assert second["ok"] is True and second["refreshed"] is False and second["state"] == "ok" and len(asked) == 1


def test_an_index_that_does_not_answer_is_said_so_and_the_verdict_is_not_invented(
    allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering(monkeypatch, Unanswered("ConnectError: no route"))
    answer = allowed.check_update(refresh=True)
    assert answer["ok"] is False and "did not answer" in answer["error"]
    assert answer["checked"] is False and answer["state"] == "unknown" and answer["available"] is None


def test_a_version_that_is_not_on_the_index_is_unlisted_not_outdated(
    allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering(monkeypatch, page("0.0.1", "99.0.0") if __version__ not in ("0.0.1", "99.0.0") else page("98.0"))
    answer = allowed.check_update(refresh=True)
    assert answer["state"] == "unlisted" and answer["kind"] is None and "message" not in answer


@pytest.mark.parametrize(
    ("index", "state", "kind", "available"),
    [
        (page("1.0", "1.1"), "newer", "newer", "1.1"),
        (page("1.0", "1.1rc1"), "ok", None, None),  # a pre-release is never offered
        (page("1.0", yanked={"1.0": "broken migration"}), "yanked", "yanked", None),
        (page("1.0", "1.1", yanked={"1.0": True}), "yanked", "yanked", "1.1"),
        (page("0.9"), "unlisted", None, None),
        ({"versions": "1.0"}, "unknown", None, None),
        ("not a page", "unknown", None, None),
    ],
)
def test_the_verdict_of_an_index_page(index: Any, state: str, kind: str | None, available: str | None) -> None:
    verdict = decide(index, "1.0")
    assert (verdict["state"], verdict["kind"], verdict["available"]) == (state, kind, available)


def test_a_yank_counts_only_when_every_file_of_the_version_is_withdrawn() -> None:
    both = page("1.0")
    both["files"].append({"filename": "cuedrecall-1.0.tar.gz", "yanked": False})
    both["files"][0]["yanked"] = "wheel only"
    assert decide(both, "1.0")["state"] == "ok"
    assert decide(page("1.0", yanked={"1.0": "bad"}), "1.0")["reason"] == "bad"


def test_the_final_of_a_running_prerelease_is_named_so() -> None:
    assert decide(page("1.0rc1", "1.0"), "1.0rc1")["kind"] == "prerelease_final"


@pytest.mark.parametrize(
    "ordered",
    [["1.0.dev1", "1.0a1", "1.0a2", "1.0b1", "1.0rc1", "1.0", "1.0.post1", "1.0.1", "1.1", "2!0.1"]],
)
def test_versions_sort_in_pep_440_order(ordered: list[str]) -> None:
    parsed = [version_of(text) for text in ordered]
    assert all(p is not None for p in parsed)
    assert sorted(parsed) == parsed  # type: ignore[type-var]
    assert version_of("1.0") == version_of("1.0.0") and version_of("1.0+local") == version_of("1.0")
    assert version_of("not a version") is None and version_of(None) is None


@given(st.lists(st.integers(0, 30), min_size=1, max_size=4), st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_release_numbers_compare_as_numbers(a: list[int], b: list[int]) -> None:
    def trimmed(parts: list[int]) -> list[int]:
        out = list(parts)
        while len(out) > 1 and out[-1] == 0:
            out.pop()
        return out

    left, right = version_of(".".join(map(str, a))), version_of(".".join(map(str, b)))
    assert left is not None and right is not None
    assert (left < right) == (trimmed(a) < trimmed(b))


def test_apply_never_runs_without_permission_or_a_known_newer_release(
    memory: Memory, allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(update_check, "install", lambda argv: ran.append(argv) or (0, []))
    refused = memory.check_update(apply=True)
    assert refused["ok"] is False and refused["apply_result"]["applied"] is False
    assert "nothing was installed" in refused["apply_result"]["reason"]
    unknown = allowed.check_update(apply=True)  # the index was never asked: nothing newer is known
    assert unknown["ok"] is False and "no newer release is known" in unknown["apply_result"]["reason"]
    assert ran == []


def _install_as(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    real = update_check.detect_install

    def detect(available: str | None = None) -> dict[str, Any]:
        return {**real(available), "method": method, "apply_supported": method == "wheel"}

    monkeypatch.setattr(update_check, "detect_install", detect)


def test_apply_installs_the_offered_release_into_a_wheel_install_only(
    allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering(monkeypatch, page(__version__, "99.0.0"))
    assert allowed.check_update(refresh=True)["available"] == "99.0.0"
    ran: list[list[str]] = []
    monkeypatch.setattr(update_check, "install", lambda argv: ran.append(argv) or (0, ["Successfully installed"]))
    _install_as(monkeypatch, "editable")
    editable = allowed.check_update(apply=True)
    assert editable["ok"] is False and "editable" in editable["apply_result"]["reason"] and ran == []
    _install_as(monkeypatch, "wheel")
    applied = allowed.check_update(apply=True)
    assert applied["ok"] is True and applied["apply_result"]["applied"] is True
    assert applied["apply_result"]["restart_required"] is True and applied["running"] == __version__
    assert ran and ran[0][-1] == "cuedrecall==99.0.0" and ran[0][1:4] == ["-m", "pip", "install"]


def test_a_failed_install_is_ok_false_with_the_installers_output(
    allowed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    answering(monkeypatch, page(__version__, "99.0.0"))
    allowed.check_update(refresh=True)
    _install_as(monkeypatch, "wheel")
    monkeypatch.setattr(update_check, "install", lambda argv: (1, ["ERROR: no matching distribution"]))
    failed = allowed.check_update(apply=True)
    assert failed["ok"] is False and failed["apply_result"]["exit_code"] == 1
    assert failed["apply_result"]["output_tail"] == ["ERROR: no matching distribution"]


def test_the_install_is_named_for_the_code_that_runs() -> None:
    setup = update_check.detect_install("99.0.0")
    assert setup["method"] in ("wheel", "editable", "source") and setup["restart_required"] is True
    if setup["method"] == "wheel":
        assert setup["command"].endswith("cuedrecall==99.0.0")
    assert setup["apply_supported"] is (setup["method"] == "wheel")


def test_reading_the_verdict_needs_read_on_every_agent_and_apply_needs_write() -> None:
    from cuedrecall.access import EVERY_AGENT, READ, WRITE
    from cuedrecall.tools import TOOLS

    demands = TOOLS["check_update"].demands
    assert [(d.agent, d.need) for d in demands({"apply": False})] == [(EVERY_AGENT, READ)]
    assert [(d.agent, d.need) for d in demands({"apply": True})] == [(EVERY_AGENT, WRITE)]
