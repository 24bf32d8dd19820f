"""Seeing and tending memory in the browser: the trace view (``cuedrecall view``) and the explorer (``cuedrecall ui``).

``trace_html`` renders a recall or reconstruct trace as one self-contained HTML page
(no network: its CSS and JS are package files inlined at render time); ``app`` is the
explorer, a local Starlette app over ``Memory``. Importing this package loads no web
framework: only ``app`` needs Starlette.
"""
