"""The scope rule over numpy columns: what every in-process index (vectors, blocks) filters its rows with.

An index keeps its rows' isolation axes (agent, project, channel, source id) as
small integers, interned once per distinct string. ``ScopeColumns.mask`` is the
numpy form of ``Scope``: the agent, project and channel rules compare integer
columns; the source rule is decided once per distinct source value (in Python,
through ``Scope.source_matches``), then applied to the column, so no step loops
over rows.
"""

from __future__ import annotations

import numpy as np

from cuedrecall.store.base import Scope

_AXES = ("agent", "project", "channel", "source")


def open_gaps(array: np.ndarray, places: np.ndarray, n: int) -> None:
    """Shift the first ``n`` rows of ``array`` so that one empty row opens before row ``places[j]`` for each j
    (``places`` ascending, a value n opening one at the end): row i moves down by the number of places <= i. In
    place, one block copy per gap, last gap first; the array must hold n + len(places) rows."""
    for j in range(len(places) - 1, -1, -1):
        start, end = int(places[j]), int(places[j + 1]) if j + 1 < len(places) else n
        if end > start:
            array[start + j + 1 : end + j + 1] = array[start:end]


class _Codes:
    """Interns axis strings (agent, project, channel, source) to small integers, and back."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self.values: list[str] = []

    def code(self, value: str) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def find(self, value: str) -> int:
        return self._codes.get(value, -1)


class ScopeColumns:
    """The isolation axes of an index's rows, one int32 column each, kept in step with the index's row order.

    The index owns the row count: every method that touches rows is told how many
    rows are in use (``n``).
    """

    def __init__(self, capacity: int) -> None:
        self._codes = _Codes()
        self.agent = np.zeros(capacity, dtype=np.int32)
        self.project = np.zeros(capacity, dtype=np.int32)
        self.channel = np.zeros(capacity, dtype=np.int32)
        self.source = np.zeros(capacity, dtype=np.int32)

    def resize(self, capacity: int, n: int) -> None:
        """New columns of ``capacity`` rows, keeping the first ``n``."""
        for name in _AXES:
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)

    def set(self, i: int, agent_id: str, project_id: str, channel: str, source_id: str) -> None:
        code = self._codes.code
        self.agent[i], self.project[i] = code(agent_id), code(project_id)
        self.channel[i], self.source[i] = code(channel), code(source_id)

    def set_rows(self, start: int, count: int, agent_id: str, project_id: str, channel: str, source_id: str) -> None:
        """The same axes for ``count`` rows from ``start`` (the blocks of one record)."""
        code = self._codes.code
        stop = start + count
        self.agent[start:stop], self.project[start:stop] = code(agent_id), code(project_id)
        self.channel[start:stop], self.source[start:stop] = code(channel), code(source_id)

    def delete(self, i: int, n: int) -> None:
        """Remove row ``i`` of the first ``n``, the rows after it moving up one."""
        for name in _AXES:
            column = getattr(self, name)
            column[i : n - 1] = column[i + 1 : n]

    def open_gaps(self, places: np.ndarray, n: int) -> None:
        """The same gaps in every axis column (the module's ``open_gaps``): the index is making room for new rows."""
        for name in _AXES:
            open_gaps(getattr(self, name), places, n)

    def keep(self, kept: np.ndarray, capacity: int) -> None:
        """Keep the rows a boolean mask (over the rows in use) selects, in order, in columns of ``capacity``."""
        count = int(kept.sum())
        for name in _AXES:
            old = getattr(self, name)
            new = np.zeros(capacity, dtype=old.dtype)
            new[:count] = old[: kept.shape[0]][kept]
            setattr(self, name, new)

    def agent_mask(self, agent_id: str, n: int) -> np.ndarray:
        """The rows of one agent, or every row for agent ""."""
        if not agent_id:
            return np.ones(n, dtype=bool)
        return self.agent[:n] == self._codes.find(agent_id)

    def mask(self, scope: Scope, n: int, *, by_source: bool = True, rows: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask of the first ``n`` rows inside the scope's isolation axes.

        ``by_source=False`` leaves the source rule out (a visible episode carries no
        source to match). ``rows``: the mask of these rows instead (in their order; ``n`` unused).
        """
        find = self._codes.find
        take = slice(0, n) if rows is None else rows
        mask = self.agent[take] == find(scope.agent_id)
        if scope.project_id is not None:
            allowed = [find("")]
            if scope.project_id:
                allowed.append(find(scope.project_id))
            mask &= np.isin(self.project[take], allowed)
        if scope.channel:
            mask &= np.isin(self.channel[take], [find(""), find(scope.channel)])
        if by_source and scope.source_id:
            mask &= self.source_mask(scope, n, rows=rows)
        return mask

    def source_mask(self, scope: Scope, n: int, *, rows: np.ndarray | None = None) -> np.ndarray:
        """The rows whose source id passes the scope's source rule, decided once per distinct value."""
        passing = [code for code, value in enumerate(self._codes.values) if scope.source_matches(value)]
        return np.isin(self.source[slice(0, n) if rows is None else rows], passing)
