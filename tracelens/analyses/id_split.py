"""The rows carrying a correlation id told apart, GPU ops from API calls, by one compiled pass
(``_merge_search.id_rows``), for ``launch._join_ids``.

Where the id column is stored sparse (the calls and the GPU ops carry one: 728K of the 406 MB Kineto tile's 1.5M
rows), the numpy path gathered the kinds at the carrying rows, compared them to the GPU kinds and to the call kinds,
selected the GPU ops' rows and ids, the calls' ids, rows and kinds by those masks, and counted the runtime and
driver rows of the whole table by two more comparisons: a dozen passes. The pass reads each carrying row's kind
where it stands and writes what those selections gave; the same arrays (values and types).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..trace import ALL_KINDS, DRIVER, GPU_ACTIVITY_KINDS, RUNTIME
from ..values import plain_ints

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

_GPU_KINDS = np.zeros(len(ALL_KINDS), np.uint8)
_GPU_KINDS[[ALL_KINDS.index(k) for k in GPU_ACTIVITY_KINDS]] = 1


class IdRows(NamedTuple):
    """The carrying rows split: the GPU ops' ids (None where ``gpu`` was None or the GPU ops among the carrying
    rows are not exactly ``gpu``), the calls' ids, event rows and driver flags (row order), and the table's runtime
    and driver rows counted."""

    op_ids: np.ndarray | None
    ids: np.ndarray
    rows: np.ndarray
    is_driver: np.ndarray
    runtimes: int
    drivers: int


def split_id_rows(
    kind: np.ndarray, rows: np.ndarray, ids: np.ndarray, gpu: np.ndarray | None, dtype: type
) -> IdRows | None:
    """The carrying rows ``rows`` (ascending; their ids ``ids``, -1 where null) split into the GPU ops (activity
    kinds) and the runtime and driver calls, the ids as ``dtype`` (int32 or int64: every id fits), the calls' rows
    in ``rows``' type; None where the pass is absent or the arrays are not plain integers."""
    if _compiled is None or not hasattr(_compiled, "id_rows"):
        return None
    if not (
        plain_ints(kind, (1,))
        and plain_ints(rows, (4, 8))
        and plain_ints(ids, (4, 8))
        and (gpu is None or plain_ints(gpu, (4, 8)))
        and np.dtype(dtype) in (np.dtype(np.int32), np.dtype(np.int64))
    ):
        return None
    runtime, driver = ALL_KINDS.index(RUNTIME), ALL_KINDS.index(DRIVER)
    ops, calls, runtimes, drivers = _compiled.id_rows(
        rows, kind, ids, _GPU_KINDS, runtime, driver, None, None, None, None, None
    )
    # a slot more than the counts: the pass writes each row to both outs' next slot (no branch per row)
    op_ids = None if gpu is None else np.empty(ops + 1, dtype)
    call_ids, call_rows = np.empty(calls + 1, dtype), np.empty(calls + 1, rows.dtype)
    is_driver = np.empty(calls + 1, bool)
    same = _compiled.id_rows(
        rows, kind, ids, _GPU_KINDS, runtime, driver, gpu, op_ids, call_ids, call_rows, is_driver
    )
    return IdRows(
        op_ids[:ops] if same and op_ids is not None else None,
        call_ids[:calls],
        call_rows[:calls],
        is_driver[:calls],
        runtimes,
        drivers,
    )
