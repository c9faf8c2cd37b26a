"""enrich._kind_rows (a comparison per dictionary code) against the rows whose kind name matches, row by row."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.enrich import _kind_rows

KINDS = ["kernel", "runtime", "annotation", "memcpy"]


class _Store:
    def __init__(self, column: pa.DictionaryArray) -> None:
        self._column = column

    def column(self, name: str) -> pa.DictionaryArray:
        assert name == "kind"
        return self._column


class _Trace:
    def __init__(self, column: pa.DictionaryArray) -> None:
        self.store = _Store(column)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=6),  # the dictionary, values may repeat
    st.lists(st.one_of(st.none(), st.integers(0, 5)), max_size=40),
    st.sampled_from(KINDS),
)
def test_kind_rows_is_isin(dictionary: list[str], picks: list[int | None], kind: str) -> None:
    indices = [None if p is None else p % len(dictionary) for p in picks]
    column = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(dictionary))
    names = [None if i is None else dictionary[i] for i in indices]
    expected = [row for row, name in enumerate(names) if name == kind]
    assert _kind_rows(_Trace(column), kind).tolist() == expected  # type: ignore[arg-type]
