"""The newcomer's case (issue 13): a store of 13 memories, never calibrated, asked as a new user would ask.

Before gate-v1 the heuristic minimum for a pool of 13 (0.37) refused the one memory
about the CI migration, the best match on every arm, while chit-chat that shared
only "with" and "the" with the question passed the lexical-only minimum (0.0061);
"what was the bug about?" returned neither bug; and a sure June cue on "what
happened in June?" returned nothing, since the gate had refused the June rows and
a cue seat may not hold a refused row. The real embedder is used: with the hash
embedder every shared word, common or not, is a vector match.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock
from tests.conftest import NOW, make_settings, open_memory

AGENT = "newcomer"
CI = "We moved the CI pipeline from Jenkins to GitHub Actions; builds now take 6 minutes instead of 20."
LOGIN_BUG = "The login page crashed on Safari because the session cookie lacked SameSite; fixed in release 2.4.1."
EXPORT_BUG = "Found a bug where the nightly export skipped rows with null timestamps; the cause was an inner join."
OFFSITE = "Team offsite in Lisbon on June 20th: we planned the roadmap for the second half of the year."
PRIYA = "Priya joined the team as a backend engineer at the end of June."
CHITCHAT = (
    "Had coffee with the team and talked about the weekend.",
    "Lunch with the design folks; we chatted about the new office plants.",
    "Went for a run with the dog after work; the weather was great.",
    "Talked with the neighbour about the garden and what to plant in spring.",
    "Watched a movie with the family; it was about a heist in Paris.",
)
MEMORIES = (
    ("2025-06-03T10:00:00+00:00", CI),
    ("2025-06-12T15:30:00+00:00", LOGIN_BUG),
    ("2025-06-20T09:00:00+00:00", OFFSITE),
    ("2025-06-27T18:00:00+00:00", PRIYA),
    ("2025-08-14T11:00:00+00:00", EXPORT_BUG),
    ("2025-09-02T08:00:00+00:00", CHITCHAT[0]),
    ("2025-09-05T12:00:00+00:00", CHITCHAT[1]),
    ("2025-09-10T17:00:00+00:00", "The user prefers dark mode and short answers with code examples."),
    ("2025-09-15T16:00:00+00:00", CHITCHAT[2]),
    ("2025-09-20T14:00:00+00:00", CHITCHAT[3]),
    ("2025-10-01T10:00:00+00:00", "Reminder: renew the TLS certificate for api.example.com before November."),
    ("2025-10-10T19:00:00+00:00", CHITCHAT[4]),
    ("2025-10-20T09:30:00+00:00", "The user's favourite editor is Neovim with the Lazy plugin manager."),
)
JUNE = {"after": "2025-06-01", "before": "2025-06-30", "confidence": "sure"}


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory, backend: str) -> Iterator[Memory]:
    path: Path = tmp_path_factory.mktemp("newcomer") / "m.db"
    with Memory(path, settings=make_settings(embedding_mode="local"), clock=fixed_clock(NOW), background=False) as m:
        for timestamp, content in MEMORIES:
            assert m.store(agent_id=AGENT, content=content, timestamp=timestamp)["result"] == "stored"
        yield m


def _recall(memory: Memory, query: str, **arguments: Any) -> tuple[list[str], dict[str, Any]]:
    """The returned texts, best first, and the trace."""
    response = memory.recall(agent_id=AGENT, query=query, limit=10, trace=True, **arguments)
    return [m["content"] for m in reversed(response["messages"])], response


def test_the_store_is_uncalibrated(memory: Memory) -> None:
    assert memory.calibration.thresholds(AGENT) == {}
    _, response = _recall(memory, "what happened with the CI migration?")
    assert response["trace"]["config"]["calibration"] == {"origin": "none", "memories_at": None}


def test_the_ci_migration_is_found_and_chitchat_is_not(memory: Memory) -> None:
    texts, response = _recall(memory, "what happened with the CI migration?")
    assert texts and texts[0] == CI
    assert not set(texts) & set(CHITCHAT), "rows that share only common words with the question passed"
    refused = [d for d in response["trace"]["gate"]["decisions"] if d.get("reason") == "common_words_only"]
    assert refused, "the chit-chat rows reached by common words alone are refused, by name"


def test_the_bug_question_returns_the_bug_and_no_chitchat(memory: Memory) -> None:
    texts, _ = _recall(memory, "what was the bug about?")
    assert EXPORT_BUG in texts
    assert not set(texts) & set(CHITCHAT)


def test_a_sure_june_cue_returns_the_june_rows(memory: Memory) -> None:
    texts, _response = _recall(memory, "what happened in June?", time_cue=JUNE)
    assert OFFSITE in texts and PRIYA in texts
    assert not set(texts) & set(CHITCHAT)


def test_a_question_about_nothing_stored_returns_nothing(memory: Memory) -> None:
    texts, _ = _recall(memory, "quantum teleportation recipe")
    assert texts == []


def test_a_row_admitted_on_its_lexical_votes_says_so_in_its_match_reason(tmp_path: Path) -> None:
    """gate-v1 judges a row a vector arm reached on its cosine first, then on its lexical votes (gate.decide).

    With the cosine bar calibrated at 0.95 (an explicit calibration, which the small-pool bar does not
    lower), the sentence about the bug clears the gate only on its votes, while the record that is the
    query word for word clears it on cosine: only the first says ``admitted_on``.
    """
    memory = open_memory(tmp_path / "v.db", settings=make_settings(word_arm_enabled=True))
    exact = memory.store(agent_id="me", content="login timezone bug")["ref"]
    sentence = memory.store(agent_id="me", content="The flaky login test was a timezone bug in the session cookie.")
    lunch = memory.store(agent_id="me", content="Lunch was pizza on Wednesday.")["ref"]
    memory.calibration.set("me", "cosine", 0.95)
    answer = memory.recall(agent_id="me", query="login timezone bug", trace=True)
    trace = answer["trace"]
    on_vector = {hit["ref"] for hit in trace["arms"]["vector_near"]}
    assert {exact, sentence["ref"]} <= on_vector  # a vector arm reached both: each has a cosine
    judged = {d["ref"]: d for d in trace["gate"]["decisions"]}
    voted, cosine = judged[sentence["ref"]], judged[exact]
    assert voted["passed"] and voted.get("lexical") is True and voted["signal"] == "rrf"
    assert cosine["passed"] and cosine["signal"] == "cosine" and "lexical" not in cosine
    reasons = {m["ref"]: m.get("match_reason") or {} for m in answer["messages"]}
    assert lunch not in reasons
    assert reasons[sentence["ref"]]["admitted_on"] == "rrf"
    assert reasons[sentence["ref"]]["cosine"] < 0.95  # its cosine alone would not have let it in
    assert "admitted_on" not in reasons[exact]
    for message in answer["messages"]:  # the rule, row by row: admitted_on exactly when passed on the votes
        decision = judged[message["ref"]]
        on_votes = bool(decision.get("lexical") and decision["passed"])
        assert ("admitted_on" in message["match_reason"]) == on_votes
