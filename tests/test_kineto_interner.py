"""kineto/labels.Interner: a block's local string codes as codes of the strings across blocks (first seen, first
coded), -1 (missing) kept; a block without strings (every code -1) given back as it is, without a lookup."""

from __future__ import annotations

import numpy as np

from tracelens.ingest.kineto.labels import Interner


def test_merge_codes_blocks_strings_in_the_order_first_seen() -> None:
    interner = Interner()
    first = interner.merge(np.array([1, -1, 0, 1], dtype=np.int32), ["b", "a"])
    assert first.tolist() == [1, -1, 0, 1] and interner.values == ["b", "a"]
    # a later block's strings: the known ones keep their codes, the new ones come after
    second = interner.merge(np.array([0, 2, 1, -1], dtype=np.int32), ["a", "c", "b"])
    assert second.tolist() == [1, 0, 2, -1] and interner.values == ["b", "a", "c"]
    assert [interner.values[c] for c in second[:3]] == ["a", "b", "c"]


def test_merge_of_a_block_without_strings_gives_its_missing_codes_back() -> None:
    interner = Interner()
    interner.merge(np.array([0], dtype=np.int32), ["x"])
    missing = np.full(5, -1, dtype=np.int32)
    merged = interner.merge(missing, [])
    assert merged is missing and merged.tolist() == [-1] * 5  # (no lookup table, no gather)
    assert interner.merge(np.empty(0, dtype=np.int32), []).size == 0
    # codes of another type are looked up as before (int32 codes out)
    other = interner.merge(np.full(3, -1, dtype=np.int64), [])
    assert other.dtype == np.int32 and other.tolist() == [-1, -1, -1]
    assert interner.values == ["x"]
