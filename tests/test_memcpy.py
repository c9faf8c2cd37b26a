"""memcpy block: hand-derived cases, and per-direction totals against direct JSON / SQL / protobuf walks."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from conftest import shared_params

from tracelens.analyses import analyze
from tracelens.analyses.diagnosis.memcpy import check_fix, check_sentence
from tracelens.analyses.memcpy import memcpy_report
from tracelens.ingest import load
from tracelens.trace import Trace, TraceMetadata


def _copy(start, end, kind="HtoD", nbytes=1000, device=0, src=None, dst=None, corr=None, pid=None, stream=1):
    return {
        "kind": "memcpy",
        "name": f"Memcpy {kind}",
        "start_ns": start,
        "end_ns": end,
        "device": device,
        "stream": stream,
        "bytes": nbytes,
        "copy_kind": kind,
        "src_kind": src,
        "dst_kind": dst,
        "correlation_id": corr,
        "pid": pid,
    }


def _kernel(start, end, device=0):
    return {"kind": "kernel", "name": "k", "start_ns": start, "end_ns": end, "device": device, "stream": 7}


def _api(name, corr, pid=1, start=0):
    return {
        "kind": "runtime",
        "name": name,
        "start_ns": start,
        "end_ns": start + 1,
        "pid": pid,
        "tid": 1,
        "correlation_id": corr,
    }


def _exposed_by_sweep(copies: list[tuple[int, int]], kernels: list[tuple[int, int]]) -> int:
    """Time with at least one copy and no kernel active: a boundary sweep (independent of tracelens.intervals)."""
    points = sorted(
        [(s, 0, 1) for s, _ in copies]
        + [(e, 0, -1) for _, e in copies]
        + [(s, 1, 1) for s, _ in kernels]
        + [(e, 1, -1) for _, e in kernels]
    )
    active = [0, 0]
    last = None
    exposed = 0
    for t, which, delta in points:
        if last is not None and active[0] > 0 and active[1] == 0:
            exposed += t - last
        active[which] += delta
        last = t
    return exposed


# --- hand-built cases -----------------------------------------------------------------------------


def test_exposed_time_shares_and_bandwidth_by_hand():
    # GPU 0: kernels [0,100) and [200,300); HtoD copies [50,150) 1000 B and [120,250) 2600 B on two streams,
    # a zero-duration DtoH at 400. GPU 1: one DtoD [0,10) of 0 bytes, no kernels.
    # GPU 0 copy union = [50,250) = 200 (+ the empty [400,400)); covered by kernels: [50,100) + [200,250) = 100
    #   -> exposed 100. busy = [0,300) = 300, span = 0..400 = 400 -> busy share 200/300, span share 200/400.
    # GPU 1: union 10, exposed 10, span 10. Device-means GPU-time weighted: n_eff = (400 + 10) / 400 (the union of
    #   the windows is GPU 0's), exposed 110 / n_eff = 107.3, union 210 / n_eff; HtoD's 100 / n_eff (the plain
    #   means read 55, 105 and 50).
    # HtoD bandwidth: 1000/100 ns = 1e10 B/s, 2600/130 ns = 2e10 B/s; aggregate 3600 B / 230 ns;
    #   percentiles of [1e10, 2e10] (linear): p10 = 1.1e10, p50 = 1.5e10, p90 = 1.9e10.
    rows = [
        _kernel(0, 100),
        _kernel(200, 300),
        _copy(50, 150, nbytes=1000, stream=1),
        _copy(120, 250, nbytes=2600, stream=2),
        _copy(400, 400, kind="DtoH", nbytes=8),
        _copy(0, 10, kind="DtoD", nbytes=0, device=1),
    ]
    doc = memcpy_report(Trace.from_rows(rows))
    json.dumps(doc, allow_nan=False)
    n_eff = 410 / 400
    assert (doc["device_mean_exposed_ns"], doc["device_mean_union_ns"]) == pytest.approx(
        (110 / n_eff, 210 / n_eff)
    )
    dev0 = doc["per_device"][0]
    assert (dev0["busy_ns"], dev0["span_ns"], dev0["union_ns"], dev0["exposed_ns"]) == (300, 400, 200, 100)
    assert dev0["busy_share"] == pytest.approx(200 / 300) and dev0["span_share"] == pytest.approx(0.5)
    kinds = {k["kind"]: k for k in doc["by_kind"]}
    assert [k["kind"] for k in doc["by_kind"]] == ["HtoD", "DtoH", "DtoD"]
    htod = kinds["HtoD"]
    assert (htod["count"], htod["bytes"], htod["duration_ns"]) == (2, 3600, 230)
    assert htod["device_mean_exposed_ns"] == pytest.approx(100 / n_eff)
    dev0_htod = dev0["by_kind"][0]  # GPU 0's own kinds; no memory kinds given: neither pinned nor pageable
    assert (dev0_htod["kind"], dev0_htod["exposed_ns"], dev0_htod["pinned_ns"], dev0_htod["pageable_ns"]) == (
        "HtoD",
        100,
        0,
        0,
    )
    assert htod["achieved_bytes_per_s"] == pytest.approx(3600 / 230 * 1e9)
    assert (htod["p10_bytes_per_s"], htod["p50_bytes_per_s"], htod["p90_bytes_per_s"]) == pytest.approx(
        (1.1e10, 1.5e10, 1.9e10)
    )
    dtoh = kinds["DtoH"]  # zero duration: no bandwidth, never inf
    assert (
        dtoh["zero_duration_count"] == 1
        and dtoh["measured_count"] == 0
        and dtoh["achieved_bytes_per_s"] is None
    )
    dtod = kinds["DtoD"]  # zero bytes over 10 ns: 0 B/s
    assert dtod["achieved_bytes_per_s"] == 0.0 and doc["per_device"][1]["exposed_ns"] == 10


def test_launch_mode_where_a_side_has_no_pid():
    # corr 1: the copy has no pid: the call with its id decides (cudaMemcpy, sync). corr 2: the call has no pid:
    # it decides for the copy of pid 1 (cudaMemcpyAsync, async). corr 3: only a call of another known pid
    # (pid 2): not used, unknown. corr 4: an unrelated call first, then the copy API: the copy API wins (async).
    rows = [
        _copy(0, 10, corr=1, pid=None),
        _copy(20, 30, corr=2, pid=1),
        _copy(40, 50, corr=3, pid=1),
        _copy(60, 70, corr=4, pid=None),
        _api("cudaMemcpy", 1, pid=1),
        _api("cudaMemcpyAsync", 2, pid=None),
        _api("cudaMemcpy", 3, pid=2),
        _api("cudaGetDevice", 4, pid=1, start=1),
        _api("cudaMemcpyAsync", 4, pid=1, start=2),
    ]
    trace = Trace.from_rows(rows, metadata=TraceMetadata(source_format="handmade", framework="pytorch"))
    launch = memcpy_report(trace)["launch"]
    assert (launch["sync_count"], launch["async_count"], launch["unknown_count"]) == (1, 2, 1)
    assert launch["sync_ns"] == 10


def test_host_memory_and_launch_mode_from_the_launching_call():
    # corr 1: cudaMemcpy (sync), pageable source. corr 2: cudaMemcpyAsync with pageable -> async_pageable.
    # corr 3 in pid 1 is cudaMemcpyAsync; pid 2 has a cudaMemcpy with the same id: must not be used.
    # corr 4: hipMemcpyWithStream (blocking) from "host" memory (ROCm: unknown kind). corr 5: no host row.
    # corr 6: two duplicate host rows (nsys backtrace rows) -> still one copy, sync.
    rows = [
        _copy(0, 10, src="pageable", dst="device", corr=1, pid=1),
        _copy(20, 30, src="pageable", dst="device", corr=2, pid=1),
        _copy(40, 50, kind="DtoH", src="device", dst="pinned", corr=3, pid=1),
        _copy(60, 70, src="host", dst="device", corr=4, pid=1),
        _copy(80, 90, kind="DtoD", src="device", dst="device", corr=5, pid=1),
        _copy(100, 110, kind="DtoH", src="device", dst="pageable", corr=6, pid=1),
        _api("cudaMemcpy", 1),
        _api("cudaMemcpyAsync", 2),
        _api("cudaMemcpyAsync", 3),
        _api("cudaMemcpy", 3, pid=2),
        _api("hipMemcpyWithStream", 4),
        _api("cudaMemcpy_v3020", 6),
        _api("cudaMemcpy_v3020", 6),
    ]
    trace = Trace.from_rows(rows, metadata=TraceMetadata(source_format="handmade", framework="pytorch"))
    doc = memcpy_report(trace)
    launch = doc["launch"]
    assert (launch["sync_count"], launch["async_count"], launch["unknown_count"]) == (3, 2, 1)
    assert launch["async_pageable_count"] == 1
    assert launch["sync_ns"] == 30
    mem = doc["host_memory"]
    assert (mem["pageable_count"], mem["pinned_count"], mem["device_count"], mem["unknown_count"]) == (
        3,
        1,
        1,
        1,
    )
    assert mem["host_copies_unknown_count"] == 1 and mem["basis"] == "partly unknown"
    kinds = {k["kind"]: k for k in doc["by_kind"]}
    assert kinds["HtoD"]["pageable_count"] == 2 and kinds["DtoH"]["pageable_count"] == 1
    ids = {f["id"]: f for f in doc["findings"]}
    assert {"memcpy_pageable", "memcpy_async_pageable", "memcpy_sync"} <= set(ids)
    assert (
        ids["memcpy_pageable"]["remedy"],
        ids["memcpy_async_pageable"]["remedy"],
        ids["memcpy_sync"]["remedy"],
    ) == ("pin", "pin", "async")
    assert "pin_memory" in check_fix(ids["memcpy_pageable"], "pytorch")
    # Data only: no prose in the JSON (the renderers word the checks).
    assert all(set(f) == {"id", "evidence", "remedy"} for f in doc["findings"])
    assert check_sentence(ids["memcpy_sync"]) == (
        "3 copies were issued by synchronous copy calls (30 ns of copy time) — the host waits for each"
    )
    assert check_sentence(ids["memcpy_async_pageable"]) == (
        "1 asynchronous copy call uses pageable memory: it runs synchronously anyway"
    )


def test_small_copy_bursts():
    # 12 small copies of 1 KiB, 1 us long, 1 us apart: one run of 12 >= 10 -> a burst.
    # 200 us later, 9 more: a run below 10 copies -> not a burst. Then 3 copies of 1 MiB: not small.
    rows = [_copy(i * 2000, i * 2000 + 1000, nbytes=1024) for i in range(12)]
    base = 12 * 2000 + 200_000
    rows += [_copy(base + i * 2000, base + i * 2000 + 1000, nbytes=1024) for i in range(9)]
    rows += [_copy(10**6 + i * 10**5, 10**6 + i * 10**5 + 50_000, nbytes=2**20) for i in range(3)]
    small = memcpy_report(Trace.from_rows(rows))["small_copies"]
    assert (small["count"], small["bytes"], small["duration_ns"]) == (21, 21 * 1024, 21 * 1000)
    assert (small["burst_count"], small["burst_copy_count"], small["burst_ns"]) == (1, 12, 12_000)
    assert small["largest_bursts"] == [
        {"device": 0, "start_ns": 0, "end_ns": 23_000, "count": 12, "bytes": 12 * 1024, "duration_ns": 12_000}
    ]


def test_no_copies_and_unknown_fields_do_not_crash():
    empty = memcpy_report(Trace.from_rows([_kernel(0, 10)]))
    assert (
        empty["count"] == 0
        and empty["device_mean_exposed_ns"] == 0
        and empty["by_kind"] == []
        and empty["per_device"] == []
    )
    odd = memcpy_report(Trace.from_rows([_copy(0, 0, kind=None, nbytes=None)]))
    json.dumps(odd, allow_nan=False)
    (entry,) = odd["by_kind"]
    assert entry["kind"] == "unknown" and entry["unknown_bytes_count"] == 1 and entry["bytes"] == 0


def test_expected_link_from_name_or_compute_capability():
    rows = [_copy(0, 2_000_000, nbytes=2**21)]  # 2 MiB in 2 ms = 1.05 GB/s
    named = memcpy_report(Trace.from_rows(rows, devices=[{"id": 0, "name": "NVIDIA A100-SXM4-40GB"}]))
    k = named["per_device"][0]["by_kind"][0]
    assert k["expected_link"] == "PCIe gen4 x16" and k["expected_bytes_per_s"] == pytest.approx(31.508e9)
    assert k["large_achieved_fraction"] == pytest.approx(2**21 / 2e-3 / 31.508e9)
    assert any(f["id"] == "memcpy_low_bandwidth" for f in named["findings"])
    by_cc = memcpy_report(Trace.from_rows(rows, devices=[{"id": 0, "name": "GPU X", "compute_major": 9}]))
    k = by_cc["per_device"][0]["by_kind"][0]
    assert k["expected_link"] == "PCIe gen5 x16" and "compute capability" in k["expected_source"]
    unknown = memcpy_report(Trace.from_rows(rows))["per_device"][0]["by_kind"][0]
    assert unknown["expected_bytes_per_s"] is None and unknown["achieved_fraction"] is None


# --- real traces: Kineto JSON ---------------------------------------------------------------------

_KINETO_COPY_NAME = re.compile(r"Memcpy (\w+) \((\w+) -> (\w+)\)")


def _ns(ts: float) -> int:
    # The exact value of the parsed float, in ns, rounded half to even.
    return int((Decimal(ts) * 1000).to_integral_value())


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_kineto_totals_match_a_json_walk(path: Path):
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    expected: dict[str, dict[str, int]] = defaultdict(
        lambda: {"count": 0, "bytes": 0, "duration_ns": 0, "pageable_count": 0}
    )
    copies: dict[int, list[tuple[int, int]]] = defaultdict(list)
    kernels: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        cat = str(e.get("cat", "")).lower()
        if e.get("ph") != "X" or cat not in ("gpu_memcpy", "memcpy", "kernel"):
            continue
        start = _ns(e["ts"])
        interval = (start, start + round(e["dur"] * 1000))
        device = int(e["args"]["device"])
        if cat == "kernel":
            kernels[device].append(interval)
            continue
        match = _KINETO_COPY_NAME.match(e["name"])
        kind, src, dst = match.groups()
        entry = expected[kind]
        entry["count"] += 1
        entry["bytes"] += int(e["args"].get("bytes", 0))
        entry["duration_ns"] += interval[1] - interval[0]
        entry["pageable_count"] += "Pageable" in (src, dst)
        copies[device].append(interval)
    doc = analyze(load(path), sections=["memcpy"])["memcpy"]
    json.dumps(doc, allow_nan=False)
    got = {
        k["kind"]: {f: k[f] for f in ("count", "bytes", "duration_ns", "pageable_count")}
        for k in doc["by_kind"]
    }
    assert got == dict(expected)
    exposed = sum(_exposed_by_sweep(copies[d], kernels.get(d, [])) for d in copies)
    gpus = len(set(copies) | set(kernels))  # devices with activity (the mean's denominator)
    assert doc["device_mean_exposed_ns"] == pytest.approx(exposed / gpus if gpus else 0)


@pytest.mark.parametrize("path", shared_params("pytorch", "mi250*.json.gz"))
def test_rocm_host_memory_is_unknown_not_guessed(path: Path):
    doc = memcpy_report(load(path))
    assert doc["host_memory"]["basis"] == "unknown"
    assert (
        doc["by_kind"][0]["pageable_count"] == 0 and doc["by_kind"][0]["unknown_memory_count"] == doc["count"]
    )
    # HIP's hipMemcpyWithStream blocks the host: the copies are synchronous.
    assert doc["launch"]["sync_count"] == doc["count"]


# --- real traces: Nsight Systems SQLite -----------------------------------------------------------

_NSYS_COPY_KIND = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}  # ENUM_CUDA_MEMCPY_OPER
_SYNC_API = re.compile(r"^cudaMemcpy(2D|3D|Peer|ToSymbol|FromSymbol)?(_v\d+)?$")


@pytest.mark.parametrize("path", shared_params("nsys", "*.sqlite"))
def test_nsys_totals_match_sql(path: Path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT copyKind, COUNT(*), SUM(bytes), SUM(end - start), SUM(srcKind = 0 OR dstKind = 0) "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind"
    ).fetchall()
    expected = {
        _NSYS_COPY_KIND[k]: {"count": n, "bytes": b, "duration_ns": d, "pageable_count": p}
        for k, n, b, d, p in rows
    }
    # Launch mode: the RUNTIME row of the same process with the same correlationId, names via StringIds.
    names = con.execute(
        "SELECT m.rowid, (SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
        "  WHERE r.correlationId = m.correlationId AND (r.globalTid >> 24) = (m.globalPid >> 24) LIMIT 1) "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY m"
    ).fetchall()
    sync = sum(1 for _, n in names if n and _SYNC_API.match(n))
    asynchronous = sum(1 for _, n in names if n and "Async" in n)
    copies: dict[int, list] = defaultdict(list)
    kernels: dict[int, list] = defaultdict(list)
    for dev, s, e in con.execute("SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
        copies[dev].append((s, e))
    for dev, s, e in con.execute("SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        kernels[dev].append((s, e))
    memsets: dict[int, list] = defaultdict(list)
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'CUPTI_ACTIVITY_KIND_MEMSET'").fetchall():
        for dev, s, e in con.execute("SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            memsets[dev].append((s, e))
    con.close()

    doc = analyze(load(path), sections=["memcpy"])["memcpy"]
    json.dumps(doc, allow_nan=False)
    got = {
        k["kind"]: {f: k[f] for f in ("count", "bytes", "duration_ns", "pageable_count")}
        for k in doc["by_kind"]
    }
    assert got == expected
    assert (doc["launch"]["sync_count"], doc["launch"]["async_count"]) == (sync, asynchronous)
    # Device-mean, GPU-time weighted: Σ / n_eff, n_eff = Σ of the GPUs' spans / the union of their windows.
    windows = {}
    for d in set(copies) | set(kernels) | set(memsets):
        ops = copies.get(d, []) + kernels.get(d, []) + memsets.get(d, [])
        windows[d] = (min(s for s, _ in ops), max(e for _, e in ops))
    spans = sum(e - s for s, e in windows.values())
    union = _exposed_by_sweep(
        list(windows.values()), []
    )  # the union of the windows (no "kernel" to subtract)
    gpus = spans / union if spans and union else len(windows)
    assert doc["device_mean_exposed_ns"] == pytest.approx(
        sum(_exposed_by_sweep(copies[d], kernels.get(d, [])) for d in copies) / gpus
    )
    assert [d["exposed_ns"] for d in doc["per_device"]] == [
        _exposed_by_sweep(copies[d], kernels.get(d, [])) for d in sorted(copies)
    ]


# --- real traces: XSpace protobuf -----------------------------------------------------------------


@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_xplane_totals_match_a_protobuf_walk(path: Path):
    xplane_pb2 = pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    expected: dict[str, dict[str, int]] = defaultdict(lambda: {"count": 0, "bytes": 0})
    durations: dict[str, int] = defaultdict(int)
    for plane in space.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                for stat in event.stats:
                    if stat_names.get(stat.metadata_id) != "memcpy_details":
                        continue
                    details = dict(p.split(":", 1) for p in stat.str_value.split() if ":" in p)
                    name = plane.event_metadata[event.metadata_id].name  # MemcpyH2D / MemcpyD2H / ...
                    kind = {"H2D": "HtoD", "D2H": "DtoH", "D2D": "DtoD", "P2P": "PtoP"}[name[-3:]]
                    expected[kind]["count"] += 1
                    expected[kind]["bytes"] += int(details.get("size", 0))
                    durations[kind] += event.duration_ps
    doc = memcpy_report(load(path))
    json.dumps(doc, allow_nan=False)
    got = {k["kind"]: {"count": k["count"], "bytes": k["bytes"]} for k in doc["by_kind"]}
    assert got == dict(expected)
    for k in doc["by_kind"]:
        # ps -> ns rounding happens per event boundary in the reader: at most 1 ns per copy either way.
        assert abs(k["duration_ns"] - durations[k["kind"]] / 1000) <= k["count"]
    if doc["count"]:
        assert doc["host_memory"]["basis"] == "unknown"  # TF 2.4 memcpy_details carry no memory kinds
