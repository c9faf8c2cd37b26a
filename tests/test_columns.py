"""Shared column helpers (tracelens/analyses/columns.py) checked against plain Python."""

from __future__ import annotations

import numpy as np

from tracelens.values import dense_codes, distinct


def test_distinct_is_first_appearance_order():
    rng = np.random.default_rng(3)
    for high in (1, 40, 5000):
        values = rng.integers(-5, high, size=1000)
        expected = list(dict.fromkeys(values.tolist()))  # first appearance, by plain Python
        assert distinct(values).tolist() == expected


def test_dense_codes_match_a_sorted_factorize_with_nan_last():
    values = np.array([3.0, np.nan, -1.0, 3.0, 7.0, np.nan, -1.0])
    codes, uniques = dense_codes(values)
    assert uniques[:3].tolist() == [-1.0, 3.0, 7.0] and np.isnan(uniques[3]) and uniques.size == 4
    assert codes.tolist() == [1, 3, 0, 1, 2, 3, 0]


def test_id_columns_are_int32_below_2_30_and_int64_above_and_launches_still_pair():
    from tracelens.analyses.columns import event_columns
    from tracelens.analyses.launch import launch_calls
    from tracelens.trace import Trace

    def trace(corr: int) -> Trace:
        return Trace.from_rows(
            [
                {
                    "kind": "driver",
                    "name": "cuLaunchKernel",
                    "start_ns": 0,
                    "end_ns": 5,
                    "pid": 1,
                    "tid": 1,
                    "correlation_id": corr,
                },
                {
                    "kind": "runtime",
                    "name": "cudaLaunchKernel",
                    "start_ns": 1,
                    "end_ns": 4,
                    "pid": 1,
                    "tid": 1,
                    "correlation_id": corr,
                },
                {
                    "kind": "kernel",
                    "name": "k",
                    "start_ns": 10,
                    "end_ns": 20,
                    "device": 0,
                    "correlation_id": corr,
                },
            ]
        )

    small, big = trace(7), trace(2**31 - 1)  # doubled, 2^31 - 1 wraps in int32: it must stay int64
    assert event_columns(small).correlation_id.dtype == np.int32
    assert event_columns(big).correlation_id.dtype == np.int64
    for t in (small, big):
        calls = launch_calls(t)
        assert len(calls) == 1 and not calls["is_driver"][0]  # the runtime row wins over the driver row


def test_code_masks_equal_one_code_mask_per_predicate():
    from tracelens.analyses.names import code_mask, code_masks

    dictionary = np.array(["cudaMalloc", "aten::mm", "cudaLaunchKernel", "cudaFree"], dtype=object)
    codes = np.array([0, 1, -1, 2, 3, 3, 0, -1])
    predicates = (lambda n: n.startswith("cuda"), lambda n: "Free" in n or "Malloc" in n, lambda n: False)
    masks = code_masks(codes, dictionary, predicates)
    for predicate, mask in zip(predicates, masks, strict=True):
        assert mask.tolist() == code_mask(codes, dictionary, predicate).tolist()
    assert masks[1].tolist() == [True, False, False, False, True, True, True, False]  # by hand


def test_is_member_equals_isin():
    from tracelens.values import is_member

    rng = np.random.default_rng(11)
    values = rng.integers(-3, 50, size=500)
    for allowed in (rng.integers(0, 60, size=40), np.array([], np.int64), np.array([49, 49, -3])):
        assert is_member(values, allowed).tolist() == np.isin(values, allowed).tolist()


def test_dense_codes_of_a_few_integers_equal_the_binary_search() -> None:
    # up to values.FEW_CODES distinct integers are coded by comparisons, more by np.searchsorted: the same codes
    rng = np.random.default_rng(5)
    for dtype in (np.int8, np.int32, np.int64, np.uint16):
        for count in (1, 2, 3, 4, 5, 9):
            pool = rng.choice(np.arange(0, 120), count, replace=False).astype(dtype)
            values = rng.choice(pool, 500)
            codes, uniques = dense_codes(values)
            assert uniques.tolist() == sorted(set(values.tolist()))
            assert codes.dtype == np.intp and codes.tolist() == np.searchsorted(uniques, values).tolist()
    codes, uniques = dense_codes(np.zeros(0, np.int64))
    assert codes.size == 0 and uniques.size == 0
