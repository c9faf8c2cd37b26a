"""The numpy steps that took pandas off the analyze path (analyses/frame_free.py, ops.sums, ops.outer_join) against
the pandas calls they replaced, on generated data: ties, missing values, empty and one-row inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens import arrow_read as ar
from tracelens.analyses import frame_free as ff
from tracelens.analyses.ops import outer_join
from tracelens.analyses.ops.sums import CodeSums, code_sums, float_sums
from tracelens.values import is_missing

SMALL_FLOATS = st.one_of(st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan]), st.integers(-3, 3).map(float))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(SMALL_FLOATS, st.integers(0, 2), st.sampled_from(["a", "b", None])), max_size=30))
def test_group_numbers_is_ngroup_sort_false_dropna_false(rows: list) -> None:
    a = np.array([r[0] for r in rows], float)
    b = np.array([r[1] for r in rows], np.int64)
    c = np.array([r[2] for r in rows], object)
    got = ff.group_numbers([a, b, c])
    frame = pd.DataFrame({"a": a, "b": b, "c": c})
    expected = frame.groupby(["a", "b", "c"], sort=False, dropna=False).ngroup().to_numpy(np.int64)
    assert got.tolist() == expected.tolist()
    one = ff.group_numbers([a])
    assert one.tolist() == frame.groupby("a", sort=False, dropna=False).ngroup().tolist()


def test_group_numbers_empty_and_one_row() -> None:
    assert ff.group_numbers([np.zeros(0), np.zeros(0, np.int64)]).tolist() == []
    assert ff.group_numbers([np.array([np.nan]), np.array([3])]).tolist() == [0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(SMALL_FLOATS, st.integers(-2, 2), st.integers(0, 3)), max_size=40),
    st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_sort_order_is_multi_column_sort_values(rows: list, ascending: list) -> None:
    a = np.array([r[0] for r in rows], float)
    b = np.array([r[1] for r in rows], np.int64)
    c = np.array([r[2] for r in rows], np.int64)
    frame = pd.DataFrame({"a": a, "b": b, "c": c})
    expected = frame.sort_values(["a", "b", "c"], ascending=ascending).index.to_numpy()
    assert ff.sort_order([a, b, c], ascending).tolist() == expected.tolist()
    expected = frame.sort_values(["b", "c"], ascending=ascending[:2]).index.to_numpy()
    assert ff.sort_order([b, c], ascending[:2]).tolist() == expected.tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=80), st.booleans(), st.booleans())
def test_sort_values_order_keeps_pandas_quicksort_ties(values: list, ascending: bool, as_float: bool) -> None:
    # many ties and more than 16 values: numpy's quicksort is then not stable, and pandas' order is its order
    array = np.array(values, float if as_float else np.int64)
    if as_float and array.size:
        array[::7] = np.nan
    expected = pd.Series(array).sort_values(ascending=ascending).index.to_numpy()
    assert ff.sort_values_order(array, ascending).tolist() == expected.tolist()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(-1, 5), max_size=30),
    st.lists(st.sampled_from(["x", "b", "a", "x", None, "é"]), min_size=7, max_size=7),
)
def test_text_groups_is_groupby_sorted_texts(codes: list, texts: list) -> None:
    code = np.array(codes, np.int64)
    names = np.array(texts, object)
    group, labels = ff.text_groups(code, names)
    label = names[code] if code.size else np.zeros(0, object)  # -1: the last text, as the sections index
    expected = pd.Series(np.ones(code.size), index=label).groupby(level=0).size()
    assert labels.tolist() == expected.index.tolist()
    assert np.bincount(group[group >= 0], minlength=labels.size).tolist() == expected.tolist()
    assert [labels[g] if g >= 0 else None for g in group] == [
        None if v is None else v for v in label.tolist()
    ]


def test_is_missing_and_text_rank() -> None:
    values = np.array([None, "a", np.nan, 1.0, "b"], object)
    assert is_missing(values).tolist() == pd.isna(values).tolist()
    assert is_missing(np.array([1.0, np.nan])).tolist() == [False, True]
    assert is_missing(np.array([1, 2])).tolist() == [False, False]
    assert ff.text_rank(np.array(["b", "a", "b", "c"], object)).tolist() == [1, 0, 1, 2]
    assert ff.text_rank(np.zeros(0, object)).tolist() == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(-(2**62), 2**62)), max_size=40),
    st.integers(0, 5),
    st.sampled_from([pa.int64(), pa.int32(), pa.int8()]),
)
def test_arrow_ints_and_floats_equal_pyarrows_conversions(
    values: list, offset: int, typ: pa.DataType
) -> None:
    info = np.iinfo(typ.to_pandas_dtype())
    values = [None if v is None else int(np.clip(v, info.min, info.max)) for v in values]
    array = pa.array(values, typ).slice(min(offset, len(values)))  # sliced: a nonzero offset
    ints, valid = ar.arrow_ints(array)
    assert valid.tolist() == array.is_valid().to_numpy(zero_copy_only=False).tolist()
    assert ints.tolist() == [0 if v is None else v for v in array.to_pylist()]
    floats = ar.arrow_floats(array)
    expected = pd.Series(array.to_pylist(), dtype="Int64").astype("Float64").to_numpy(float, na_value=np.nan)
    np.testing.assert_array_equal(floats, expected)
    chunked = pa.chunked_array([array, array])
    assert ar.arrow_ints(chunked)[0].tolist() == ints.tolist() * 2


def test_arrow_floats_of_a_float_column() -> None:
    array = pa.array([1.5, None, -0.0, 3.0], pa.float64()).slice(1)
    np.testing.assert_array_equal(ar.arrow_floats(array), np.array([np.nan, -0.0, 3.0]))
    assert ar.arrow_floats(pa.array([], pa.float64())).size == 0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["HtoD", "DtoH", None, "pinned"]), max_size=30), st.booleans())
def test_arrow_codes_are_the_frames_categorical_codes(values: list, dictionary: bool) -> None:
    array = pa.array(values, pa.string())
    if dictionary:
        array = array.dictionary_encode()
    codes, distinct = ar.arrow_codes(array)
    assert [None if c < 0 else distinct[c] for c in codes] == values
    if dictionary:  # the frame's categorical (how trace.frame gave these columns)
        column = pa.table({"c": array}).to_pandas()["c"]
        assert codes.tolist() == column.cat.codes.tolist()
        assert distinct == list(column.cat.categories)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.booleans()), max_size=40), st.integers(0, 9), st.booleans())
def test_arrow_bools_is_fill_null_to_numpy(values: list, offset: int, fill: bool) -> None:
    array = pa.array(values, pa.bool_()).slice(min(offset, len(values)))
    expected = array.fill_null(fill).to_numpy(zero_copy_only=False)
    assert ar.arrow_bools(array, fill).tolist() == expected.tolist()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-3, 6), max_size=40), st.sampled_from([1, 2**40, 2**62]))
def test_code_sums_equal_pandas_groupby(codes: list, scale: int) -> None:
    # codes below -1 and values whose float64 sums would round: the sort path, int64 adds that wrap
    code = np.array(codes, np.int64)
    rng = np.random.default_rng(len(codes))
    values = rng.integers(-4, 5, code.size) * scale
    got = code_sums(code, v=values)
    frame = pd.DataFrame({"name": code, "v": values}).groupby("name")
    expected = frame.size().rename("size").to_frame().join(frame[["v"]].sum())
    assert got.index.tolist() == expected.index.tolist()
    assert got.columns["size"].tolist() == expected["size"].tolist()
    assert got.columns["v"].tolist() == expected["v"].tolist()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-2, 4), st.sampled_from([np.nan, 0.0, 1.0, 3.0, 1e15, -2.0])), max_size=40
    ),
    st.booleans(),
)
def test_float_sums_equal_pandas_groupby_sum(rows: list, all_known: bool) -> None:
    code = np.array([r[0] for r in rows], np.int64)
    values = np.array([r[1] for r in rows], float)
    got = float_sums(code, values, all_known=all_known)
    grouped = pd.Series(values).groupby(code)
    expected = grouped.sum()
    if all_known:
        expected = expected.where(grouped.count() == grouped.size())
    assert got.index.tolist() == expected.index.tolist()
    np.testing.assert_array_equal(got.values, expected.to_numpy(float))
    for c in range(-3, 6):
        want = float(expected[c]) if c in expected.index else None
        have = got.get(c)
        assert (have is None and want is None) or have == want or (np.isnan(have) and np.isnan(want))


def test_float_sums_inexact_values_go_through_pandas() -> None:
    values = np.array([0.1, 0.2, 0.3, 1e17, 1.0, -1e17])
    code = np.array([0, 0, 0, 1, 1, 1])
    got = float_sums(code, values)
    expected = pd.Series(values).groupby(code).sum()
    assert got.values.tolist() == expected.tolist()


@settings(max_examples=150, deadline=None)
@given(st.sets(st.integers(-1, 8), max_size=6), st.sets(st.integers(-1, 8), max_size=6))
def test_outer_join_is_the_frames_join(left_codes: set, right_codes: set) -> None:
    left_index = np.array(sorted(left_codes), np.int64)
    right_index = np.array(sorted(right_codes), np.int64)
    left = CodeSums(left_index, {"size": left_index * 3 + 1, "sum": left_index * 7})
    right = CodeSums(right_index, {"gpu": right_index + 5, "copy": right_index * 2})
    index, columns = outer_join(left, right)
    expected = left.frame().join(right.frame(), how="outer")
    assert index.tolist() == expected.index.tolist()
    for name, values in columns.items():
        assert values.dtype == expected[name].dtype
        np.testing.assert_array_equal(values, expected[name].to_numpy())


def test_group_max_skipping_nan_as_pandas() -> None:
    # startup.device_items' later_median_ns: groupby max of floats, NaN skipped, NaN where a group has none
    group = np.array([0, 1, 0, 2, 2, 1])
    values = np.array([np.nan, 3.0, 2.0, np.nan, np.nan, 5.0])
    known = ~np.isnan(values)
    out = np.full(3, -np.inf)
    np.maximum.at(out, group[known], values[known])
    out[np.bincount(group[known], minlength=3) == 0] = np.nan
    expected = pd.Series(values).groupby(group).max().to_numpy()
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("size", [0, 1])
def test_sort_helpers_on_empty_and_one_row(size: int) -> None:
    values = np.arange(size, dtype=float)
    assert ff.sort_values_order(values, False).tolist() == list(range(size))
    assert ff.sort_order([values, np.arange(size)], [False, True]).tolist() == list(range(size))
    group, labels = ff.text_groups(np.zeros(size, np.int64), np.array(["a"], object))
    assert group.tolist() == [0] * size and labels.tolist() == ["a"] * min(size, 1)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=60))
def test_sync_by_name_chain_equals_pandas(rows: list) -> None:
    # sync_stats' blocking calls by name: groupby("name") count and sum, sort_values("sum", descending), head
    from tracelens.analyses.grouping import sum_per_slot

    texts = np.array(["b", "a", "c", "a2", "b", "z", "m"], object)  # "b" twice: two codes, one name
    code = np.array([r[0] for r in rows], np.int64)
    dur = np.array([r[1] for r in rows], np.int64)
    group, by_name = ff.text_groups(code, texts)
    count = np.bincount(group, minlength=by_name.size)
    total = sum_per_slot(group, dur, by_name.size)
    top = ff.sort_values_order(total, ascending=False)[:3]
    frame = pd.DataFrame({"name": texts[code] if code.size else [], "dur": dur})
    expected = frame.groupby("name")["dur"].agg(["count", "sum"]).sort_values("sum", ascending=False).head(3)
    assert [(by_name[i], int(count[i]), int(total[i])) for i in top] == [
        (n, int(r["count"]), int(r["sum"])) for n, r in expected.iterrows()
    ]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 4)), min_size=1, max_size=40))
def test_device_items_grouping_equals_pandas(rows: list) -> None:
    # startup.device_items: groupby(["name", "reason"], sort=False) size and sums, sorted (summed desc, name asc)
    from tracelens.analyses.grouping import sum_per_slot

    name = np.array([r[0] for r in rows], np.int64)
    reason = np.array([r[1] for r in rows], np.int8)
    idle = np.array([r[2] for r in rows], np.int64)
    group = ff.group_numbers([name, reason])
    groups = int(group.max()) + 1
    first = np.unique(group, return_index=True)[1]
    summed = sum_per_slot(group, idle, groups)
    top = ff.sort_order([summed, name[first]], [False, True])
    frame = pd.DataFrame({"name": name, "reason": reason, "idle": idle})
    grouped = frame.groupby(["name", "reason"], sort=False).agg(
        count=("idle", "size"), summed=("idle", "sum")
    )
    grouped = grouped.reset_index().sort_values(["summed", "name"], ascending=[False, True])
    got = [(int(name[first[g]]), int(reason[first[g]]), int(np.sum(group == g)), int(summed[g])) for g in top]
    assert got == [(int(r.name), int(r.reason), int(r.count), int(r.summed)) for r in grouped.itertuples()]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6)), max_size=12),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 6)), max_size=15),
)
def test_forward_match_is_merge_asof_forward(left: list, right: list) -> None:
    # flop_context's convolution consumers: pd.merge_asof(by=..., direction="forward") on stably sorted rows,
    # ties in time going to the first right row
    from tracelens.analyses.ops.flop_context import forward_match

    lg = np.array([g for g, _ in left], np.int64)
    lt = np.array([t for _, t in left], np.int64)
    rg = np.array([g for g, _ in right], np.int64)
    rt = np.array([t for _, t in right], np.int64)
    got = forward_match(lg, lt, rg, rt)
    asked = pd.DataFrame({"g": lg, "t": lt, "at": np.arange(lg.size)}).sort_values("t", kind="stable")
    rows = pd.DataFrame({"g": rg, "rt": rt, "row": np.arange(rg.size)}).sort_values("rt", kind="stable")
    found = pd.merge_asof(asked, rows, left_on="t", right_on="rt", by="g", direction="forward")
    expected = np.full(lg.size, -1)
    hit = found["row"].notna().to_numpy()
    expected[found["at"].to_numpy()[hit]] = found["row"].to_numpy()[hit].astype(np.int64)
    assert got.tolist() == expected.tolist()


def _process_groups_with_pandas(msgs: dict, duration: np.ndarray) -> list[dict]:
    """communication.process_groups as it was (frames), the reference."""
    frame = pd.DataFrame(
        {
            "name": msgs["process_group"],
            "ranks": msgs["group_ranks"],
            "group": pd.to_numeric(pd.Series(msgs["group_size"]), errors="coerce").to_numpy(float),
            "ns": duration,
        }
    )
    frame = frame[frame["name"].notna() | frame["ranks"].notna()]
    if frame.empty:
        return []
    keys = ["name", "ranks", "group"]
    table = (
        frame.fillna({"name": "", "ranks": "", "group": -1})
        .groupby(keys)["ns"]
        .agg(["size", "sum"])
        .reset_index()
    )
    table.columns = [*keys, "count", "time_ns"]
    table = table.sort_values(["time_ns", "name"], ascending=[False, True])
    return [
        {
            "name": r.name or None,
            "ranks": r.ranks or None,
            "group_size": int(r.group) if r.group >= 0 else None,
            "count": int(r.count),
            "time_ns": int(r.time_ns),
        }
        for r in table.itertuples(index=False)
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "pg0", "pg1", ""]),
            st.sampled_from([None, "[0,1]", "[0]"]),
            st.sampled_from([np.nan, 2.0, 4.0]),
            st.integers(0, 5),
        ),
        max_size=25,
    )
)
def test_process_groups_equal_the_frames(rows: list) -> None:
    from tracelens.analyses.communication import process_groups

    msgs = {
        "process_group": np.array([r[0] for r in rows] + [None], dtype=object)[:-1],
        "group_ranks": np.array([r[1] for r in rows] + [None], dtype=object)[:-1],
        "group_size": np.array([r[2] for r in rows], float),
    }
    duration = np.array([r[3] for r in rows], np.int64)
    assert process_groups(msgs, duration) == _process_groups_with_pandas(msgs, duration)


def test_recorded_launches_of_equal_the_frames_count() -> None:
    # ops.tree.recorded_launches_of against the frame it replaced: distinct (name, device, launch) rows per name
    from pathlib import Path

    import tracelens
    from tracelens.analyses.launch import launch_pairs
    from tracelens.analyses.ops.tree import recorded_launches_of, recorded_op_codes

    trace = tracelens.load(Path(__file__).resolve().parent.parent / "fixtures/gpu/jax_mlp_cuda.xplane.pb")
    pairs = launch_pairs(trace)
    recorded = recorded_op_codes(trace)
    rec = np.flatnonzero(recorded >= 0)
    corr = pairs["correlation_id"][rec].astype(np.int64)
    frame = pd.DataFrame(
        {"name": recorded[rec], "device": pairs["device"][rec], "launch": np.where(corr >= 0, corr, -1 - rec)}
    )
    expected = frame.drop_duplicates().groupby("name").size()
    codes, launches = recorded_launches_of(trace)
    assert codes.tolist() == expected.index.tolist() and launches.tolist() == expected.tolist()
    assert codes.size > 0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", None]), max_size=6),
    st.lists(st.sampled_from(["a", "b", "d", "e"]), max_size=8),
)
def test_codes_of_is_the_index_lookup(names: list, texts: list) -> None:
    # ops.tree._codes_of against pd.Index.get_indexer, as it was written with pandas
    from tracelens.analyses.ops.tree import _codes_of

    array = np.array([*names, None], dtype=object)[:-1]
    index, wanted = pd.Index(array), pd.Index(texts, dtype=object)
    existing = index.get_indexer(wanted) if index.is_unique else np.full(len(wanted), -1)
    new = pd.Index(wanted[existing < 0].unique())
    expected = np.where(existing >= 0, existing, len(array) + new.get_indexer(wanted))
    target, extended = _codes_of(array, texts)
    assert target.tolist() == expected.astype(np.int64).tolist()
    assert extended.tolist() == [*names, *new.tolist()]
