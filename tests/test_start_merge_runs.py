"""The start merge's walk (ingest/_start_merge.c: each GPU key's run of host keys found by steps of 8 then 1 and
written by a plain loop) against numpy's stable sort of all the starts: host runs of every length around the
step (0 to 40 keys between GPU keys), GPU keys at either end and back to back, ties, and the (start, GPU rows)
that real traces under ../shared/traces/pytorch give the merge inside a load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params

import tracelens
from tracelens.ingest.kineto import start_order as so
from tracelens.ingest.kineto.placing import in_table_order

pytestmark = pytest.mark.skipif(so._compiled is None, reason="the start merge is not compiled here")


def check(start: np.ndarray, gpu_rows: np.ndarray) -> None:
    merged = so.merged_start_order(start, gpu_rows)
    assert merged is not None
    order, relative, origin, (kept, at) = merged
    want = np.argsort(start, kind="stable")
    np.testing.assert_array_equal(order, want)
    np.testing.assert_array_equal(relative, start[want] - start[want[0]])
    assert origin == int(start[want[0]])
    want_kept, want_at = in_table_order(gpu_rows, want, start.size)
    np.testing.assert_array_equal(kept, want_kept)
    np.testing.assert_array_equal(at, want_at)


def runs(lengths: list[int], tail: int, tie: bool) -> tuple[np.ndarray, np.ndarray]:
    """Host rows in runs of ``lengths`` (starts ascending) each followed by a GPU row, then ``tail`` host rows;
    with ``tie`` each GPU row starts with the host row before it (the stable order keeps the file's)."""
    start, gpu, t = [], [], 0
    for length in lengths:
        for _ in range(length):
            t += 2
            start.append(t)
        gpu.append(len(start))
        start.append(t if tie and length else t + 1)
    for _ in range(tail):
        t += 2
        start.append(t)
    return np.array(start, np.int64), np.array(gpu, np.int64)


@pytest.mark.parametrize("tie", [False, True])
@pytest.mark.parametrize("tail", [0, 1, 7, 8, 9, 17])
def test_host_runs_of_every_length(tail: int, tie: bool) -> None:
    lengths = list(range(41)) + list(range(40, -1, -1)) + [0, 0, 16, 0, 24, 8, 0]
    start, gpu = runs(lengths, tail, tie)
    if tail == 0 and gpu[-1] == start.size - 1 and gpu.size == start.size:
        pytest.skip("no host row")
    check(start, gpu)


@pytest.mark.parametrize("lead", [0, 1, 8, 33])
def test_gpu_keys_first_or_last(lead: int) -> None:
    # every GPU row before every host row by start (file order: host rows first), and the other way round
    n = lead + 20
    gpu = np.arange(lead, n, 2, dtype=np.int64)
    host = np.setdiff1d(np.arange(n), gpu)
    start = np.empty(n, np.int64)
    start[gpu] = np.arange(gpu.size)
    start[host] = 1000 + np.arange(host.size)
    check(start, gpu)
    start[gpu], start[host] = 1000 + np.arange(gpu.size), np.arange(host.size)
    check(start, gpu)


def test_nearly_sorted_runs_random() -> None:
    rng = np.random.default_rng(11)
    n = 200_000
    start = np.cumsum(rng.integers(0, 3, n)).astype(np.int64)
    start[rng.choice(n, 300, replace=False)] -= rng.integers(0, 5_000, 300)  # descents in both kinds
    gpu = np.sort(rng.choice(n, n // 7, replace=False)).astype(np.int64)
    check(start, gpu)


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_real_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    merged = so.merged_start_order

    def recording(start: np.ndarray, gpu_rows: np.ndarray):  # type: ignore[no-untyped-def]
        seen.append((start.copy(), gpu_rows.copy()))
        return merged(start, gpu_rows)

    monkeypatch.setattr(so, "merged_start_order", recording)
    tracelens.load(path)
    monkeypatch.undo()  # (check calls the merge itself)
    assert seen
    for start, gpu in seen:
        if 0 < gpu.size < start.size:
            check(start, gpu)
