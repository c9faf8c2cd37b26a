"""The Nsight reader on the exports the project builds itself (fixtures/nsys/, written by make_nsys.py), so its
SQL paths run on a fresh clone without ../shared: the 2026 layout (META_DATA_EXPORT, ENUM tables) and the 2022
layout (EXPORT_META_DATA, built-in enum ids, backtrace-class duplicates).

Every expected number below is derived by hand from the timeline in make_nsys.py's docstring (ns after the
first row; T0 = 1_000_000_000 on the session clock), or queried from the file with SQL written here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sqlite3
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens.trace import Trace

NSYS = FIXTURES / "nsys"
FILES = {2026: NSYS / "handmade_nsys2026.sqlite", 2022: NSYS / "handmade_nsys2022.sqlite"}
YEARS = sorted(FILES)
T0 = 1_000_000_000
MIB = 1 << 20

# (kind, name, start_ns, end_ns) of every row, in time order: hand-written from the timeline.
ROWS = [
    ("step", "tracelens/step#0", 0, 40_000),
    ("runtime", "cudaMemcpyAsync", 1_000, 3_000),  # the _v3020 suffix stripped
    ("memcpy", "[CUDA memcpy HtoD]", 4_000, 6_000),
    ("runtime", "cudaLaunchKernel", 5_000, 7_000),
    ("runtime", "cudaMemsetAsync", 8_000, 9_000),
    ("annotation", "forward", 9_000, 38_000),
    ("runtime", "cudaLaunchKernel", 9_500, 10_000),
    ("kernel", "void gemm<float>(const float *, float *)", 10_000, 30_000),
    ("runtime", "cudaStreamSynchronize", 10_500, 37_500),
    ("gpu_sync", "[CUDA sync stream_sync]", 10_600, 37_400),
    ("memset", "[CUDA memset]", 30_500, 31_500),
    ("kernel", "relu_kernel(float *)", 32_000, 37_000),
    ("step", "tracelens/step#1", 40_000, 70_000),
    ("annotation", "load_batch", 40_500, 44_000),
    ("driver", "cuLaunchKernel", 41_000, 42_000),
    ("kernel", "void gemm<float>(const float *, float *)", 45_000, 55_000),
    ("runtime", "cudaMemcpyAsync", 56_000, 57_000),
    ("runtime", "cudaEventRecord", 58_000, 58_500),
    ("memcpy", "[CUDA memcpy DtoH]", 62_000, 63_000),
    ("annotation", "still_open", 66_000, 70_000),  # open at capture end: ends at the last end (step#1's)
]


@pytest.fixture(scope="module", params=YEARS, ids=[f"nsys{y}" for y in YEARS])
def year(request: pytest.FixtureRequest) -> int:
    return request.param


_LOADED: dict[int, tuple[Trace, dict]] = {}


def _read(year: int) -> tuple[Trace, dict]:
    if year not in _LOADED:
        trace = tracelens.load(FILES[year])
        _LOADED[year] = trace, tracelens.analyze(trace)
    return _LOADED[year]


def _sql(year: int, query: str) -> list[tuple]:
    with sqlite3.connect(f"file:{FILES[year]}?mode=ro", uri=True) as con:
        return con.execute(query).fetchall()


def _make_nsys():
    spec = importlib.util.spec_from_file_location("make_nsys", NSYS / "make_nsys.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
        return list(con.iterdump())


def test_the_script_writes_the_committed_files(tmp_path: Path) -> None:
    """The committed exports are what make_nsys.py writes (same schema and rows), and stay small."""
    module = _make_nsys()
    for year, path in FILES.items():
        module.write(tmp_path / path.name, year)
        assert _dump(tmp_path / path.name) == _dump(path), (
            f"rerun python3 fixtures/nsys/make_nsys.py ({path.name})"
        )
        assert path.stat().st_size < 32_000


def test_the_files_look_like_their_nsys_versions() -> None:
    """The SQL paths differ: metadata table, ENUM tables or not, backtrace rows, columns added since 2022."""
    tables = {
        y: {name for (name,) in _sql(y, "SELECT name FROM sqlite_master WHERE type = 'table'")} for y in YEARS
    }
    assert "META_DATA_EXPORT" in tables[2026] and "EXPORT_META_DATA" not in tables[2026]
    assert "EXPORT_META_DATA" in tables[2022] and "META_DATA_EXPORT" not in tables[2022]
    assert {"ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE"} <= tables[2026]
    assert not any(name.startswith("ENUM_") for name in tables[2022])
    columns = {
        y: {c for (c,) in _sql(y, "SELECT name FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL')")}
        for y in YEARS
    }
    assert {"graphId", "greenContextId"} <= columns[2026] and not {"graphId", "greenContextId"} & columns[
        2022
    ]
    # NVTX names in both forms, in both files
    for y in YEARS:
        ((inline, by_id),) = _sql(
            y, "SELECT count(text), count(textId) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"
        )
        assert inline == 3 and by_id == 2
    assert _sql(2022, "SELECT eventClass, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1") == [
        (0, 6),
        (1, 1),
        (67, 8),
    ]


def test_rows(year: int) -> None:
    trace, _ = _read(year)
    events = trace.events.to_pandas()
    got = list(
        zip(
            events["kind"].astype(str),
            events["name"].astype(str),
            events["start_ns"],
            events["end_ns"],
            strict=True,
        )
    )
    assert got == ROWS
    assert trace.metadata.time_origin_ns == T0
    assert set(events["pid"]) == {4242}  # (globalPid >> 24) & 0xFFFFFF, the vm id in bits 48+ dropped
    host = events[events["kind"].isin(["runtime", "driver", "annotation", "step"])]
    assert set(host["tid"]) == {4242}
    gpu = events[events["kind"].isin(["kernel", "memcpy", "memset", "gpu_sync"])]
    assert set(gpu["device"]) == {0} and set(gpu["stream"]) == {7} and gpu["tid"].isna().all()
    # each GPU row carries its launch's correlation id: 101 .. 107 in launch order
    assert list(gpu["correlation_id"]) == [101, 102, 105, 103, 104, 106, 107]


def test_columns_of_each_table(year: int) -> None:
    trace, _ = _read(year)
    ev = trace.events.to_pandas()
    copies = ev[ev["kind"] == "memcpy"]
    assert list(copies["bytes"]) == [MIB, 4096]
    assert list(copies["copy_kind"]) == ["HtoD", "DtoH"]
    assert list(copies["src_kind"]) == ["pageable", "device"] and list(copies["dst_kind"]) == [
        "device",
        "pinned",
    ]
    memset = ev[ev["kind"] == "memset"].iloc[0]
    assert memset["bytes"] == 4096 and memset["dst_kind"] == "device"
    assert list(ev[ev["kind"] == "gpu_sync"]["sync_kind"]) == ["stream_sync"]
    gemm = ev[(ev["kind"] == "kernel")].iloc[0]
    assert (
        gemm["grid_x"],
        gemm["grid_y"],
        gemm["grid_z"],
        gemm["block_x"],
        gemm["block_y"],
        gemm["block_z"],
    ) == (80, 1, 1, 256, 1, 1)
    assert (gemm["registers_per_thread"], gemm["static_shared_bytes"], gemm["dynamic_shared_bytes"]) == (
        64,
        0,
        4096,
    )
    steps = ev[ev["kind"] == "step"]
    assert list(steps["step"]) == [0, 1]
    assert ev[ev["name"] == "load_batch"]["domain"].tolist() == [
        "mylib"
    ]  # domainId 7, created by a type-75 row
    assert ev[ev["name"] == "forward"]["domain"].isna().all()  # the default domain 0
    # nesting on the main thread: the steps at depth 0, forward and the calls before it at 1, calls inside it at 2
    depth = dict(zip(zip(ev["name"].astype(str), ev["start_ns"], strict=True), ev["depth"], strict=True))
    assert depth[("tracelens/step#0", 0)] == 0 and depth[("forward", 9_000)] == 1
    assert depth[("cudaMemcpyAsync", 1_000)] == 1 and depth[("cudaStreamSynchronize", 10_500)] == 2
    assert depth[("cuLaunchKernel", 41_000)] == 2  # inside step#1 and load_batch


def test_backtrace_duplicates_are_dropped() -> None:
    """2022: 15 RUNTIME rows = 7 calls with a class-67 twin (dropped) + one call with only its class-67 row (kept)."""
    trace, _ = _read(2022)
    assert trace.metadata.extra["tables_read"]["CUPTI_ACTIVITY_KIND_RUNTIME"] == 15
    ev = trace.events.to_pandas()
    calls = ev[ev["kind"].isin(["runtime", "driver"])]
    assert len(calls) == 8 and sorted(calls["correlation_id"]) == list(range(101, 109))
    ((twins,),) = _sql(2022, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 67")
    assert twins == 8


def test_metadata_and_devices(year: int) -> None:
    trace, _ = _read(year)
    meta = trace.metadata
    assert (meta.producer_version, meta.format_version) == {
        2026: ("2026.1.1.204", "3.24.14"),
        2022: ("2022.2.1.31", "2.9.1"),
    }[year]
    assert meta.producer == "NVIDIA Nsight Systems" and meta.framework == "cuda" and meta.warnings == []
    assert meta.extra["thread_names"] == {"4242:4242": "main"}
    assert meta.extra["process_names"] == {"4242": "train.py"}
    assert meta.extra["nvtx_domains"] == {"7": "mylib"}
    assert meta.extra["session_start_utc_epoch_ns"] == 1_767_225_600_000_000_000
    assert meta.extra["kernel_short_names"] == {
        "void gemm<float>(const float *, float *)": "gemm",
        "relu_kernel(float *)": "relu_kernel",
    }
    exported = meta.extra["nsys_export"]
    assert "EXPORT_HOST" not in exported and "EXPORT_USER" not in exported
    assert not any("PATH" in key for key in exported)
    (device,) = trace.devices.to_pylist()
    assert device["id"] == 0 and device["name"] == "NVIDIA Test GPU" and device["sm_count"] == 108
    assert (device["compute_major"], device["compute_minor"]) == (8, 0)
    assert device["max_threads_per_sm"] == 64 * 32  # maxWarpsPerSm * threadsPerWarp
    assert device["clock_rate_khz"] == 1_410_000  # clockRate is Hz
    assert device["memory_bandwidth_bytes_per_s"] == 1_555_200_000_000


def test_gpu_time_gaps_and_kernels(year: int) -> None:
    _, doc = _read(year)
    (dev,) = doc["devices"]
    # busy 2_000 + 20_000 + 1_000 + 5_000 + 10_000 + 1_000 over [4_000, 63_000]
    assert (dev["busy_ns"], dev["span_ns"], dev["first_start_ns"], dev["last_end_ns"]) == (
        39_000,
        59_000,
        4_000,
        63_000,
    )
    assert dev["utilization"] == pytest.approx(39_000 / 59_000)
    assert (dev["kernel_ns"], dev["memcpy_ns"], dev["memset_ns"]) == (35_000, 3_000, 1_000)
    (gaps,) = doc["gaps"]["devices"]
    assert (gaps["idle_ns"], gaps["gap_count"]) == (20_000, 5)
    assert [(g["start_ns"], g["duration_ns"]) for g in gaps["largest"]] == [
        (37_000, 8_000),
        (55_000, 7_000),
        (6_000, 4_000),
        (30_000, 500),
        (31_500, 500),
    ]
    kernels = doc["kernels"]
    assert (kernels["count"], kernels["total_ns"], kernels["distinct_names"]) == (3, 35_000, 2)
    gemm, relu = kernels["by_name"]
    assert (gemm["name"], gemm["count"], gemm["total_ns"], gemm["min_ns"], gemm["max_ns"]) == (
        "void gemm<float>(const float *, float *)",
        2,
        30_000,
        10_000,
        20_000,
    )
    assert (relu["name"], relu["count"], relu["total_ns"]) == ("relu_kernel(float *)", 1, 5_000)
    # the same totals straight from the file
    ((sql_kernel_ns, sql_count),) = _sql(
        year, "SELECT sum(end - start), count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )
    assert (sql_kernel_ns, sql_count) == (kernels["total_ns"], kernels["count"])


def test_copies_sync_ranges_steps(year: int) -> None:
    _, doc = _read(year)
    memcpy = doc["memcpy"]
    assert (memcpy["count"], memcpy["bytes"], memcpy["duration_ns"]) == (2, MIB + 4096, 3_000)
    by_kind = {k["kind"]: k for k in memcpy["by_kind"]}
    assert (by_kind["HtoD"]["bytes"], by_kind["HtoD"]["pageable_count"]) == (MIB, 1)
    assert (by_kind["DtoH"]["bytes"], by_kind["DtoH"]["pinned_count"]) == (4096, 1)
    ((sql_bytes,),) = _sql(year, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert sql_bytes == memcpy["bytes"] == doc["summary"]["memcpy_bytes"]
    sync = doc["sync"]
    # the blocking call: cudaStreamSynchronize [10_500, 37_500]; the GPU-side wait [10_600, 37_400]
    assert sync["blocking"]["by_name"] == [{"name": "cudaStreamSynchronize", "count": 1, "total_ns": 27_000}]
    assert sync["gpu_waits"] == [{"sync_kind": "stream_sync", "count": 1, "total_ns": 26_800}]
    ranges = {r["name"]: r for r in doc["ranges"]["ranges"]}
    assert set(ranges) == {"forward", "load_batch", "still_open"}  # steps are steps; the mark is no range
    assert {name: r["cpu_ns"] for name, r in ranges.items()} == {
        "forward": 29_000,
        "load_batch": 3_500,
        "still_open": 4_000,
    }
    # forward launches relu (R4 at 9_500, inside it); load_batch launches the second gemm (R6 at 41_000)
    assert (ranges["forward"]["gpu_ops"], ranges["forward"]["gpu_op_ns"]) == (1, 5_000)
    assert (ranges["load_batch"]["gpu_ops"], ranges["load_batch"]["gpu_op_ns"]) == (1, 10_000)
    steps = doc["steps"]["steps"]
    assert [(s["step"], s["start_ns"], s["duration_ns"]) for s in steps] == [
        (0, 0, 40_000),
        (1, 40_000, 30_000),
    ]
    # GPU busy inside each step: 2_000 + 20_000 + 1_000 + 5_000, then 10_000 + 1_000
    assert [s["gpu_busy"] for s in steps] == [
        [{"device": 0, "busy_ns": 28_000}],
        [{"device": 0, "busy_ns": 11_000}],
    ]


def test_both_layouts_give_one_document() -> None:
    """The same events in the 2026 and the 2022 layout: every section but `source` is identical."""
    docs = [_read(y)[1] for y in YEARS]
    assert [k for k in docs[0] if k != "source" and docs[0][k] != docs[1][k]] == []


def test_the_enum_tables_are_read_by_name(tmp_path: Path) -> None:
    """2026: copy kinds come from ENUM_CUDA_MEMCPY_OPER: swapping the HtoD and DtoH ids there swaps them."""
    copy = tmp_path / "renumbered.sqlite"
    shutil.copyfile(FILES[2026], copy)
    with sqlite3.connect(copy) as con:
        con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_X' WHERE id = 1")
        con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_HTOD' WHERE id = 2")
        con.execute("UPDATE ENUM_CUDA_MEMCPY_OPER SET name = 'CUDA_MEMCPY_KIND_DTOH' WHERE id = 1")
    ev = tracelens.load(copy).events.to_pandas()
    assert list(ev[ev["kind"] == "memcpy"]["copy_kind"]) == ["DtoH", "HtoD"]


def test_both_fetch_engines_agree(year: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADBC and the standard library's sqlite3 give the same table."""
    adbc = tracelens.load(FILES[year]).events
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", "sqlite3")
    assert tracelens.load(FILES[year]).events.equals(adbc)


def test_reading_never_writes(year: int) -> None:
    path = FILES[year]
    before = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    tracelens.analyze(tracelens.load(path))
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in NSYS.iterdir() if p.suffix != ".py" and p.name != "__pycache__") == sorted(
        f.name for f in FILES.values()
    )
