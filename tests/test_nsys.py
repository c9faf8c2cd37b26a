"""The Nsight Systems reader against independent SQL over the real exports, plus version-tolerance cases.

Every expectation here comes from SQL written in this file (or from facts stated in
../shared/traces/README.md), never from the reader's own code. Cases that need a modified export build a
copy inside tmp_path; the shared files are only ever opened read-only.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sqlite3
import warnings
from collections import Counter
from pathlib import Path

import pytest
from conftest import copy_shared_trace, shared_params, shared_traces
from reference import union_length

from tracelens.analyses import SECTIONS, analyze
from tracelens.cli import main
from tracelens.errors import ToolMissingError
from tracelens.ingest import load
from tracelens.ingest import nsys as nsys_reader
from tracelens.ingest.nsys import nvtx as nsys_nvtx

NSYS = shared_params("nsys", "*.sqlite")

# From ../shared/traces/README.md (ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND, ENUM_CUPTI_SYNC_TYPE).
COPY_KIND = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}
PAGEABLE = 0
SYNC_KIND = {1: "event_sync", 2: "stream_wait_event", 3: "stream_sync", 4: "context_sync"}
# What each export was recorded from (its README row and its own contents).
FRAMEWORK = {
    "a100_saxpy_nsys2022.2.sqlite": "cuda",  # MPI saxpy in C
    "h100x2_fastvideo_window_nsys2026.2.sqlite": "pytorch",  # aten:: NVTX ranges
    "rtx3080_tiny_nsys2026.1.sqlite": "pytorch",  # torch.zeros(...).sum() (at::native kernels)
}

_loaded: dict[Path, object] = {}


def trace_of(path: Path):
    if path not in _loaded:
        _loaded[path] = load(path)
    return _loaded[path]


def sql(path: Path, query: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def tables(path: Path) -> set[str]:
    return {r[0] for r in sql(path, "SELECT name FROM sqlite_master WHERE type='table'")}


def gpu_rows(path: Path) -> list[tuple[int, int, int]]:
    names = [
        t
        for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
        if t in tables(path)
    ]
    query = " UNION ALL ".join(f"SELECT deviceId, start, end FROM {t}" for t in names)
    return sql(path, query)


# ------------------------------------------------------------------------------------ real exports vs SQL


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_device_busy_and_span_match_sql(path: Path) -> None:
    rows = gpu_rows(path)
    expected = {}
    for dev in sorted({r[0] for r in rows}):
        mine = [(s, e) for d, s, e in rows if d == dev]
        expected[dev] = (
            union_length(mine),
            max(e for _, e in mine) - min(s for s, _ in mine),
            min(s for s, _ in mine),
        )
    trace = trace_of(path)
    doc = analyze(trace, sections=["devices"])
    got = {
        d["id"]: (d["busy_ns"], d["span_ns"], d["first_start_ns"] + trace.metadata.time_origin_ns)
        for d in doc["devices"]
    }
    assert got == expected


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_kernel_count_and_time_per_name_match_sql(path: Path) -> None:
    expected = {
        name: (n, total)
        for name, n, total in sql(
            path,
            """
        SELECT coalesce(d.value, s.value), count(*), sum(max(k.end - k.start, 0))
        FROM CUPTI_ACTIVITY_KIND_KERNEL k
        LEFT JOIN StringIds d ON d.id = k.demangledName
        LEFT JOIN StringIds s ON s.id = k.shortName
        GROUP BY 1""",
        )
    }
    df = trace_of(path).of_kind("kernel")
    got = {
        str(name): (len(g), int((g.end_ns - g.start_ns).sum()))
        for name, g in df.groupby(df["name"].astype(str))
    }
    assert got == expected
    assert (
        sum(n for n, _ in expected.values())
        == sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    )


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_public_queries_run_on_the_export(path: Path) -> None:
    # NsysReader.queries(): the SELECTs read() runs (benchmarks time them without the private _Database)
    queries = nsys_reader.NsysReader(path).queries()
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in queries and set(queries) <= tables(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for table, (query, names) in queries.items():
            assert f'FROM "{table}"' in query
            assert len(conn.execute(query).description) == len(names) > 0
    finally:
        conn.close()


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_memcpy_by_kind_matches_sql(path: Path) -> None:
    expected = {
        COPY_KIND[kind]: (n, nbytes, dur)
        for kind, n, nbytes, dur in sql(
            path,
            """
        SELECT copyKind, count(*), sum(bytes), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1""",
        )
    }
    df = trace_of(path).of_kind("memcpy")
    got = {
        str(k): (len(g), int(g["bytes"].sum()), int((g.end_ns - g.start_ns).sum()))
        for k, g in df.groupby(df["copy_kind"].astype(str))
    }
    assert got == expected
    pageable = sql(
        path,
        f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = {PAGEABLE} OR dstKind = {PAGEABLE}",
    )[0][0]
    assert int(((df.src_kind == "pageable") | (df.dst_kind == "pageable")).sum()) == pageable


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_memcpy_section_matches_sql(path: Path) -> None:
    if "memcpy" not in SECTIONS:
        pytest.skip("memcpy section not registered yet")
    expected = {
        COPY_KIND[kind]: {"count": n, "bytes": nbytes, "duration_ns": dur, "pageable_count": pg}
        for kind, n, nbytes, dur, pg in sql(
            path,
            f"""
        SELECT copyKind, count(*), sum(bytes), sum(end - start),
               sum(srcKind = {PAGEABLE} OR dstKind = {PAGEABLE})
        FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1""",
        )
    }
    doc = analyze(trace_of(path), sections=["devices", "memcpy"])
    got = {
        e["kind"]: {k: e[k] for k in ("count", "bytes", "duration_ns", "pageable_count")}
        for e in doc["memcpy"]["by_kind"]
    }
    assert got == expected


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_kernels_link_to_their_launch_once(path: Path) -> None:
    linked_sql = sql(
        path,
        """
        SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (
            SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            WHERE r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))""",
    )[0][0]
    df = trace_of(path).df
    host = df[df.kind.isin(["runtime", "driver"])]
    calls = Counter(zip(host.pid.astype("int64"), host.correlation_id.astype("int64"), strict=True))
    kernels = df[df.kind == "kernel"]
    keys = list(zip(kernels.pid.astype("int64"), kernels.correlation_id.astype("int64"), strict=True))
    assert sum(1 for k in keys if calls.get(k, 0) >= 1) == linked_sql
    # One launch per kernel even where the export repeats a call under the backtrace event class.
    assert all(calls[k] == 1 for k in keys if k in calls)
    if "window" in path.name:
        assert 0 < linked_sql < len(keys)  # cut from a longer export: only some launches are inside
    else:
        assert linked_sql == len(keys)


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_one_host_row_per_api_call_without_version_suffix(path: Path) -> None:
    # A call = one (thread, correlation id); its name is the non-backtrace row's name minus _vNNNN.
    rows = sql(
        path,
        """
        SELECT r.globalTid, r.correlationId, s.value, r.eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN StringIds s ON s.id = r.nameId""",
    )
    calls: dict[tuple[int, int], str] = {}
    for gtid, corr, name, _event_class in sorted(rows, key=lambda r: r[3] == 67):
        calls.setdefault((gtid, corr), re.sub(r"_v\d+$", "", name))
    expected = Counter(calls.values())
    df = trace_of(path).df
    host = df[df.kind.isin(["runtime", "driver"])]
    assert Counter(host.name.astype(str)) == expected
    assert not host.name.astype(str).str.contains(r"_v\d+$").any()
    driver = sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1")[0][0]
    assert int((df.kind == "driver").sum()) == driver


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_nvtx_ranges_names_and_domains_match_sql(path: Path) -> None:
    if "NVTX_EVENTS" not in tables(path):
        assert not trace_of(path).df.kind.isin(["annotation", "step"]).any()
        return
    domains = dict(
        sql(
            path,
            """SELECT n.domainId, coalesce(n.text, s.value) FROM NVTX_EVENTS n
                                LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType = 75""",
        )
    )
    expected = Counter(
        (name, domains.get(dom))
        for name, dom in sql(
            path,
            """
        SELECT coalesce(n.text, s.value), n.domainId FROM NVTX_EVENTS n
        LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60)""",
        )
    )
    df = trace_of(path).of_kind("annotation", "step")
    got = Counter(
        zip(df.name.astype(str), df.domain.astype(object).where(df.domain.notna(), None), strict=True)
    )
    assert got == expected


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_gpu_sync_rows_match_sql(path: Path) -> None:
    expected = Counter(
        SYNC_KIND[t] for (t,) in sql(path, "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    )
    df = trace_of(path).of_kind("gpu_sync")
    assert Counter(df.sync_kind.astype(str)) == expected


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_pids_tids_and_metadata(path: Path) -> None:
    trace = trace_of(path)
    df = trace.df
    # PROCESSES maps globalPid to pid in the export itself: an independent check of the bit decoding.
    expected_pids = {
        pid
        for (pid,) in sql(
            path,
            """SELECT DISTINCT p.pid FROM CUPTI_ACTIVITY_KIND_KERNEL k
                                                     JOIN PROCESSES p ON p.globalPid = k.globalPid""",
        )
    }
    assert set(df[df.kind == "kernel"].pid.astype("int64")) == expected_pids
    assert df[df.kind == "kernel"].tid.isna().all()
    meta_table = "META_DATA_EXPORT" if "META_DATA_EXPORT" in tables(path) else "EXPORT_META_DATA"
    meta = dict(sql(path, f"SELECT name, value FROM {meta_table}"))
    assert trace.metadata.producer_version == meta["EXPORT_PRODUCT_VERSION"]
    assert trace.metadata.format_version == meta["EXPORT_SCHEMA_VERSION"]
    assert trace.metadata.source_format == "nsys" and trace.metadata.clock == "nsys-session"
    assert trace.metadata.framework == FRAMEWORK[path.name]
    assert trace.metadata.warnings == []
    earliest = min(
        v
        for (v,) in sql(
            path,
            " UNION ALL ".join(
                f"SELECT min(start) FROM {t}"
                for t in tables(path)
                & {
                    "CUPTI_ACTIVITY_KIND_KERNEL",
                    "CUPTI_ACTIVITY_KIND_RUNTIME",
                    "NVTX_EVENTS",
                    "CUPTI_ACTIVITY_KIND_MEMCPY",
                    "OSRT_API",
                    "PROFILER_OVERHEAD",
                    "CUPTI_ACTIVITY_KIND_OVERHEAD",
                }
            ),
        )
        if v is not None
    )
    assert trace.metadata.time_origin_ns == earliest
    assert int(df.start_ns.min()) == 0
    assert (df.start_ns.diff().dropna() >= 0).all()


@pytest.mark.shared
@pytest.mark.parametrize("path", NSYS)
def test_device_table_from_target_info(path: Path) -> None:
    devices = trace_of(path).devices.to_pylist()
    by_id = {d["id"]: d for d in devices}
    if "TARGET_INFO_GPU" in tables(path):
        for gid, name, sms, major, minor in sql(
            path, "SELECT id, name, smCount, computeMajor, computeMinor FROM TARGET_INFO_GPU"
        ):
            assert (by_id[gid]["name"], by_id[gid]["sm_count"]) == (name, sms)
            assert (by_id[gid]["compute_major"], by_id[gid]["compute_minor"]) == (major, minor)
    used = {d for d, _, _ in gpu_rows(path)}
    assert used <= set(by_id)
    assert all(d["vendor"] == "nvidia" for d in devices)


def test_saxpy_export_hand_checked_facts() -> None:
    """Facts read off the 2022 export by hand (sqlite3 shell), independent of any query above."""
    paths = shared_traces("nsys", "a100_saxpy_nsys2022.2.sqlite")
    if not paths:
        pytest.skip("../shared/traces/nsys not present")
    trace = trace_of(paths[0])
    df = trace.df
    # 56 runtime rows of eventClass 0 + 38 backtrace duplicates (eventClass 67) + 1 driver call.
    assert int((df.kind == "runtime").sum()) == 56 and int((df.kind == "driver").sum()) == 1
    assert df[df.kind == "driver"].name.astype(str).tolist() == ["cuModuleGetLoadingMode"]
    # The MPI domain (created by eventType 75 with domainId 1) names 17 of the 22 push/pop ranges.
    assert int((df.domain.astype(str) == "MPI").sum()) == 17
    assert trace.device_info(0)["name"] == "NVIDIA A100-SXM4-40GB"
    assert trace.device_info(0)["max_threads_per_sm"] == 64 * 32
    assert trace.device_info(0)["clock_rate_khz"] == 1_410_000


# ----------------------------------------------------------------------------------- modified copies


def _edit(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_analyze_and_convert_never_write_the_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    before = _digest(path)
    files_before = set(os.listdir(tmp_path))
    assert main(["analyze", "-f", "json", str(path)]) == 0
    assert main(["convert", str(path), "-o", str(tmp_path / "out.parquet")]) == 0
    capsys.readouterr()
    assert _digest(path) == before
    assert set(os.listdir(tmp_path)) - files_before == {"out.parquet"}  # no -journal, -wal or -shm left


def test_export_without_enum_tables_uses_builtin_mappings(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    enums = [t for t in tables(path) if t.startswith("ENUM_")]
    _edit(path, *[f"DROP TABLE {t}" for t in enums])
    df = load(path).df
    memcpy = df[df.kind == "memcpy"]
    expected = Counter(
        (COPY_KIND[k], s, d)
        for k, s, d in sql(path, "SELECT copyKind, srcKind, dstKind FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    )
    mem = {0: "pageable", 1: "pinned", 2: "device", 4: "managed"}
    expected = Counter({(k, mem[s], mem[d]): n for (k, s, d), n in expected.items()})
    got = Counter(
        zip(
            memcpy.copy_kind.astype(str),
            memcpy.src_kind.astype(str),
            memcpy.dst_kind.astype(str),
            strict=True,
        )
    )
    assert got == expected
    assert Counter(df[df.kind == "gpu_sync"].sync_kind.astype(str)) == Counter(
        SYNC_KIND[t] for (t,) in sql(path, "SELECT syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
    )


def test_extra_columns_indexes_and_missing_tables_are_tolerated(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    kernels = sql(path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0][0]
    _edit(
        path,
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN name TEXT",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET name = 'not nsys'",
        "CREATE INDEX idx_k ON CUPTI_ACTIVITY_KIND_KERNEL(correlationId)",
        "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET",
        "DROP TABLE NVTX_EVENTS",
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN graphId",
    )
    df = load(path).df
    assert int((df.kind == "kernel").sum()) == kernels
    assert not (df.kind == "memset").any() and not (df.kind == "annotation").any()
    assert df.graph_id.isna().all()


def test_2022_meta_table_name_and_no_enums(tmp_path: Path) -> None:
    # The 2022 export has EXPORT_META_DATA and no ENUM tables; its copy kinds come from built-in ids.
    path = copy_shared_trace(tmp_path, "nsys", "a100_saxpy_nsys2022.2.sqlite")
    assert "EXPORT_META_DATA" in tables(path) and not any(t.startswith("ENUM_") for t in tables(path))
    trace = load(path)
    assert trace.metadata.format_version == "2.9.1"
    assert set(trace.of_kind("memcpy").copy_kind.astype(str)) == {"HtoD", "DtoH"}


def test_newer_schema_major_warns_once_and_reads(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    _edit(
        path,
        "UPDATE META_DATA_EXPORT SET value = '9' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR'",
        "UPDATE META_DATA_EXPORT SET value = '9.1.0' WHERE name = 'EXPORT_SCHEMA_VERSION'",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = load(path)
    mine = [w for w in caught if "newer than any" in str(w.message)]
    assert len(mine) == 1
    assert len(trace.metadata.warnings) == 1 and "9.1.0" in trace.metadata.warnings[0]
    assert int((trace.df.kind == "kernel").sum()) == 2


def test_tracelens_step_ranges_become_steps(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "a100_saxpy_nsys2022.2.sqlite")
    gtid = 302119224788637  # the main thread of this export
    _edit(
        path,
        "INSERT INTO StringIds (id, value) VALUES (100000, 'tracelens/step#8')",
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) "
        f"VALUES (900000000, 950000000, 59, {gtid}, 'tracelens/step#7', 0)",
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, textId, domainId) "
        f"VALUES (950000000, 990000000, 60, {gtid}, 100000, 0)",
    )
    trace = load(path)
    steps = trace.of_kind("step")
    assert sorted(steps.step.astype(int)) == [7, 8]
    assert sorted(steps.name.astype(str)) == ["tracelens/step#7", "tracelens/step#8"]
    origin = trace.metadata.time_origin_ns
    assert sorted((steps.end_ns - steps.start_ns).astype(int)) == [40_000_000, 50_000_000]
    assert sorted((steps.start_ns + origin).astype(int)) == [900000000, 950000000]


def test_stdlib_engine_gives_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    with_adbc = load(path).events
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", "sqlite3")
    with_stdlib = load(path).events
    assert with_stdlib.equals(with_adbc)


# ---------------------------------------------------------------------------------------------- .nsys-rep

FAKE_NSYS = """#!{python}
import shutil, sys
args = sys.argv[1:]
open({log!r}, "a").write(" ".join(args) + "\\n")
shutil.copyfile({fixture!r}, args[args.index("--output") + 1])
"""


def _fake_nsys(bin_dir: Path, fixture: Path, log: Path) -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nsys"
    script.write_text(
        FAKE_NSYS.format(
            python=shutil.which("python3") or "/usr/bin/env python3", log=str(log), fixture=str(fixture)
        )
    )
    script.chmod(0o755)


def test_nsys_rep_is_exported_once_and_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"not really a report")
    log = tmp_path / "nsys.log"
    _fake_nsys(tmp_path / "bin", fixture, log)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    trace = load(report)
    assert int((trace.df.kind == "kernel").sum()) == 2
    cache = tmp_path / "run.tracelens.sqlite"
    assert cache.is_file()

    def exports() -> int:
        return sum(line.startswith("export --type sqlite ") for line in log.read_text().splitlines())

    assert exports() == 1
    load(report)  # cache newer than the report: no second export
    assert exports() == 1
    os.utime(report, ns=(cache.stat().st_mtime_ns + 10**9,) * 2)  # report changed after the export
    load(report)
    assert exports() == 2
    assert not list(tmp_path.glob("*.partial*"))


def test_nsys_rep_cache_goes_to_user_cache_when_dir_is_not_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracelens.ingest.nsys import rep as nsys_rep

    fixture = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "run.nsys-rep").write_bytes(b"x")
    _fake_nsys(tmp_path / "bin", fixture, tmp_path / "log")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # Root may write anywhere, so a chmod would prove nothing here: make the directory look read-only.
    monkeypatch.setattr(nsys_rep.os, "access", lambda p, mode: Path(p) != reports)
    trace = load(reports / "run.nsys-rep")
    assert int((trace.df.kind == "kernel").sum()) == 2
    assert len(list((tmp_path / "cache" / "tracelens").glob("run-*.tracelens.sqlite"))) == 1
    assert sorted(p.name for p in reports.iterdir()) == ["run.nsys-rep"]


def test_nsys_rep_cache_path_falls_back_to_user_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracelens.ingest.nsys import rep as nsys_rep

    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"x")
    assert nsys_rep.cache_path(report) == tmp_path / "run.tracelens.sqlite"
    monkeypatch.setattr(nsys_rep.os, "access", lambda *_: False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fallback = nsys_rep.cache_path(report)
    assert fallback.parent == tmp_path / "cache" / "tracelens" and fallback.name.startswith("run-")


def test_nsys_rep_without_nsys_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"x")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolMissingError):
        nsys_reader.read(report, fmt="nsys-rep")
    assert main(["analyze", str(report)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "nsys export --type sqlite --output" in err[0] and str(report) in err[0]
    assert "Traceback" not in err[0]


def test_backtrace_only_call_is_kept_once(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "a100_saxpy_nsys2022.2.sqlite")
    # Hand-picked from the file: correlationId 135 is cudaMalloc_v3020 (class 0) + cudaMalloc (class 67).
    before = load(path).df
    assert int(((before.kind == "runtime") & (before.correlation_id == 135)).sum()) == 1
    _edit(path, "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 135 AND eventClass = 0")
    df = load(path).df
    rows = df[(df.kind == "runtime") & (df.correlation_id == 135)]
    assert rows.name.astype(str).tolist() == ["cudaMalloc"]
    assert int((df.kind == "runtime").sum()) == int((before.kind == "runtime").sum())


def test_kernel_name_falls_back_to_short_name(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    # demangledName is NOT NULL in the schema: point it at an id StringIds lacks.
    _edit(path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 987654321 WHERE correlationId = 143")
    trace = load(path)
    kernels = trace.of_kind("kernel")
    names = dict(zip(kernels.correlation_id.astype(int), kernels.name.astype(str), strict=True))
    assert names[143] == "vectorized_elementwise_kernel"  # its shortName (read off the file)
    assert names[159].startswith("void at::native::reduce_kernel<")
    assert trace.metadata.extra["kernel_short_names"][names[159]] == "reduce_kernel"


def test_device_table_from_cuda_device_table_alone(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    _edit(path, "DROP TABLE TARGET_INFO_GPU")
    trace = load(path)
    assert trace.device_info(0)["sm_count"] == 68  # TARGET_INFO_CUDA_DEVICE.numMultiprocessors
    assert trace.device_info(0)["name"] is None


def test_unknown_copy_and_sync_kinds_keep_a_generic_name(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    _edit(
        path,
        "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 0",
        "UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET syncType = 0",
    )
    df = load(path).df
    memcpy, sync = df[df.kind == "memcpy"], df[df.kind == "gpu_sync"]
    assert memcpy.name.astype(str).tolist() == ["[CUDA memcpy]"] and memcpy.copy_kind.isna().all()
    assert sync.name.astype(str).tolist() == ["[CUDA sync]"] and sync.sync_kind.isna().all()


@pytest.mark.parametrize("name", ["a100_saxpy_nsys2022.2.sqlite", "rtx3080_tiny_nsys2026.1.sqlite"])
def test_host_depth_counts_enclosing_host_intervals(name: str) -> None:
    """depth = how many other host intervals on the same thread contain the row (SQL self-join; small files
    only, the join is quadratic)."""
    paths = shared_traces("nsys", name)
    if not paths:
        pytest.skip("../shared/traces/nsys not present")
    path = paths[0]
    have = tables(path)
    sources = ["SELECT start, end, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass != 67"]
    if "NVTX_EVENTS" in have:
        sources.append("SELECT start, end, globalTid FROM NVTX_EVENTS WHERE eventType IN (59, 60)")
    for table in ("PROFILER_OVERHEAD", "CUPTI_ACTIVITY_KIND_OVERHEAD", "OSRT_API"):
        if table in have:
            sources.append(f"SELECT start, end, globalTid FROM {table}")
    expected = Counter(
        sql(
            path,
            f"""
        WITH host(s, e, tid) AS ({" UNION ALL ".join(sources)})
        SELECT h.s, h.e, (SELECT count(*) FROM host o WHERE o.tid = h.tid AND o.s <= h.s AND h.e <= o.e
                          AND NOT (o.s = h.s AND o.e = h.e)) FROM host h""",
        )
    )
    trace = trace_of(path)
    host = trace.df[trace.df.tid.notna()]
    origin = trace.metadata.time_origin_ns
    got = Counter(
        zip(
            (host.start_ns + origin).tolist(),
            (host.end_ns + origin).tolist(),
            host.depth.astype(int).tolist(),
            strict=True,
        )
    )
    assert got == expected
    assert max(d for _, _, d in expected) >= 1  # nesting exists, so the check has teeth


def test_export_with_empty_host_tables(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    _edit(
        path,
        "DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME",
        "DELETE FROM PROFILER_OVERHEAD",
        "DELETE FROM CUPTI_ACTIVITY_KIND_OVERHEAD",
    )
    df = load(path).df
    assert sorted(df.kind.astype(str).unique()) == ["gpu_sync", "kernel", "memcpy"]
    assert df.depth.isna().all()


def test_documented_table_from_the_store_has_the_schema_and_sql_row_count() -> None:
    """The reader stores pid/tid as int32 and kind with int8 indices, and columns few rows carry sparse; the
    documented table built from it has the schema's types and every row the export's tables hold."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from tracelens.trace import EVENT_SCHEMA, SparseColumn

    found = shared_traces("nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    if not found:
        pytest.skip("../shared/traces/nsys not present")
    path = found[0]
    trace = load(path)
    assert isinstance(trace.store.columns["grid_x"], SparseColumn)
    table = trace.events
    assert table.schema == EVENT_SCHEMA
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        kernels = db.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        grid = db.execute("SELECT sum(gridX) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert pc.sum(pc.equal(table.column("kind").cast(pa.string()), "kernel")).as_py() == kernels
    assert pc.sum(table.column("grid_x")).as_py() == grid


@pytest.mark.parametrize("path", NSYS)
def test_nvtx_read_in_small_chunks_gives_the_same_table(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """NVTX_EVENTS is fetched a rowid range at a time (memory): chunks of 7 rows read the same events."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        has_nvtx = db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()[0]
        rows = db.execute("SELECT count(*) FROM NVTX_EVENTS").fetchone()[0] if has_nvtx else 0
    if rows <= 7:
        pytest.skip("fewer NVTX rows than one chunk")
    whole = load(path).events
    monkeypatch.setattr(nsys_nvtx, "NVTX_CHUNK_ROWS", 7)
    assert load(path).events.equals(whole)
