"""cuedrecall: long-term memory for AI agents, with recall that explains itself and time cues."""

import os

# A recall's vector arm is one matrix-vector product over a slice of the index: OpenBLAS's worker threads cost more
# than they give there (benchmarks/results/speed_realistic.md). Set before numpy loads, when nothing has loaded it
# yet; a value the operator set wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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
