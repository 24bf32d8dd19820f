"""cuedrecall: long-term memory for AI agents, with recall that explains itself and time cues."""

from cuedrecall.api import Memory
from cuedrecall.clock import fixed_clock, system_clock
from cuedrecall.config import Settings
from cuedrecall.errors import CuedRecallError, SettingsError, StoreError, ToolArgumentError
from cuedrecall.version import __version__

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
