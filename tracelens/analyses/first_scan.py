"""Whether any group of rows (a name on a thread, an API name in a process) has a long first row, by one compiled
pass over the event rows (``_merge_search.long_group_firsts``): the first_call and first_api rules of
:mod:`.startup`.

Those rules flag a group's first row that lasts long and far longer than the group's later rows. Usually no group's
first row lasts long (none of the 812K op rows and 521K API calls of the 406 MB Kineto tile), and the numpy path
learned that by gathering every candidate's thread, name, start and end, numbering the groups by hashing and
scattering their first rows (~40 ms of the attribution section). The pass reads each candidate where it stands and
gives the long first rows; where it gives none the rules flag nothing, else (or where the pass is absent, declines,
or the columns are not plain arrays: an Nsight export's thread codes) the numpy path runs as before.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..trace import ALL_KINDS
from ..values import plain_ints
from .columns import EventColumns
from .names import HOST_CATEGORY_PRIORITY

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from .. import _merge_search as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]

_CATEGORIES = len(HOST_CATEGORY_PRIORITY)


def allowed_table(kinds: Iterable[str], categories: dict[str, Iterable[int] | None]) -> np.ndarray:
    """The pass's table of candidates: a byte per (kind, host category) pair, kinds in ALL_KINDS order and a last
    slot for kind -1, categories -1 (none) then HOST_CATEGORY_PRIORITY's; set for each of ``kinds`` at the
    categories ``categories[kind]`` gives (None: every category)."""
    table = np.zeros((len(ALL_KINDS) + 1, _CATEGORIES + 1), np.uint8)
    for kind in kinds:
        wanted = categories.get(kind)
        if wanted is None:
            table[ALL_KINDS.index(kind)] = 1
        else:
            table[ALL_KINDS.index(kind), [c + 1 for c in wanted]] = 1
    return table.reshape(-1)


def plain_rule_columns(cols: EventColumns, category: np.ndarray) -> bool:
    """Whether the columns the startup rules' compiled passes read are plain arrays of the widths they take: kind
    and category int8, name, pid and tid int32 or int64, start and end int64 (:func:`values.plain_ints`)."""
    return (
        plain_ints(cols.kind, (1,))
        and plain_ints(category, (1,))
        and all(plain_ints(a, (4, 8)) for a in (cols.name, cols.pid, cols.tid))
        and all(plain_ints(a, (8,)) for a in (cols.start, cols.end))
    )


def long_group_firsts(
    cols: EventColumns,
    category: np.ndarray,
    allowed: np.ndarray,
    by_thread: bool,
    min_first: int,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, int] | None:
    """(the event rows, ascending, that are the first of their group and last ``min_first`` or more; the least
    duration of the rows looked at, 2^63 - 1 without any) among the candidates: the rows looked at are the event
    rows (``rows``: those only, ascending) whose (kind, host ``category``) pair ``allowed`` sets
    (:func:`allowed_table`), the candidates those of them named and on a thread (name and tid >= 0); groups by
    (pid, name), or by (``thread_key(pid, tid)``, name) ``by_thread``. None where the pass is absent, the columns
    are not plain arrays, the starts of the rows looked at do not ascend (a group's first row in start order may then
    not be its first row) or, by thread, one of their thread ids is 2^32 or more."""
    if _compiled is None or not hasattr(_compiled, "long_group_firsts"):
        return None
    if not plain_rule_columns(cols, category) or not (rows is None or plain_ints(rows, (4, 8))):
        return None
    found, least = _compiled.long_group_firsts(
        rows,
        cols.kind,
        category,
        cols.name,
        cols.pid,
        cols.tid,
        cols.start,
        cols.end,
        allowed,
        _CATEGORIES,
        int(by_thread),
        min_first,
    )
    if found is None:
        return None
    return np.array(found, np.int64), int(least)
