"""cuedrecall/ui/app.py over HTTP (Starlette's TestClient): the token, read-only refusals, writes through the tools,
paging and the date filter, search with its trace view, the trace log."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from cuedrecall.ui.app import TOKEN_HEADER, make_app
from tests.conftest import NOW, REPO_ROOT, make_settings, snapshot
from tests.ui_store import AGENT, CUE, EVIDENCE_TEXT, LIMIT, QUESTION, SCRIPT_TEXT, biggest_lift, fill

TOKEN = "secret-token"
AUTH = {TOKEN_HEADER: TOKEN}


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[Memory, dict[str, str], Path]]:
    log = tmp_path / "traces.jsonl"
    with Memory(tmp_path / "m.db", settings=make_settings(trace_log=str(log)), clock=fixed_clock(NOW)) as memory:
        refs = fill(memory)
        yield memory, refs, log


def client(memory: Memory, *, write: bool = False, traces: Path | None = None) -> TestClient:
    return TestClient(make_app(memory, TOKEN, write=write, traces=traces), base_url="http://127.0.0.1")


def test_every_request_needs_the_token(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, _, _ = opened
    c = client(memory, write=True)
    for method, path in (
        ("GET", "/"),
        ("GET", "/api/info"),
        ("GET", "/api/agents"),
        ("GET", "/api/records"),
        ("POST", "/api/search"),
        ("POST", "/api/write"),
        ("GET", "/api/traces"),
        ("GET", "/nowhere"),
    ):
        for headers in ({}, {TOKEN_HEADER: "wrong"}, {TOKEN_HEADER: TOKEN + "x"}):
            assert c.request(method, path, headers=headers, json={}).status_code == 403, (method, path, headers)
    assert c.get(f"/?token={TOKEN}").status_code == 200  # the page may take it from the URL
    assert c.get(f"/api/agents?token={TOKEN}").status_code == 403  # the API only from the header
    before = snapshot(memory, (AGENT,))
    response = c.post(
        f"/api/write?token={TOKEN}",
        json={"tool": "delete_memory", "confirm": True, "arguments": {"memory_id": 1, "agent_id": AGENT}},
    )
    assert response.status_code == 403 and snapshot(memory, (AGENT,)) == before


def test_the_page_is_self_contained_with_a_strict_policy(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, _, _ = opened
    response = client(memory).get("/", headers=AUTH)
    page = response.text
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy and "script-src 'nonce-" in policy
    assert response.headers["x-frame-options"] == "DENY" and response.headers["cache-control"] == "no-store"
    assert "http://" not in page and "https://" not in page and 'id="agent"' in page
    assert page.count("<script nonce=") == 2


def test_read_only_refuses_every_write(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, refs, _ = opened
    c = client(memory)
    assert c.get("/api/info", headers=AUTH).json()["write"] is False
    before = snapshot(memory, (AGENT,))
    evidence = int(refs[EVIDENCE_TEXT].split(":")[1])
    for tool, arguments in (
        ("update_memory", {"memory_id": evidence, "content": "changed"}),
        ("delete_memory", {"memory_id": evidence}),
        ("lock_memory", {"memory_id": evidence}),
        ("update_profile", {"profile": "changed"}),
    ):
        response = c.post(
            "/api/write",
            headers=AUTH,
            json={"tool": tool, "confirm": True, "arguments": {**arguments, "agent_id": AGENT}},
        )
        assert response.status_code == 403 and "read-only" in response.json()["error"]
    assert c.get("/api/write", headers=AUTH).status_code == 405
    assert snapshot(memory, (AGENT,)) == before


def test_writes_go_through_the_tools_with_their_rules(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, refs, _ = opened
    c = client(memory, write=True)
    evidence = int(refs[EVIDENCE_TEXT].split(":")[1])

    def write(tool: str, confirm: bool = False, **arguments: Any) -> dict[str, Any]:
        response = c.post(
            "/api/write",
            headers=AUTH,
            json={"tool": tool, "arguments": {"agent_id": AGENT, **arguments}, "confirm": confirm},
        )
        return response.json()

    assert write("update_memory", memory_id=evidence, content="New brake pads and a trued wheel.")["ok"] is True
    assert (
        memory.get_contents(agent_id=AGENT, refs=[f"mem:{evidence}"])["items"][0]["content"]
        == "New brake pads and a trued wheel."
    )
    assert write("lock_memory", memory_id=evidence)["ok"] is True
    refused = write("update_memory", memory_id=evidence, content="again")
    assert refused["ok"] is False and "locked" in refused["error"]
    assert write("delete_memory", confirm=True, memory_id=evidence)["ok"] is False  # a lock holds
    assert write("unlock_memory", memory_id=evidence)["ok"] is True
    unconfirmed = c.post(
        "/api/write",
        headers=AUTH,
        json={"tool": "delete_memory", "arguments": {"memory_id": evidence, "agent_id": AGENT}},
    )
    assert unconfirmed.status_code == 400 and "confirm" in unconfirmed.json()["error"]
    assert write("delete_memory", confirm=True, memory_id=evidence)["ok"] is True
    assert memory.get_contents(agent_id=AGENT, refs=[f"mem:{evidence}"])["missing"] == [f"mem:{evidence}"]
    assert write("update_profile", profile="Rides a gravel bike now.")["ok"] is True
    assert memory.get_profile(agent_id=AGENT)["profile"] == "Rides a gravel bike now."
    invalid = write("update_memory", memory_id=0, content="x")
    assert invalid["ok"] is False and "memory_id" in invalid["error"]  # the tool's own validation
    other = c.post(
        "/api/write",
        headers=AUTH,
        json={"tool": "delete_agent_data", "confirm": True, "arguments": {"agent_id": AGENT}},
    )
    assert other.status_code == 400 and memory.list_memories(agent_id=AGENT)["count"] > 0


def test_agents_and_paging_newest_first_with_a_date_filter(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, refs, _ = opened
    c = client(memory)
    agents = c.get("/api/agents", headers=AUTH).json()["agents"]
    assert agents == [
        {"agent_id": AGENT, "memories": len(refs), "episodes": 0, "projects": [""], "channels": [""], "profile": True}
    ]
    newest_first = sorted(refs.values(), key=lambda r: -int(r.split(":")[1]))
    seen, before_id = [], None
    while True:
        page = c.get(
            "/api/records",
            headers=AUTH,
            params={
                "kind": "memories",
                "agent_id": AGENT,
                "limit": 3,
                **({"before_id": before_id} if before_id else {}),
            },
        ).json()
        seen += [row["ref"] for row in page["rows"]]
        assert page["totals"]["memories"] == len(refs)
        before_id = page["next_before_id"]
        if before_id is None:
            break
    assert seen == newest_first
    offset = c.get("/api/records", headers=AUTH, params={"agent_id": AGENT, "limit": 2, "offset": 2}).json()
    assert [row["ref"] for row in offset["rows"]] == newest_first[2:4]
    june = c.get(
        "/api/records", headers=AUTH, params={"agent_id": AGENT, "after": "2025-06-01", "before": "2025-06-30"}
    ).json()
    assert {row["ref"] for row in june["rows"]} == {refs[EVIDENCE_TEXT], refs[SCRIPT_TEXT]}
    assert june["span"] == ["2025-02-03T10:00:00+00:00", "2025-09-29T10:00:00+00:00"]
    for params in ({"limit": 0}, {"limit": 500}, {"limit": "x"}, {"after": "June"}, {"kind": "blocks"}):
        response = c.get("/api/records", headers=AUTH, params={"agent_id": AGENT, **params})
        assert response.status_code == 400 and response.json()["ok"] is False, params
    episodes = c.get("/api/records", headers=AUTH, params={"agent_id": AGENT, "kind": "episodes"}).json()
    assert episodes["rows"] == [] and episodes["kind"] == "episodes"


def test_search_answers_beside_its_trace_view(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, refs, log = opened
    c = client(memory, traces=log)
    body = {
        "tool": "recall",
        "agent_id": AGENT,
        "project_id": "*",
        "channel": "",
        "query": QUESTION,
        "limit": LIMIT,
        "time_cue": {**CUE, "after": CUE["after"], "before": CUE["before"]},
    }
    found = c.post("/api/search", headers=AUTH, json=body).json()
    assert found["ok"] is True and "trace" not in found["answer"]
    assert refs[EVIDENCE_TEXT] in [m["ref"] for m in found["answer"]["messages"]]
    fragment = found["trace_html"]
    trace = memory.recall(agent_id=AGENT, query=QUESTION, limit=LIMIT, time_cue=CUE, trace=True)["trace"]
    move = biggest_lift(trace)
    assert move["ref"] == refs[EVIDENCE_TEXT] and 'class="moves"' in fragment
    assert 'class="band scope"' in fragment  # the scope's span on the cue's timeline
    assert "<script" not in fragment and SCRIPT_TEXT not in fragment
    rebuilt = c.post("/api/search", headers=AUTH, json={**body, "tool": "reconstruct", "limit": 3}).json()
    assert rebuilt["ok"] is True and 'id="recall-view"' in rebuilt["trace_html"] and rebuilt["answer"]["items"]
    bad = c.post("/api/search", headers=AUTH, json={**body, "time_cue": {"after": "soon", "confidence": "sure"}})
    assert bad.json()["ok"] is False and "time_cue" in bad.json()["error"]
    assert c.post("/api/search", headers=AUTH, json={**body, "tool": "store"}).status_code == 400
    assert c.post("/api/search", headers=AUTH, content=b"not json").status_code == 400
    # the searches went to the trace log, which the explorer opens
    listed = c.get("/api/traces", headers=AUTH).json()
    assert listed["total"] == 3 and [e["tool"] for e in listed["entries"]][:2] == ["reconstruct", "recall"]
    entry = c.get(f"/api/traces/{listed['entries'][1]['id']}", headers=AUTH).json()
    assert entry["ok"] is True and "trace log entry" in entry["trace_html"] and 'class="moves"' in entry["trace_html"]
    assert c.get("/api/traces/nope", headers=AUTH).status_code == 404
    assert client(memory).get("/api/traces", headers=AUTH).status_code == 404  # no log given
    lines = log.read_text(encoding="utf-8").splitlines()
    assert all(EVIDENCE_TEXT not in line for line in lines) and json.loads(lines[0])["tool"] == "recall"


def test_contents_and_profile_read_through_the_tools(opened: tuple[Memory, dict[str, str], Path]) -> None:
    memory, refs, _ = opened
    c = client(memory)
    got = c.get("/api/contents", headers=AUTH, params={"agent_id": AGENT, "ref": refs[SCRIPT_TEXT]}).json()
    assert got["items"][0]["content"] == SCRIPT_TEXT  # JSON carries it as data; the page sets it as text
    assert c.get("/api/profile", headers=AUTH, params={"agent_id": AGENT}).json()["profile"].startswith("Rides")
    assert c.get("/api/contents", headers=AUTH, params={"agent_id": AGENT, "ref": "x"}).json()["ok"] is False


def test_the_speed_script_measures_every_request(tmp_path: Path) -> None:
    from benchmarks.ui_speed import main as speed_main

    out = tmp_path / "ui.md"
    assert (
        speed_main(["--sizes", "300", "--repeat", "2", "--no-browser", "--workdir", str(tmp_path), "--out", str(out)])
        == 0
    )
    report = out.read_text(encoding="utf-8")
    for row in (
        "| page |",
        "| records: first page (50) |",
        "| search: recall with a time cue + trace view |",
        "| first paint's requests, together |",
    ):
        assert row in report, row


def test_the_tools_run_as_the_principal_with_its_grants(opened: tuple[Memory, dict[str, str], Path]) -> None:
    from cuedrecall.access import READ, Principal

    memory, _refs, _ = opened
    reader = Principal("reader", {AGENT: READ})
    c = TestClient(make_app(memory, TOKEN, write=True, principal=reader), base_url="http://127.0.0.1")
    before = snapshot(memory, (AGENT,))
    refused = c.post(
        "/api/write", headers=AUTH, json={"tool": "update_profile", "arguments": {"agent_id": AGENT, "profile": "x"}}
    ).json()
    assert (refused["ok"], refused["error"], refused["client_id"]) == (False, "permission_denied", "reader")
    assert snapshot(memory, (AGENT,)) == before
    found = c.post("/api/search", headers=AUTH, json={"tool": "recall", "agent_id": AGENT, "query": QUESTION}).json()
    assert found["ok"] is True  # reading is granted


def test_the_ui_command_prints_a_loopback_url_with_its_token(tmp_path: Path) -> None:
    import os
    import re
    import subprocess
    import sys

    import httpx

    repo = REPO_ROOT
    with Memory(tmp_path / "m.db", settings=make_settings(), clock=fixed_clock(NOW)) as memory:
        fill(memory)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(repo),
        "CUEDRECALL_BLOCK_BUILD_ENABLED": "false",
        "CUEDRECALL_BLOCK_RETRIEVAL_ENABLED": "false",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "cuedrecall.cli", "ui", "--db", str(tmp_path / "m.db"), "--embedding", "hash"],
        env=env,
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)", line)
        assert found and "read-only" in line, (line, process.stderr.read() if process.poll() is not None else "")
        base, token = found.groups()
        assert len(token) >= 24
        assert httpx.get(f"{base}/").status_code == 403
        assert httpx.get(f"{base}/?token={token}").status_code == 200
        agents = httpx.get(f"{base}/api/agents", headers={TOKEN_HEADER: token}).json()["agents"]
        assert [a["agent_id"] for a in agents] == [AGENT]
        refused = httpx.post(
            f"{base}/api/write",
            headers={TOKEN_HEADER: token},
            json={"tool": "update_profile", "arguments": {"agent_id": AGENT, "profile": "x"}},
        )
        assert refused.status_code == 403
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_page_names_a_postgres_store_by_its_database_never_by_its_url_and_password() -> None:
    from cuedrecall.ui.app import _store_name

    settings = make_settings(db_url="postgresql://ops:s3cret@db.example.com:5432/memory", db_path="/x/memory.db")
    assert _store_name(settings) == "postgresql:memory"
    assert _store_name(make_settings(db_path="/x/mine.db")) == "mine.db"
