"""cuedrecall: long-term memory for AI agents, with recall that explains itself and time cues."""

__version__ = "0.1.0"

from cuedrecall.api import Memory  # noqa: E402
from cuedrecall.clock import fixed_clock, system_clock  # noqa: E402
from cuedrecall.config import Settings  # noqa: E402
from cuedrecall.errors import CuedRecallError, SettingsError, StoreError, ToolArgumentError  # noqa: E402

__all__ = [
    "CuedRecallError",
    "Memory",
    "Settings",
    "SettingsError",
    "StoreError",
    "ToolArgumentError",
    "__version__",
    "fixed_clock",
    "system_clock",
]
