"""The common table: schema, building, save/load round trip, and the devices block on a hand-made case."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import tracelens
from tracelens import intervals
from tracelens.analyses import analyze
from tracelens.trace import EVENT_SCHEMA, Trace


def _two_streams() -> Trace:
    # Device 0: stream 7 kernels [0,100) and [150,200); stream 8 memcpy [50,120) -> union [0,120)+[150,200)
    # busy = 120 + 50 = 170, span = 200, utilization = 0.85. Host: one runtime call [0,10).
    return Trace.from_rows(
        [
            {"kind": "kernel", "name": "k1", "start_ns": 0, "end_ns": 100, "device": 0, "stream": 7},
            {"kind": "kernel", "name": "k2", "start_ns": 150, "end_ns": 200, "device": 0, "stream": 7},
            {
                "kind": "memcpy",
                "name": "Memcpy HtoD",
                "start_ns": 50,
                "end_ns": 120,
                "device": 0,
                "stream": 8,
                "bytes": 4096,
                "copy_kind": "HtoD",
            },
            {"kind": "runtime", "name": "cudaLaunchKernel", "start_ns": 0, "end_ns": 10, "pid": 1, "tid": 1},
        ],
        devices=[{"id": 0, "name": "Hand GPU", "sm_count": 10}],
    )


def test_schema_is_exact_and_sorted():
    trace = _two_streams()
    assert trace.events.schema == EVENT_SCHEMA
    starts = trace.events.column("start_ns").to_pylist()
    assert starts == sorted(starts)


def test_end_before_start_is_clamped():
    trace = Trace.from_rows([{"kind": "kernel", "name": "k", "start_ns": 10, "end_ns": 5, "device": 0}])
    assert trace.events.column("end_ns").to_pylist() == [10]


def test_devices_block_hand_derived():
    doc = analyze(_two_streams())
    (dev,) = doc["devices"]
    assert dev["id"] == 0 and dev["name"] == "Hand GPU"
    assert dev["busy_ns"] == 170 and dev["span_ns"] == 200
    assert dev["utilization"] == 170 / 200
    assert (dev["kernel_count"], dev["kernel_ns"]) == (2, 150)
    assert (dev["memcpy_count"], dev["memcpy_ns"]) == (1, 70)
    assert (dev["memset_count"], dev["memset_ns"]) == (0, 0)


def test_no_gpu_activity_reports_host():
    trace = Trace.from_rows(
        [{"kind": "cpu_op", "name": "aten::add", "start_ns": 0, "end_ns": 40, "pid": 1, "tid": 2}]
    )
    doc = analyze(trace)
    assert doc["devices"] == []
    assert doc["host"]["has_gpu_activity"] is False
    assert doc["host"]["by_kind"] == [{"kind": "cpu_op", "count": 1, "total_ns": 40}]


def test_parquet_round_trip(tmp_path):
    trace = _two_streams()
    out = tmp_path / "t.parquet"
    trace.save(out)
    back = tracelens.load(out)
    assert back.events.select(["kind", "name", "start_ns", "end_ns", "device", "stream", "bytes"]).equals(
        trace.events.select(["kind", "name", "start_ns", "end_ns", "device", "stream", "bytes"])
    )
    assert back.device_info(0)["name"] == "Hand GPU"


def test_parquet_written_before_1_1_reads_new_columns_as_null(tmp_path):
    import pyarrow.parquet as pq

    from tracelens.trace import COLUMNS_ADDED_SINCE_1_0

    trace = _two_streams()
    out = tmp_path / "t.parquet"
    trace.save(out)
    old = pq.read_table(out)
    pq.write_table(old.drop_columns(list(COLUMNS_ADDED_SINCE_1_0)), out)  # as schema 1.0 wrote it
    back = tracelens.load(out)
    assert back.events.schema == EVENT_SCHEMA
    assert all(
        back.events.column(name).null_count == back.events.num_rows for name in COLUMNS_ADDED_SINCE_1_0
    )
    assert back.events.column("bytes").to_pylist() == trace.events.column("bytes").to_pylist()


def test_interval_union_and_overlap():
    s, e = intervals.merge([0, 50, 150, 200], [100, 120, 200, 210])
    assert s.tolist() == [0, 150] and e.tolist() == [120, 210]  # touching [150,200)+[200,210) join
    assert intervals.union_length([0, 5], [10, 7]) == 10
    gs, ge = intervals.gaps([0, 150], [120, 200])
    assert gs.tolist() == [120] and ge.tolist() == [150]
    covered = intervals.overlap_with_union(
        [0, 110, 130, 300],
        [20, 160, 140, 400],
        pa.array([0, 150]).to_numpy(),
        pa.array([120, 210]).to_numpy(),
    )
    assert covered.tolist() == [20, 20, 0, 0]


def test_depth_hand_derived():
    # Thread 1: A [0,100) contains B [10,50) which contains C [20,30); D [50,60) is B's sibling (starts as B
    # ends); Z [70,70) is zero-length inside A. Thread 2: E [5,15) alone. GPU rows get no depth.
    trace = Trace.from_rows(
        [
            {"kind": "cpu_op", "name": "A", "start_ns": 0, "end_ns": 100, "pid": 1, "tid": 1},
            {"kind": "cpu_op", "name": "B", "start_ns": 10, "end_ns": 50, "pid": 1, "tid": 1},
            {"kind": "runtime", "name": "C", "start_ns": 20, "end_ns": 30, "pid": 1, "tid": 1},
            {"kind": "cpu_op", "name": "D", "start_ns": 50, "end_ns": 60, "pid": 1, "tid": 1},
            {"kind": "annotation", "name": "Z", "start_ns": 70, "end_ns": 70, "pid": 1, "tid": 1},
            {"kind": "cpu_op", "name": "E", "start_ns": 5, "end_ns": 15, "pid": 1, "tid": 2},
            {"kind": "kernel", "name": "K", "start_ns": 20, "end_ns": 40, "device": 0, "stream": 7},
        ]
    )
    depth = dict(
        zip(trace.events.column("name").to_pylist(), trace.events.column("depth").to_pylist(), strict=True)
    )
    assert depth == {"A": 0, "B": 1, "C": 2, "D": 1, "Z": 1, "E": 0, "K": None}


def _mostly_ranges() -> Trace:
    # 6 NVTX ranges on one thread and 2 kernels: kernel columns (device, grid) are carried by 2 of 8 rows.
    rows = [
        {"kind": "annotation", "name": f"r{i}", "start_ns": 10 * i, "end_ns": 10 * i + 5, "pid": 1, "tid": 2}
        for i in range(6)
    ]
    rows += [
        {"kind": "kernel", "name": "k", "start_ns": 12, "end_ns": 20, "device": 0, "stream": 7, "grid_x": 4},
        {"kind": "kernel", "name": "k", "start_ns": 33, "end_ns": 40, "device": 0, "stream": 7, "grid_x": 8},
    ]
    return Trace.from_rows(rows)


def test_store_keeps_columns_few_rows_carry_sparse_and_rebuilds_the_documented_table():
    from tracelens.trace import SparseColumn

    trace = _mostly_ranges()
    store = trace.store
    assert isinstance(store.columns["grid_x"], SparseColumn) and isinstance(
        store.columns["device"], SparseColumn
    )
    assert not isinstance(store.columns["pid"], SparseColumn)  # 6 of 8 rows carry it: dense
    assert "bytes" not in store.columns  # no row carries it: not stored
    table = trace.events
    assert table.schema == EVENT_SCHEMA and table.num_rows == 8
    # time order: r0 [0,5) r1 [10,15) k [12,20) r2 [20,25) r3 [30,35) k [33,40) r4 r5
    assert table.column("kind").to_pylist() == [
        "annotation",
        "annotation",
        "kernel",
        "annotation",
        "annotation",
        "kernel",
        "annotation",
        "annotation",
    ]
    assert table.column("grid_x").to_pylist() == [None, None, 4, None, None, 8, None, None]
    assert table.column("bytes").null_count == 8
    assert store.take("grid_x", [5, 0, 2]).to_pylist() == [8, None, 4]
    assert store.take("pid", [2, 1]).to_pylist() == [None, 1]
    assert store.numpy("device").tolist() == [-1, -1, 0, -1, -1, 0, -1, -1]
    assert trace.frame([2, 5], ["name", "grid_x"])["grid_x"].tolist() == [4, 8]


def test_store_of_a_documented_table_is_the_same_table():
    trace = _mostly_ranges()
    again = Trace(events=trace.events, devices=trace.devices, metadata=trace.metadata)
    assert again.events.equals(trace.events)
    assert again.store.take("grid_x", [2, 3]).to_pylist() == [4, None]
    assert again.num_events == 8


def test_host_summary_is_the_same_in_chunks_and_by_hash(monkeypatch):
    """host_summary sums a chunk of rows at a time, into every (kind, name) slot or, with a huge name
    dictionary, by hash: every way gives the same summary."""
    from tracelens.analyses import host

    rows = [
        {"kind": k, "name": n, "start_ns": 10 * i, "end_ns": 10 * i + 3 + i % 4, "pid": 1, "tid": 1 + i % 3}
        for i, (k, n) in enumerate(
            [
                ("runtime", "cudaLaunchKernel"),
                ("cpu_op", "aten::mm"),
                ("annotation", "step"),
                ("runtime", "cudaLaunchKernel"),
            ]
            * 5
        )
    ]
    trace = Trace.from_rows(rows)
    whole = host.host_summary(trace)
    assert whole["threads"] == 3 and whole["top"][0]["count"] == 10  # cudaLaunchKernel: 10 of the 20 rows
    monkeypatch.setattr(host, "CHUNK_ROWS", 3)
    assert host.host_summary(trace) == whole
    monkeypatch.setattr(host, "_count_every_slot", lambda slots, rows: False)
    assert host.host_summary(trace) == whole


def test_sentinel_null_column_reads_as_the_filled_column_without_a_copy():
    import pyarrow as pa

    from tracelens.trace import EventStore, with_sentinel_nulls

    tid = pa.array([5, None, 7, None], pa.int32())
    marked = with_sentinel_nulls(tid)
    assert marked.to_pylist() == [5, None, 7, None]  # same values and nulls
    store = EventStore(
        4,
        {
            "kind": pa.array(["cpu_op"] * 4).dictionary_encode(),
            "start_ns": pa.array([0, 1, 2, 3], pa.int64()),
            "end_ns": pa.array([1, 2, 3, 4], pa.int64()),
            "tid": marked,
        },
        frozenset({"tid"}),
    )
    values = store.numpy("tid", -1, np.int32)
    assert values.tolist() == [5, -1, 7, -1]
    assert not values.flags.owndata  # a view of the stored buffer
    assert with_sentinel_nulls(tid.slice(1)) is None  # offset buffers are left as they are


def test_early_sections_read_no_other_section_and_the_document_keeps_registry_order():
    from tracelens.analyses import BY_KEY, REGISTRY, SECTIONS

    trace = _two_streams()
    doc = analyze(trace)
    assert [k for k in doc if k in SECTIONS] == SECTIONS  # document order, whatever the compute order
    early = [s.key for s in REGISTRY if s.early]
    assert early  # the rule is exercised
    for key in early:  # computed with nothing done: the same block as in the document
        assert (
            BY_KEY[key].compute(Trace.from_rows(trace.events.to_pylist(), trace.devices.to_pylist()), {})
            == doc[key]
        )
