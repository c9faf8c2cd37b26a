"""The few largest of many values in a stable order, without sorting them all."""

from __future__ import annotations

import numpy as np


def largest_first(values: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(-values, kind="stable")[:k]``: the positions of the k largest values, largest first, ties in
    position order. Only the values at or above the k-th largest are sorted (a device's largest gaps among the
    millions of a long trace, whose stable sort in no particular order costs seconds)."""
    values = np.asarray(values)
    if k <= 0:
        return np.zeros(0, np.int64)
    # signed integers whose negation cannot overflow, as the stable sort of -values orders them; others sorted whole
    if values.size <= k or values.dtype.kind != "i" or values.min() == np.iinfo(values.dtype).min:
        return np.argsort(-values, kind="stable")[:k]
    kth = np.partition(values, values.size - k)[values.size - k]  # the k-th largest
    # every value above it and every tie with it, in position order
    candidates = np.flatnonzero(values >= kth)
    return candidates[np.argsort(-values[candidates], kind="stable")][:k]
