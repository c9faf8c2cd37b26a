"""The calls that launched a copy by the compiled walk (copy_calls.py, ``_op_tree.launched_calls``) against the
numpy path memcpy.py keeps (``member_ids`` + ``blocks.rows_of_kind_at``) and an independent ``np.isin``."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest

from tracelens.analyses import copy_calls, memcpy
from tracelens.analyses.blocks import rows_of_kind_at

needs_build = pytest.mark.skipif(
    copy_calls._compiled is None or not hasattr(copy_calls._compiled, "launched_calls"),
    reason="the compiled op-tree pass is not built",
)
CODES = (2, 5)


def _reference(kind: np.ndarray, call_corr: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    calls = np.flatnonzero(np.isin(kind, CODES))
    hit = np.flatnonzero(np.isin(call_corr, wanted))
    return calls[hit].astype(np.int64), call_corr[hit].astype(np.int64)


def _check(kind: np.ndarray, call_corr: np.ndarray, wanted: np.ndarray) -> None:
    got = copy_calls.launched_call_rows(kind, CODES, call_corr, wanted)
    assert got is not None
    want = _reference(kind, call_corr, wanted)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, w)
    # the numpy path of memcpy.launch_mode_codes
    launched = np.flatnonzero(memcpy.member_ids(call_corr, wanted))
    np.testing.assert_array_equal(got[0], rows_of_kind_at(kind, CODES, launched))


@needs_build
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("id_type", [np.int32, np.int64])
def test_launched_calls_is_isin(seed: int, id_type: type) -> None:
    rnd = np.random.default_rng(seed)
    n = int(rnd.integers(1, 20000))
    kind = rnd.choice(np.array([0, 2, 3, 5], np.int8), n)
    calls = int(np.isin(kind, CODES).sum())
    spread = [50, 10**6, 2**31 - 1][seed % 3]  # dense ids, sparse ids, ids up to the int32 edge
    call_corr = rnd.integers(-5, spread, calls).astype(id_type)
    wanted = np.r_[rnd.choice(call_corr, min(calls, 300)) if calls else [], rnd.integers(-10, spread, 50)]
    _check(kind, call_corr, wanted.astype(np.int64))


@needs_build
def test_launched_calls_edges() -> None:
    one = np.array([7], np.int64)
    _check(np.array([2], np.int8), one, one)  # one row, one call, wanted
    _check(np.array([5], np.int8), one, one + 1)  # one call, not wanted
    _check(np.array([0, 1], np.int8), np.zeros(0, np.int64), one)  # no call
    # ties: every call the same id, wanted twice; more wanted calls than the first room (a second walk)
    _check(np.full(500, 2, np.int8), np.full(500, 9, np.int64), np.array([9, 9], np.int64))
    # the int64 extremes and 0 as ids (slot hashes and low bits of negatives)
    ids = np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max, 1 << 40], np.int64)
    _check(np.full(5, 5, np.int8), ids, ids[[0, 3, 4]])


@needs_build
def test_launched_calls_declines() -> None:
    kind, ids = np.array([2, 5], np.int8), np.array([1, 2], np.int64)
    assert copy_calls.launched_call_rows(kind, CODES, ids[:1], ids) is None  # the kinds hold 2 calls, 1 id
    assert copy_calls.launched_call_rows(kind, (2, 5, 6), ids, ids) is None
    assert copy_calls.launched_call_rows(kind.astype(np.int16), CODES, ids, ids) is None
    assert copy_calls.launched_call_rows(kind, CODES, ids, ids[:0]) is None
    assert copy_calls.launched_call_rows(kind, CODES, ids.astype(np.int16), ids) is None
    with mock.patch.object(copy_calls, "_compiled", None):
        assert copy_calls.launched_call_rows(kind, CODES, ids, ids) is None


TRACES = [
    "gpu/transformer_bf16_cuda.pt.trace.json.gz",
    "gpu/pairs/launch_before.pt.trace.json.gz",
    "nsys/handmade_nsys2026.sqlite",
    "gpu/cuda_graph_cuda.pt.trace.json.gz",
]


@pytest.mark.parametrize("name", TRACES)
def test_memcpy_with_and_without_the_walk(name: str) -> None:
    import tracelens
    from tests.conftest import fixture_path

    got = memcpy.section(tracelens.load(fixture_path(name)), {})
    with mock.patch.object(copy_calls, "_compiled", None):
        want = memcpy.section(tracelens.load(fixture_path(name)), {})
    assert got == want
