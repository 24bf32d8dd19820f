"""check_update: which release this process runs, how it was installed, and, when the operator allows it, whether
the package index has a newer one (docs/tools.md#check_update).

Three rules:

- **Nothing is fetched unless the operator allows it** (``CUEDRECALL_UPDATE_CHECK=true``, off by default). Off,
  the answer says the index was not asked (``checked: false``, ``not_checked`` says why); it never guesses.
- **Only ``refresh: true`` asks the index**, once, within a deadline and a size bound, at most once a minute; a
  bare call answers what the last ask found in this process, or that nothing was asked yet.
- **Nothing is installed unless ``apply: true``**, and then only a wheel install (pip, into this environment),
  only a release the index was seen to offer, one at a time; an editable install or a source tree is the
  operator's working tree, so the answer gives the command instead. A restart is needed either way: this process
  keeps running the code it started with.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from cuedrecall.runtime import Runtime
from cuedrecall.version import __version__

log = logging.getLogger("cuedrecall")

PROJECT = "cuedrecall"
ACCEPT = "application/vnd.pypi.simple.v1+json"  # PEP 691: the JSON page, which says which files were yanked
TIMEOUT_S = 3.0  # the whole ask: connect, transfer and read
MAX_PAGE_BYTES = 2 * 1024 * 1024
MIN_REFRESH_S = 60.0  # one ask a minute at most, whoever calls
APPLY_TIMEOUT_S = 900.0
OUTPUT_LINES = 40  # of the installer's output, the last lines answered
YANK_REASON_MAX = 200
PACKAGE_DIR = Path(__file__).resolve().parents[1]  # cuedrecall/, the code this process runs


# -- versions (the part of PEP 440 an index publishes) -----------------------------------------------------------

_VERSION = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>\d+)?)?"
    r"(?:-(?P<post_bare>\d+)|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>\d+)?(?P<post>))?"
    r"(?:[-_.]?dev[-_.]?(?P<dev_n>\d+)?(?P<dev>))?"
    r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}


@dataclass(frozen=True, order=True)
class Version:
    """A version's sort key (PEP 440 order), and its text as published."""

    key: tuple[Any, ...]
    text: str = field(compare=False)
    prerelease: bool = field(compare=False)
    release: tuple[int, ...] = field(compare=False)


def version_of(text: Any) -> Version | None:
    """The version a string names, or None for one outside PEP 440 (never a candidate: it can only hide one)."""
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    release = [int(part) for part in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    pre = (0, _PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0)) if match["pre"] else None
    has_post = match["post_bare"] is not None or match["post"] is not None
    post = (1, int(match["post_bare"] or match["post_n"] or 0)) if has_post else (0, 0)
    dev = (0, int(match["dev_n"] or 0)) if match["dev"] is not None else (1, 0)
    if pre is None:
        pre = (-1, 0, 0) if dev[0] == 0 and not has_post else (1, 0, 0)  # 1.0.dev1 sorts before 1.0a1
    key = (int(match["epoch"] or 0), tuple(release), pre, post, dev)
    return Version(key, text.strip(), match["pre"] is not None or match["dev"] is not None, tuple(release))


def _file_version(filename: Any) -> str | None:
    """The version a distribution file belongs to: a wheel's second field, an sdist's tail."""
    if not isinstance(filename, str):
        return None
    if filename.endswith(".whl"):
        parts = filename[:-4].split("-")
        return parts[1] if len(parts) >= 3 else None
    for suffix in (".tar.gz", ".zip"):
        if filename.endswith(suffix):
            name, dash, version = filename[: -len(suffix)].rpartition("-")
            return version if dash and name else None
    return None


def decide(page: Any, running: str) -> dict[str, Any]:
    """The verdict an index page gives on the running version: state (ok, newer, yanked, unlisted, unknown), kind
    (newer, prerelease_final, yanked or None), the newest final release above it, a yank's reason."""
    verdict: dict[str, Any] = {"state": "unknown", "kind": None, "available": None, "reason": None}
    mine = version_of(running)
    versions = page.get("versions", []) if isinstance(page, dict) else None
    files = page.get("files", []) if isinstance(page, dict) else None
    if mine is None or not isinstance(versions, list) or not isinstance(files, list):
        return verdict  # a page nobody can read tells nothing
    known: dict[tuple[Any, ...], Version] = {}
    for text in [*versions, *(_file_version(f.get("filename")) for f in files if isinstance(f, dict))]:
        found = version_of(text)
        if found is not None:
            known.setdefault(found.key, found)
    if mine.key not in known:
        return {**verdict, "state": "unlisted"}  # a source tree or a private build: nothing to compare with
    finals = [v for v in known.values() if not v.prerelease and v > mine]
    newest = max(finals) if finals else None
    verdict["available"] = newest.text if newest else None
    own = [f for f in files if isinstance(f, dict) and version_of(_file_version(f.get("filename"))) == mine]
    yanks = [f.get("yanked") for f in own]
    if own and all(y is True or isinstance(y, str) for y in yanks):  # every file withdrawn (PEP 592)
        reason = next((y.strip()[:YANK_REASON_MAX] for y in yanks if isinstance(y, str) and y.strip()), None)
        return {**verdict, "state": "yanked", "kind": "yanked", "reason": reason}
    if newest is None:
        return {**verdict, "state": "ok"}
    kind = "prerelease_final" if mine.prerelease and newest.release == mine.release else "newer"
    return {**verdict, "state": "newer", "kind": kind}


# -- how this process was installed --------------------------------------------------------------------------------


def detect_install(available: str | None = None) -> dict[str, Any]:
    """method (wheel, editable or source), where the code is, the command that would update it, and whether apply
    may run it (a wheel only)."""
    python = sys.executable or "python"
    pin = f"{PROJECT}=={available}" if available and version_of(available) else PROJECT
    try:
        dist = metadata.distribution(PROJECT)
    except metadata.PackageNotFoundError:
        dist = None
    located = None
    if dist is not None:
        try:
            located = Path(str(dist.locate_file(f"{PROJECT}/__init__.py"))).resolve().parent
        except (OSError, ValueError):
            located = None
    editable = dist is not None and _editable(dist)
    if editable:
        method = "editable"
    elif dist is None or located != PACKAGE_DIR:
        method = "source"  # the code running is not the installed distribution's (a checkout on the path)
    else:
        method = "wheel"
    root = PACKAGE_DIR.parent
    if method == "wheel":
        command = f"{python} -m pip install --upgrade {pin}"
        note = ""
    elif method == "editable":
        command = f"git -C {root} pull && {python} -m pip install -e {root}"
        note = "an editable install runs the working tree: update it there, then restart"
    else:
        command = ""
        note = f"this process runs a source tree that is not installed ({root}): update it the way it was obtained"
    return {
        "method": method,
        "version": dist.version if dist is not None else None,
        "command": command,
        "note": note,
        "restart_required": True,
        "apply_supported": method == "wheel",
    }


def _editable(dist: metadata.Distribution) -> bool:
    """PEP 660 / PEP 610: an editable install says so in direct_url.json, or installs an __editable__ hook."""
    try:
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        direct = {}
    if isinstance(direct, dict) and isinstance(direct.get("dir_info"), dict) and direct["dir_info"].get("editable"):
        return True
    return any("__editable__" in str(path) for path in (dist.files or ()))


# -- the verdict this process holds --------------------------------------------------------------------------------


@dataclass
class _Known:
    lock: threading.Lock = field(default_factory=threading.Lock)
    verdicts: dict[str, tuple[dict[str, Any], str]] = field(default_factory=dict)  # index url -> verdict, checked_at
    asked: dict[str, float] = field(default_factory=dict)  # index url -> monotonic time of the last ask
    applying: threading.Lock = field(default_factory=threading.Lock)


_KNOWN = _Known()


class Unanswered(Exception):
    """The index could not be read (unreachable, slow, too large, not JSON)."""


def fetch(url: str) -> Any:
    """The index page's JSON, read within TIMEOUT_S and MAX_PAGE_BYTES; Unanswered saying why not."""
    import httpx  # only when the index is asked: importing the server loads no HTTP client

    deadline = time.monotonic() + TIMEOUT_S
    body = bytearray()
    try:
        headers = {"Accept": ACCEPT, "User-Agent": f"{PROJECT}/{__version__}"}
        with (
            httpx.Client(timeout=TIMEOUT_S, follow_redirects=True, headers=headers) as client,
            client.stream("GET", url) as response,
        ):
            response.raise_for_status()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_PAGE_BYTES:
                    raise Unanswered(f"the page is larger than {MAX_PAGE_BYTES:,} bytes")
                if time.monotonic() > deadline:
                    raise Unanswered(f"it took longer than {TIMEOUT_S:g} seconds")
        return json.loads(bytes(body))
    except Unanswered:
        raise
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, RecursionError) as exc:
        raise Unanswered(f"{type(exc).__name__}: {str(exc)[:200]}") from None


def install(argv: list[str]) -> tuple[int, list[str]]:
    """Run one installer command (an argv list, never a shell), without a terminal or the server's stdin; its exit
    code and the last lines of its output."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=APPLY_TIMEOUT_S,
            env={**os.environ, "PIP_NO_INPUT": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            start_new_session=True,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return 127, [f"could not run {argv[0]}: {type(exc).__name__}: {str(exc)[:200]}"]
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    return done.returncode, [line[:500] for line in lines[-OUTPUT_LINES:]]


# -- the tool ------------------------------------------------------------------------------------------------------


def check_update(rt: Runtime, refresh: bool = False, apply: bool = False) -> dict[str, Any]:
    settings = rt.settings
    url, allowed = settings.update_index_url, settings.update_check
    problems: list[str] = []
    refreshed = False
    if refresh:
        refreshed = _refresh(rt, url, allowed, problems)
    with _KNOWN.lock:
        known = _KNOWN.verdicts.get(url)
    verdict, checked_at = known if known is not None and allowed else ({}, None)
    available = verdict.get("available")
    setup = detect_install(available)
    answer: dict[str, Any] = {
        "ok": True,
        "enabled": allowed,
        "checked": known is not None and allowed,
        "state": verdict.get("state", "unknown") if allowed else "disabled",
        "kind": verdict.get("kind"),
        "running": __version__,
        "available": available,
        "reason": verdict.get("reason"),
        "checked_at": checked_at,
        "refreshed": refreshed,
        "index": {"url": url, "may_ask": allowed},
        "install": {k: setup[k] for k in ("method", "version", "command", "note", "restart_required")},
    }
    if not answer["checked"]:
        answer["not_checked"] = (
            "the operator has not allowed this server to ask a package index (CUEDRECALL_UPDATE_CHECK=true "
            "allows it), so no newer release was looked for"
            if not allowed
            else "the index has not been asked since this process started: call check_update with refresh: true"
        )
    if verdict.get("kind"):
        answer["message"] = _message(verdict, setup)
    if apply:
        answer["apply_result"] = _apply(verdict, setup, allowed)
        if not answer["apply_result"]["applied"]:
            problems.append(answer["apply_result"]["reason"])
    if problems:
        answer.update(ok=False, error="; ".join(problems))
    return answer


def _refresh(rt: Runtime, url: str, allowed: bool, problems: list[str]) -> bool:
    """Ask the index now, when allowed and not asked within the last minute; whether it answered."""
    if not allowed:
        problems.append(
            "refresh: true would ask the package index, and the operator has not allowed this server to "
            "(CUEDRECALL_UPDATE_CHECK=true allows it): nothing was fetched"
        )
        return False
    now = time.monotonic()
    with _KNOWN.lock:
        last = _KNOWN.asked.get(url)
        if last is not None and now - last < MIN_REFRESH_S and url in _KNOWN.verdicts:
            return False  # asked within the minute: that verdict stands (checked_at says when)
        _KNOWN.asked[url] = now
    try:
        page = fetch(url)
    except Unanswered as exc:
        log.info("check_update: the index %s did not answer: %s", url, exc)
        problems.append(f"the package index did not answer ({exc}); the verdict stands as it was")
        return False
    verdict = decide(page, __version__)
    if verdict["state"] == "unknown":
        problems.append("the package index answered a page that could not be read; the verdict stands as it was")
        return False
    with _KNOWN.lock:
        _KNOWN.verdicts[url] = (verdict, rt.now_iso())
    return True


def _message(verdict: dict[str, Any], setup: dict[str, Any]) -> str:
    how = f"update with `{setup['command']}`, then restart the server" if setup["command"] else setup["note"]
    if verdict["kind"] == "yanked":
        reason = f" ({verdict['reason']})" if verdict.get("reason") else ""
        newer = f"; {verdict['available']} is available" if verdict.get("available") else ""
        return f"every file of {PROJECT} {__version__} was withdrawn from the index{reason}{newer}: {how}"
    if verdict["kind"] == "prerelease_final":
        return f"the final release of the pre-release this process runs is out, {verdict['available']}: {how}"
    return f"{PROJECT} {verdict['available']} is out (this process runs {__version__}): {how}"


def _apply(verdict: dict[str, Any], setup: dict[str, Any], allowed: bool) -> dict[str, Any]:
    """Install the newer release the index offered, into this environment (a wheel install only)."""
    refused = {"applied": False, "restart_required": True}
    if not allowed:
        return {
            **refused,
            "reason": "apply: true would download a release, and the operator has not allowed this server to "
            "reach the package index (CUEDRECALL_UPDATE_CHECK): nothing was installed",
        }
    if not verdict.get("available"):
        state = verdict.get("state", "unknown")
        return {
            **refused,
            "reason": f"no newer release is known (state {state}; ask the index with refresh: true first): "
            "nothing was installed",
        }
    if not setup["apply_supported"]:
        return {**refused, "reason": f"apply installs only a wheel install; this is {setup['method']}: {setup['note']}"}
    if not _KNOWN.applying.acquire(blocking=False):
        return {**refused, "reason": "an update is already being installed by this process: nothing more was run"}
    try:
        argv = [sys.executable, "-m", "pip", "install", "--upgrade", f"{PROJECT}=={verdict['available']}"]
        log.warning("check_update: installing %s (%s)", verdict["available"], " ".join(argv))
        code, tail = install(argv)
    finally:
        _KNOWN.applying.release()
    result = {"applied": code == 0, "exit_code": code, "output_tail": tail, "restart_required": True}
    if code != 0:
        result["reason"] = f"the installer exited with {code}: nothing may have changed (output_tail says)"
    return result


def forget() -> None:
    """Drop every verdict this process holds (tests)."""
    with _KNOWN.lock:
        _KNOWN.verdicts.clear()
        _KNOWN.asked.clear()
