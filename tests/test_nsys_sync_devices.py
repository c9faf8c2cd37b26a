"""The device of a CUPTI synchronization row: CUPTI's record has none, and nsys writes 0 (every SYNCHRONIZATION row of
the h100x2 window export says device 0, process 112's too, whose every GPU op runs on device 1). The replay no longer
trusts it (kcbf26), but the trace kept it: ``tracelens annotate`` drew process 112's syncs of its stream 15 on GPU 0's
track. A sync row's device is now its stream's (the one device the process runs that stream's ops on), else its
process's (the one device it runs GPU ops on), else as exported; every expectation is SQL over the export."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params

from tests.nsys_handmade_export import edited_copy, query
from tracelens.ingest import load

PID = "(globalPid >> 24) & 16777215"
OPS = " UNION ".join(
    f"SELECT DISTINCT {PID} AS pid, streamId, deviceId FROM CUPTI_ACTIVITY_KIND_{t}"
    for t in ("KERNEL", "MEMCPY", "MEMSET")
)


def _sync_devices(path: Path) -> list[int]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    ev = trace.events
    kind = np.asarray(ev.column("kind").to_pylist())
    start = ev.column("start_ns").to_numpy() + trace.metadata.time_origin_ns
    rows = np.flatnonzero(kind == "gpu_sync")
    rows = rows[np.argsort(start[rows], kind="stable")]
    return [int(d) for d in ev.column("device").to_numpy(zero_copy_only=False)[rows]]


def _expected(path: Path) -> list[int]:
    # per sync row (by start): its stream's one device, else its process's one device, else its deviceId
    return [
        r[0]
        for r in query(
            path,
            f"""SELECT COALESCE(
                  (SELECT CASE WHEN count(DISTINCT deviceId) = 1 THEN max(deviceId) END FROM ({OPS}) o
                   WHERE o.pid = {PID.replace("globalPid", "s.globalPid")} AND o.streamId = s.streamId),
                  (SELECT CASE WHEN count(DISTINCT deviceId) = 1 THEN max(deviceId) END FROM ({OPS}) o
                   WHERE o.pid = {PID.replace("globalPid", "s.globalPid")}),
                  s.deviceId)
                FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION s ORDER BY s.start, s.rowid""",
        )
    ]


def test_syncs_of_a_process_on_device_1_are_on_device_1(tmp_path: Path) -> None:
    # the handmade export's process runs every op on device 1; its sync row still says device 0 (as nsys writes)
    path = edited_copy(
        tmp_path / "gpu1.sqlite",
        *(f"UPDATE CUPTI_ACTIVITY_KIND_{t} SET deviceId = 1" for t in ("KERNEL", "MEMCPY", "MEMSET")),
        "UPDATE TARGET_INFO_GPU SET id = 1",
    )
    assert {r[0] for r in query(path, "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")} == {0}
    assert _sync_devices(path) == _expected(path) == [1]


def test_a_sync_takes_its_streams_device_where_the_process_has_two(tmp_path: Path) -> None:
    # one process on two devices: stream 7's ops on device 1, stream 9's on device 0; a sync of stream 7 is on 1,
    # a sync of a stream without ops keeps its recorded device (the process has two)
    path = edited_copy(
        tmp_path / "two_devices.sqlite",
        *(
            f"UPDATE CUPTI_ACTIVITY_KIND_{t} SET deviceId = 1 WHERE streamId = 7"
            for t in ("KERNEL", "MEMCPY", "MEMSET")
        ),
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 9, deviceId = 0 WHERE correlationId = 106",
        "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET streamId = 7",
        "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SELECT start + 1, end, 0, contextId, greenContextId, 33, "
        "correlationId, globalPid, deprecatedSyncType, syncType, eventId, eventSyncId "
        "FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    )
    assert sorted(query(path, f"SELECT DISTINCT deviceId FROM ({OPS})")) == [(0,), (1,)]
    assert _sync_devices(path) == _expected(path) == [1, 0]


@pytest.mark.parametrize("path", shared_params("nsys", "h100x2_*.sqlite"))
def test_the_h100x2_window_syncs_are_on_their_processes_gpus(path: Path) -> None:
    expected = _expected(path)
    assert sorted(set(expected)) == [0, 1]  # (as exported, every row says 0)
    assert _sync_devices(path) == expected
