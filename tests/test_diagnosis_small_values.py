"""What the diagnosis reads instead of the big shared values (analyses.MEMO_READERS): the ops it names
(``ops.diagnosis_ops``, found by the ops section while the op tree is held) against the functions computing them
on a fresh trace, and the diagnosis the same with or without the ops section in the run; a host category's rows
without the host rows, and the one-time rows on the threads feeding a device from the attribution section's list,
against the host rows' and the feeding threads found again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import shared_traces

import tracelens
from tracelens.analyses import derived
from tracelens.analyses.attribution import feeding_threads, host_rows, thread_row_mask
from tracelens.analyses.columns import device_busy, event_columns
from tracelens.analyses.diagnosis import cause
from tracelens.analyses.diagnosis.cause import Context, category_rows, top_host_names
from tracelens.analyses.diagnosis.startup import on_feeding_threads
from tracelens.analyses.names import HOST_CATEGORY_PRIORITY
from tracelens.analyses.ops import diagnosis_ops, gap_ops, launching_ops, optimizer_step, sync_ops
from tracelens.analyses.startup import one_time_work

ROOT = Path(__file__).resolve().parent.parent
TRACES = [
    ROOT / "fixtures" / "demo.pt.trace.json.gz",
    *sorted((ROOT / "fixtures").glob("nsys/*.sqlite"))[:2],
    *sorted((ROOT / "fixtures").glob("gpu/*.pt.trace.json.gz"))[:3],
    *shared_traces("pytorch", "*.json.gz")[:2],
]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_ops_the_diagnosis_names_are_the_evidence_functions(path: Path) -> None:
    trace = tracelens.load(path)
    found = diagnosis_ops(trace)
    fresh = tracelens.load(path)
    assert found.launching_ops == launching_ops(fresh)
    assert found.optimizer_step == optimizer_step(fresh)
    assert found.sync_ops == sync_ops(fresh)
    assert found.gap_ops == gap_ops(fresh)
    # each ask a copy: what the diagnosis puts into its document is not the held value
    found.launching_ops.append({"name": "changed"})
    assert diagnosis_ops(trace).launching_ops == launching_ops(fresh)


@pytest.mark.parametrize("path", TRACES[:4], ids=lambda p: p.name)
def test_the_diagnosis_is_the_same_with_or_without_the_ops_section(path: Path) -> None:
    whole = tracelens.analyze(tracelens.load(path), threads=1)
    trace = tracelens.load(path)
    alone = tracelens.analyze(trace, sections=["diagnosis"], threads=1)
    assert "ops" not in alone
    assert alone["diagnosis"] == whole["diagnosis"]


def test_the_op_tree_goes_after_the_ops_section_and_the_what_if_replay() -> None:
    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    with derived.recording_reads() as log:
        tracelens.analyze(trace, threads=1)
    op_values = {"op_tree", "op_names", "gpu_op_name_codes", "emit_nvtx_rows", "framework_op_rows"}
    held = {derived.memo_family(key) for key in derived.memo_keys(trace)}
    assert not held & op_values
    assert "op_evidence" in held
    # the diagnosis reads neither those nor the host rows (nothing computed again for it)
    read = {derived.memo_family(key) for section, key, _ in log if section == "diagnosis"}
    assert "op_evidence" in read
    assert not read & (op_values | {"host_rows"})


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_a_host_categorys_rows_are_the_host_rows_of_that_category(path: Path) -> None:
    trace = tracelens.load(path)
    rows = host_rows(tracelens.load(path))
    for code, category in enumerate(HOST_CATEGORY_PRIORITY):
        picked = list(category_rows(trace, category))
        assert np.array_equal(np.concatenate(picked), rows.row[rows.category == code]), category


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_top_host_names_in_chunks_are_those_of_every_row_at_once(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In chunks of 7 rows (many chunks on every trace here) against the host rows' names counted at once."""
    trace = tracelens.load(path)
    rows = host_rows(tracelens.load(path))
    cols = event_columns(trace)
    monkeypatch.setattr(cause, "ROW_CHUNK", 7)
    for code, category in enumerate(HOST_CATEGORY_PRIORITY):
        picked = rows.row[(rows.category == code) & (cols.name[rows.row] >= 0)]
        frame = pd.DataFrame({"name": cols.name[picked], "ns": cols.end[picked] - cols.start[picked]})
        table = frame.groupby("name")["ns"].agg(["size", "sum"]).reset_index()
        table = table.sort_values(["sum", "name"], ascending=[False, True]).head(5)
        expected = [
            {"name": str(cols.names[r.name]), "count": int(r.size), "total_ns": int(r.sum)}
            for r in table.itertuples(index=False)
        ]
        assert top_host_names(trace, category) == expected, category


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_the_startup_rows_on_feeding_threads_read_from_the_attribution_list_or_found_again(
    path: Path,
) -> None:
    trace = tracelens.load(path)
    doc = tracelens.analyze(trace, sections=["attribution"], threads=1)
    attribution = {a["device"]: a for a in (doc["attribution"] or {}).get("devices") or []}
    rows = np.flatnonzero(one_time_work(trace).mask)
    for device, busy in device_busy(trace).items():
        threads, _ = feeding_threads(trace, device)
        expected = thread_row_mask(trace, threads, among=rows)
        ctx = Context(trace, {}, 0, "unknown", {device: busy}, attribution, ())
        assert np.array_equal(on_feeding_threads(ctx, device, rows), expected)
        # a list the attribution section cut short (over 64 threads): the threads found again
        if device in attribution:
            short: dict[int, Any] = {device: {**attribution[device], "feeding_thread_count": 65}}
            ctx = Context(trace, {}, 0, "unknown", {device: busy}, short, ())
            assert np.array_equal(on_feeding_threads(ctx, device, rows), expected)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_rows_on_listed_threads_are_the_rows_of_those_host_row_threads(path: Path) -> None:
    """Each host-row thread listed alone, among every host row (not only the one-time rows, on the feeding
    threads on every trace here): the rows of that thread, as thread_row_mask finds them."""
    trace = tracelens.load(path)
    rows = host_rows(trace)
    among = np.sort(rows.row.astype(np.int64))
    threads = np.column_stack([rows.threads.pid, rows.threads.tid])
    for code in range(min(len(threads), 8)):
        listed = [[int(p), int(t)] for p, t in threads[[code]]]
        alone: dict[int, Any] = {0: {"feeding_threads": listed, "feeding_thread_count": 1}}
        ctx = Context(trace, {}, 0, "unknown", {}, alone, ())
        expected = thread_row_mask(trace, np.array([code]), among=among)
        assert expected.any()
        assert np.array_equal(on_feeding_threads(ctx, 0, among), expected)
