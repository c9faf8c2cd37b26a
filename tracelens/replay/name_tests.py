"""Name rules tested once per name dictionary, not once per call: the what-if replay asks the same few rules
(collective kernel, library kernel, graph launch) of the same event-name dictionary in its graph, its remedies and
its critical path, and most traces have no name that a rule accepts (no collective, no graph launch), where no row
needs to be read at all.

:func:`name_lookup` tests a rule on every name of a small dictionary once and keeps the answer for as long as that
dictionary lives; :func:`names_mask` gives :func:`tracelens.analyses.names.code_mask`'s answer from it (the same
booleans: a rule is a function of the name), reading the rows' codes only where some name passes.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import numpy as np

from ..analyses.names import code_mask, rows_named

# Dictionaries of up to this many names are tested whole (a Kineto trace's: a few hundred); larger ones (an Nsight
# export's, with every NVTX text) per call, at the names the rows use (code_mask).
SMALL_DICTIONARY = 4096
_KEPT = 64  # answers kept at most (a rule made anew per call, a lambda, is never found again)
_lock = threading.Lock()
_answers: dict[tuple[int, Callable[[str], bool]], tuple[weakref.ref[np.ndarray], np.ndarray]] = {}


def name_lookup(
    names: np.ndarray, predicate: Callable[[str], bool], limit: int | None = None
) -> np.ndarray | None:
    """Per code of the dictionary ``names`` and a last slot for code -1 (null: False): ``predicate(str(name))``;
    read only. None where the dictionary is too large to test whole (beyond ``limit``: SMALL_DICTIONARY, or a
    caller's that reads as many rows)."""
    if len(names) > (SMALL_DICTIONARY if limit is None else limit):
        return None
    key = (id(names), predicate)
    with _lock:
        kept = _answers.get(key)
    if kept is not None and kept[0]() is names:
        return kept[1]
    lookup = np.zeros(len(names) + 1, bool)
    lookup[:-1] = [bool(predicate(str(name))) for name in names]  # a loop over the dictionary's names
    lookup.flags.writeable = False
    try:
        ref = weakref.ref(names)
    except TypeError:  # not an array: not kept
        return lookup
    with _lock:
        if len(_answers) >= _KEPT:
            _answers.clear()
        _answers[key] = (ref, lookup)
    return lookup


def names_mask(
    codes: Callable[[], np.ndarray], size: int, names: np.ndarray, predicate: Callable[[str], bool]
) -> np.ndarray:
    """``code_mask(codes(), names, predicate)`` for ``size`` rows; ``codes`` is called only where some name of the
    dictionary passes (else every row is False: no row read), and read as :func:`.names.rows_named` reads a table by
    code (a comparison per code where the names that pass are few)."""
    lookup = name_lookup(names, predicate)
    if lookup is None:
        return code_mask(codes(), names, predicate)
    mask = rows_named(codes(), lookup) if lookup.any() else None
    return np.zeros(size, bool) if mask is None else mask
