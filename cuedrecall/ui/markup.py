"""HTML building blocks for the pages: every value is escaped here, and the page shell inlines its assets.

The rules: ``esc`` is the only way a value reaches the markup (text and attribute
values alike, quotes included), so user content (a memory holding ``<script>``) is
shown, never run. A page loads nothing from the network: its CSS and JS are files
of ``cuedrecall/ui/static`` inlined at render time, and its Content-Security-Policy
allows no source but the page's own nonce-tagged scripts (``default-src 'none'``).
"""

from __future__ import annotations

import html
import json
import secrets
from functools import cache
from importlib import resources
from typing import Any

PACKAGE = "cuedrecall.ui"  # its static/ folder holds the CSS, JS and HTML, shipped as package data


def esc(value: Any) -> str:
    """Text or an attribute value, escaped (``& < > " '``)."""
    return html.escape("" if value is None else str(value), quote=True)


def attrs(**values: Any) -> str:
    """`` name="value"`` pairs, escaped; ``cls`` is ``class``, ``_`` in a name is ``-``; None and False are left out."""
    out = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        key = "class" if name == "cls" else name.replace("_", "-")
        out.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    return "".join(out)


def el(tag: str, *children: str, **values: Any) -> str:
    """An element around children that are already markup (built here or escaped with ``esc``)."""
    return f"<{tag}{attrs(**values)}>{''.join(children)}</{tag}>"


def ref(value: Any) -> str:
    """A record ref the page lets a reader follow across stages (hover or click)."""
    return el("span", esc(value), cls="ref", data_ref=value, tabindex="0")


def num(value: Any, digits: int = 4) -> str:
    """A score as text: 4 significant digits, "-" for none, booleans as yes/no."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)


@cache
def asset(name: str) -> str:
    """A file of the package's static folder (CSS, JS, HTML), as text."""
    return resources.files(PACKAGE).joinpath("static", name).read_text(encoding="utf-8")


def csp(nonce: str, *, connect: bool = False) -> str:
    """The page's Content-Security-Policy: nothing but its own nonce-tagged scripts and inline styles; the
    explorer may also fetch from its own origin."""
    connect_src = "'self'" if connect else "'none'"
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src data:; "
        f"connect-src {connect_src}; base-uri 'none'; form-action 'none'"
    )


def document(
    title: str, body: str, *, css: tuple[str, ...], js: tuple[str, ...], nonce: str | None = None, connect: bool = False
) -> str:
    """A whole page: its CSP (as a meta tag too, so a saved file keeps it), the named static CSS and JS inlined."""
    nonce = nonce or secrets.token_urlsafe(16)
    styles = "".join(f"<style>{asset(name)}</style>" for name in css)
    scripts = "".join(f'<script nonce="{esc(nonce)}">{asset(name)}</script>' for name in js)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp(nonce, connect=connect))}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title>{styles}</head><body>{body}{scripts}</body></html>\n"
    )
