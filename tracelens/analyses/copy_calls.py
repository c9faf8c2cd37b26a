"""The API calls that launched a copy (memcpy.py's launch modes), found by one compiled walk over the kind column
(``_op_tree.launched_calls``) where it applies; memcpy.py keeps the numpy path (``member_ids`` and
``blocks.rows_of_kind_at``) as the fallback and the reference."""

from __future__ import annotations

import numpy as np

try:  # optional: built at install time where a C compiler is there
    from . import _op_tree as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def launched_call_rows(
    kind: np.ndarray, codes: tuple[int, ...], call_corr: np.ndarray, wanted: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(event rows, int64 correlation ids) of the calls whose id is among ``wanted``: the calls are the rows of
    ``kind`` whose code is one of the two ``codes``, ``call_corr`` their ids in row order. Equals
    ``rows_of_kind_at(kind, codes, flatnonzero(is_member(call_corr, wanted)))`` and those calls' ids, by one walk
    (no membership flags, positions, block masks or gathers); None where it does not apply (no such build, not
    two codes, other types, no wanted id)."""
    if (
        _compiled is None
        or not hasattr(_compiled, "launched_calls")
        or len(codes) != 2
        or kind.dtype != np.int8
        or call_corr.dtype not in (np.dtype(np.int32), np.dtype(np.int64))
        or wanted.dtype.kind != "i"
        or wanted.size == 0
    ):
        return None
    wanted = np.ascontiguousarray(wanted, np.int64)
    kind, call_corr = np.ascontiguousarray(kind), np.ascontiguousarray(call_corr)
    room = 2 * wanted.size + 16  # a copy's runtime call and a driver call under it, mostly
    for _ in range(2):  # a second time only where more calls were wanted than there was room for
        rows, ids = np.empty(room, np.int64), np.empty(room, np.int64)
        found = _compiled.launched_calls(kind, codes[0], codes[1], call_corr, wanted, rows, ids)
        if found < 0:
            return None  # the kind column's calls are not call_corr's: the numpy path says why
        if found <= room:
            return rows[:found], ids[:found]
        room = found
    return None
