"""tracelens.arrow_calls: each kernel called by name gives what the pyarrow.compute call it is named after gives."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import arrow_calls

INTS = st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), max_size=40)
TEXTS = st.lists(
    st.one_of(st.none(), st.sampled_from(["aten::mm", "cudaMemcpy", "Ü", "", "Memcpy HtoD", "nccl"])),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(INTS, st.data())
def test_take_cast_and_min_max_equal_pyarrow_compute(values: list[int | None], data: st.DataObject) -> None:
    array = pa.array(values, pa.int64())
    rows = data.draw(st.lists(st.integers(0, max(len(values) - 1, 0)), max_size=20)) if values else []
    indices = pa.array(rows, pa.int64())
    assert arrow_calls.take(array, indices).equals(pc.take(array, indices))
    assert arrow_calls.take(pa.chunked_array([array, array]), indices).equals(
        pa.chunked_array([array, array]).take(indices)
    )
    assert arrow_calls.min_max(array).equals(pc.min_max(array))
    small = pa.array([v if v is None else v % 1000 for v in values], pa.int64())
    assert arrow_calls.cast(small, pa.int16()).equals(small.cast(pa.int16()))


def test_take_out_of_bounds_and_unsafe_cast_raise_as_pyarrow_does() -> None:
    with pytest.raises(IndexError):
        arrow_calls.take(pa.array([1, 2]), pa.array([5]))
    with pytest.raises(pa.ArrowInvalid):
        arrow_calls.cast(pa.array([70_000]), pa.int16())


@settings(max_examples=100, deadline=None)
@given(TEXTS)
def test_string_kernels_equal_pyarrow_compute(values: list[str | None]) -> None:
    text = pa.array(values, pa.string())
    assert arrow_calls.dictionary_encode(text).equals(pc.dictionary_encode(text))
    assert arrow_calls.starts_with(text, "cuda").equals(pc.starts_with(text, "cuda"))
    for pattern in ("mem(cpy|set)", "^nccl", "Ü"):
        assert arrow_calls.match_substring_regex(text, pattern).equals(
            pc.match_substring_regex(text, pattern)
        )
    lowered = arrow_calls.call("ascii_lower", text)
    assert lowered.equals(pc.ascii_lower(text))
    either = arrow_calls.call(
        "or",
        arrow_calls.call("invert", arrow_calls.call("string_is_ascii", text)),
        arrow_calls.starts_with(text, "n"),
    )
    assert either.equals(pc.or_(pc.invert(pc.string_is_ascii(text)), pc.starts_with(text, "n")))
