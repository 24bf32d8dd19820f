"""The explorer and the trace view in a real browser: headless Chromium (the system's /usr/bin/chromium, driven by
Playwright; no browser is downloaded) against ``cuedrecall ui``'s app on a temporary store.

Where the browser cannot be had these tests fail, naming why (``make test`` installs it: the Makefile's
``browser`` target). ``CUEDRECALL_SCREENSHOTS=docs/`` also writes the README's screenshots from the real pages.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.ui.app import make_app, running
from cuedrecall.ui.trace_html import trace_page
from tests.conftest import NOW, make_settings, snapshot
from tests.ui_store import AGENT, CUE, EVIDENCE_TEXT, LIMIT, QUESTION, SCRIPT_TEXT, biggest_lift, cued_recall, fill

TOKEN = "browser-test-token"
CHROMIUM = os.environ.get("CUEDRECALL_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = os.environ.get("CUEDRECALL_SCREENSHOTS", "")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, or a failure that says why it cannot be had (never a silent skip)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the playwright package is missing: `make test` installs it (the test extra)")
    executable = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if not executable:
        pytest.fail(
            f"no Chromium at {CHROMIUM}: `make test` installs Debian's chromium package when run as root "
            "(apt-get install -y chromium); or set CUEDRECALL_CHROMIUM to a Chromium binary"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, dict[str, str]]]:
    path = tmp_path_factory.mktemp("browser") / "m.db"
    with Memory(path, settings=make_settings(), clock=fixed_clock(NOW)) as memory:
        yield memory, fill(memory)


@pytest.fixture(scope="module")
def read_only(store: tuple[Memory, dict[str, str]]) -> Iterator[str]:
    with running(make_app(store[0], TOKEN)) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, device_scale_factor=1)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, errors


def shoot(page: Any, name: str) -> None:
    """A README screenshot of the page as it is, kept small: the viewport only, quantized to a palette."""
    path = Path(SCREENSHOTS) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path))
    try:
        from PIL import Image
    except ImportError:  # the PNG stays as Chromium wrote it
        return
    with Image.open(path) as shot:
        small = shot.convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def open_explorer(page: Any, url: str, token: str = TOKEN) -> None:
    page.goto(f"{url}/?token={token}")
    page.wait_for_selector("body[data-ready='1']")
    page.wait_for_selector("#rows tbody tr")


def search(page: Any, *, cue: bool = True) -> None:
    page.click("button[data-tab='search']")
    page.fill("#query", QUESTION)
    page.fill("#limit", str(LIMIT))
    if cue:
        page.fill("#cue-after", CUE["after"])
        page.fill("#cue-before", CUE["before"])
        page.select_option("#confidence", CUE["confidence"])
    page.click("#search-go")
    page.wait_for_selector("#trace .trace-view")


def test_a_cued_recall_shows_the_evidence_its_move_and_a_gate_reason(
    page: Any, read_only: str, store: tuple[Memory, dict[str, str]]
) -> None:
    memory, refs = store
    trace = cued_recall(memory)["trace"]
    move = biggest_lift(trace)
    evidence = refs[EVIDENCE_TEXT]
    assert move["ref"] == evidence
    open_explorer(page, read_only)
    search(page)
    answer = page.locator(f"#answer li[data-ref='{evidence}']")
    assert EVIDENCE_TEXT in answer.inner_text()  # the answer beside the trace, the evidence row in it
    moved = page.locator(f"#trace table.moves tr[data-ref='{evidence}']")
    cells = moved.locator("td").all_inner_texts()
    assert cells[1:4] == [f"#{move['from'] + 1}", f"#{move['to'] + 1}", f"up {move['from'] - move['to']}"]
    dropped = next(d for d in trace["gate"]["decisions"] if not d["passed"])
    gate_row = page.locator(f"#trace table.gate tr[data-ref='{dropped['ref']}']")
    assert gate_row.locator("td.decision").inner_text() == f"dropped: {dropped['reason']}"
    assert page.locator("#trace mark.uncovered").count() == len(trace["coverage"]["uncovered"])
    # follow the row: hovering highlights it at every stage, a click writes its journey
    answer.locator(".ref").hover()
    assert page.locator(f".hl[data-ref='{evidence}']").count() >= 4
    answer.locator(".ref").click()
    journey = page.locator("#trace .journey").inner_text()
    assert journey.startswith(evidence) and f"moved by the cue #{move['from'] + 1} \u2192 #{move['to'] + 1}" in journey
    if SCREENSHOTS:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, "explorer-search.png")


def test_memory_text_is_shown_as_text_never_run(
    page: Any, read_only: str, store: tuple[Memory, dict[str, str]]
) -> None:
    _memory, refs = store
    open_explorer(page, read_only)
    row = page.locator(f"#rows tr[data-ref='{refs[SCRIPT_TEXT]}'] td.text")
    assert row.inner_text() == SCRIPT_TEXT
    assert page.evaluate("window.__pwned === undefined")
    assert page.locator("#rows img, #rows script").count() == 0
    if SCREENSHOTS:
        shoot(page, "explorer.png")


def test_read_only_offers_no_change_and_refuses_one(
    page: Any, read_only: str, store: tuple[Memory, dict[str, str]]
) -> None:
    memory, refs = store
    open_explorer(page, read_only)
    assert page.locator("#mode").inner_text() == "read-only"
    assert page.locator("#rows button").count() == 0
    before = snapshot(memory, (AGENT,))
    status = page.evaluate(
        """async ([token, id]) => (await fetch('/api/write', {method: 'POST',
        headers: {'X-CuedRecall-Token': token, 'Content-Type': 'application/json'},
        body: JSON.stringify({tool: 'delete_memory', confirm: true, arguments: {memory_id: id, agent_id: 'me'}})
        })).status""",
        [TOKEN, int(refs[EVIDENCE_TEXT].split(":")[1])],
    )
    assert status == 403 and snapshot(memory, (AGENT,)) == before


def test_without_the_token_nothing_loads_or_changes(
    page: Any, read_only: str, store: tuple[Memory, dict[str, str]]
) -> None:
    memory, refs = store
    before = snapshot(memory, (AGENT,))
    for url in (f"{read_only}/", f"{read_only}/?token=wrong"):
        response = page.goto(url)
        assert response.status == 403 and "token" in page.content()
    status = page.evaluate(
        """async (id) => (await fetch('/api/write', {method: 'POST',
        headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({tool: 'delete_memory', confirm: true, arguments: {memory_id: id, agent_id: 'me'}})
        })).status""",
        int(refs[EVIDENCE_TEXT].split(":")[1]),
    )
    assert status == 403 and snapshot(memory, (AGENT,)) == before


def test_with_write_a_memory_is_edited_locked_and_deleted_after_confirming(
    page: Any, browser: Any, tmp_path: Path
) -> None:
    with Memory(tmp_path / "w.db", settings=make_settings(), clock=fixed_clock(NOW)) as memory:
        refs = fill(memory)
        ref = refs[EVIDENCE_TEXT]
        with running(make_app(memory, TOKEN, write=True)) as url:
            open_explorer(page, url)
            assert page.locator("#mode").inner_text() == "write enabled"
            row = page.locator(f"#rows tr[data-ref='{ref}']")
            row.get_by_role("button", name="Edit").click()
            row.locator("textarea").fill("New brake pads and a trued rear wheel, June.")
            row.get_by_role("button", name="Save").click()
            page.wait_for_selector(f"#rows tr[data-ref='{ref}'] td.text:has-text('trued rear wheel')")
            assert (
                memory.get_contents(agent_id=AGENT, refs=[ref])["items"][0]["content"]
                == "New brake pads and a trued rear wheel, June."
            )
            row.get_by_role("button", name="Lock").click()
            page.wait_for_selector(f"#rows tr.locked[data-ref='{ref}']")
            assert next(m for m in memory.list_memories(agent_id=AGENT)["memories"] if m["ref"] == ref)["locked"]
            row.get_by_role("button", name="Delete").click()  # a lock holds: the tool refuses
            row.get_by_role("button", name="Yes, delete").click()
            page.wait_for_selector("#toast.error")
            assert "locked" in page.locator("#toast").inner_text()
            row.get_by_role("button", name="Unlock").click()
            page.wait_for_selector(f"#rows tr:not(.locked)[data-ref='{ref}']")
            row.get_by_role("button", name="Delete").click()
            assert "for good?" in row.inner_text()
            row.get_by_role("button", name="Cancel").click()  # asked, and declined: nothing happens
            assert memory.get_contents(agent_id=AGENT, refs=[ref])["items"]
            row.get_by_role("button", name="Delete").click()
            row.get_by_role("button", name="Yes, delete").click()
            page.wait_for_selector(f"#rows tr[data-ref='{ref}']", state="detached")
            assert memory.get_contents(agent_id=AGENT, refs=[ref])["missing"] == [ref]
            page.click("button[data-tab='profile']")
            page.fill("#profile-edit", "Rides a gravel bike now.")
            page.click("#profile-save")
            page.wait_for_selector("#profile-text:has-text('gravel')")
            assert memory.get_profile(agent_id=AGENT)["profile"] == "Rides a gravel bike now."


def test_the_trace_view_file_follows_a_row(page: Any, store: tuple[Memory, dict[str, str]], tmp_path: Path) -> None:
    memory, refs = store
    answer = cued_recall(memory)
    file = tmp_path / "trace.html"
    file.write_text(trace_page(answer, question=QUESTION), encoding="utf-8")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(file.as_uri())
    evidence = refs[EVIDENCE_TEXT]
    page.locator(f"table.moves .ref[data-ref='{evidence}']").click()
    assert "moved by the cue" in page.locator(".journey").inner_text()
    assert page.locator(f".pin[data-ref='{evidence}']").count() >= 4
    assert requests == [file.as_uri()]  # nothing but the file itself
    if SCREENSHOTS:
        page.set_viewport_size({"width": 1100, "height": 900})
        page.locator("section.cue").scroll_into_view_if_needed()
        shoot(page, "trace-view.png")


def test_every_tab_opens_and_the_trace_log_opens_an_entry(page: Any, tmp_path: Path) -> None:
    log = tmp_path / "traces.jsonl"
    settings = make_settings(trace_log=str(log))
    with Memory(tmp_path / "t.db", settings=settings, clock=fixed_clock(NOW)) as memory:
        fill(memory)
        memory.archive_episode(
            agent_id=AGENT, summary="Talked through the June brake repair.", start_time="2025-06-12T18:40:00+00:00"
        )
        cued_recall(memory)
        with running(make_app(memory, TOKEN, traces=log)) as url:
            open_explorer(page, url)
            page.click("button[data-tab='episodes']")
            page.wait_for_selector("#rows tbody tr[data-ref^='ep:']")
            page.click("button[data-tab='profile']")
            page.wait_for_selector("#profile-text:has-text('road bike')")
            assert page.locator("#profile-editor").is_hidden()  # read-only: no editor
            page.click("button[data-tab='traces']")
            page.locator("#trace-rows tbody tr").first.click()
            page.wait_for_selector("#trace-entry .trace-view table.moves")
            assert "trace log entry" in page.locator("#trace-entry").inner_text()
