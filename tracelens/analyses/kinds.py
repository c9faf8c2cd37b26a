"""Masks of the rows of some event kinds, from the shared event columns' int8 kind codes (``EventColumns.kind``):
one pass per run of consecutive codes in ``trace.ALL_KINDS`` instead of a lookup table gathered per row.

``EventColumns.of_kind`` gathers a lookup table per row for more than four kinds (its index array is converted to
intp: 8 bytes a row) and compares once per kind otherwise. The kinds the sections ask for together sit next to
each other in ``ALL_KINDS`` (the GPU kinds 0-2, the host API kinds 4-7 and 9-11), so a range test per run of
codes does the same in one or two passes over the int8 codes: ~5x less time for the seven host kinds.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..trace import ALL_KINDS


def code_runs(codes: Iterable[int]) -> list[tuple[int, int]]:
    """The distinct codes as runs ``(first, last)`` of consecutive integers, ascending."""
    runs: list[tuple[int, int]] = []
    for code in sorted(set(codes)):
        if runs and code == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def kind_mask(kind: np.ndarray, kinds: Iterable[str]) -> np.ndarray:
    """``EventColumns(...).of_kind(*kinds)`` for the kind codes ``kind`` (-1: unknown, never matched)."""
    runs = code_runs(ALL_KINDS.index(k) for k in kinds)
    mask: np.ndarray | None = None
    for first, last in runs:  # a loop over a few runs of kinds
        if first == last:
            part = kind == first
        elif kind.dtype == np.int8:
            # first <= kind <= last as one unsigned compare: kind - first wraps below 0 to 128..255
            part = (kind - np.int8(first)).view(np.uint8) <= last - first
        else:
            part = (kind >= first) & (kind <= last)
        if mask is None:
            mask = part
        else:
            mask |= part
    return mask if mask is not None else np.zeros(kind.shape, bool)
