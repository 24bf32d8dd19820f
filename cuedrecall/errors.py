"""Errors of cuedrecall, in one place.

    CuedRecallError
    ├── SettingsError       a CUEDRECALL_* (or CPERSONA_*) variable is malformed (startup stops)
    ├── ToolArgumentError   a caller passed a bad argument (answered ok:false, nothing written)
    └── StoreError          the database refused or is unusable
"""


class CuedRecallError(Exception):
    """Root of every error this package raises on purpose."""


class SettingsError(CuedRecallError):
    """A setting's value cannot be read; the message names the variable and what it accepts."""


class ToolArgumentError(CuedRecallError):
    """A tool argument is wrong; the message names the argument and what was expected."""


class StoreError(CuedRecallError):
    """The storage layer could not do what was asked."""
