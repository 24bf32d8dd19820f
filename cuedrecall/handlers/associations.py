"""reconstruct, declare_associations and traverse: declared here, answered ``ok: false`` until they are built.

A client written for CPersona sees the tools and gets a clear refusal, never an
unknown-tool error or a silent empty answer.
"""

from __future__ import annotations

from typing import Any

from cuedrecall.runtime import Runtime


def not_built(tool: str) -> Any:
    def handler(rt: Runtime, **arguments: Any) -> dict[str, Any]:
        return {"ok": False, "error": f"{tool} is not available in this version of cuedrecall yet: "
                                      "use recall (and get_contents for whole records)"}
    handler.__name__ = tool
    return handler
