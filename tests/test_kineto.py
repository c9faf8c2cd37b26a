"""The Kineto reader against every real PyTorch profiler trace in ../shared/traces/pytorch.

Every expectation here is computed independently of tracelens: a plain ``json``/``gzip`` walk of the file,
the documented rounding rule written out with exact fractions, and a small interval union of its own.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params
from reference import union_length

import tracelens
from tracelens.ingest import kineto

TRACES = shared_params("pytorch", "*.json.gz", "*.json")

GPU_CATEGORIES = {
    "kernel": "kernel",
    "Kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "Memcpy": "memcpy",
    "gpu_memset": "memset",
    "Memset": "memset",
}
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver", "Runtime"}


@cache
def raw_document(path: Path) -> dict:
    data = gzip.open(path).read() if path.name.endswith(".gz") else path.read_bytes()
    doc = json.loads(data)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


@cache
def loaded(path: Path):
    trace = tracelens.load(path)
    return trace, tracelens.analyze(trace, sections=["devices"])


def absolute_ns(doc: dict, event: dict) -> tuple[int, int]:
    """The documented rule, exactly: round(ts µs * 1000) [+ baseTimeNanoseconds]; end = start + round(dur * 1000)."""
    start = round(Fraction(event["ts"]) * 1000) + int(doc.get("baseTimeNanoseconds", 0))
    return start, start + round(Fraction(event.get("dur", 0)) * 1000)


def gpu_events_by_device(doc: dict) -> dict[int, list[tuple[str, int, int]]]:
    by_device: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES:
            start, end = absolute_ns(doc, e)
            by_device[int(e["args"]["device"])].append((GPU_CATEGORIES[e["cat"]], start, max(end, start)))
    return by_device


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_device_busy_span_and_counts_match_an_independent_walk(path: Path) -> None:
    trace, doc = loaded(path)
    raw = raw_document(path)
    expected = gpu_events_by_device(raw)
    got = {d["id"]: d for d in doc["devices"]}
    assert sorted(got) == sorted(expected)
    origin = trace.metadata.time_origin_ns
    for device, events in expected.items():
        pairs = [(s, e) for _, s, e in events]
        d = got[device]
        assert d["busy_ns"] == union_length(pairs)
        assert d["first_start_ns"] + origin == min(s for s, _ in pairs)
        assert d["last_end_ns"] + origin == max(e for _, e in pairs)
        assert d["span_ns"] == max(e for _, e in pairs) - min(s for s, _ in pairs)
        counts = Counter(kind for kind, _, _ in events)
        assert (d["kernel_count"], d["memcpy_count"], d["memset_count"]) == (
            counts["kernel"],
            counts["memcpy"],
            counts["memset"],
        )
        assert d["kernel_ns"] == sum(e - s for k, s, e in events if k == "kernel")


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_time_origin_is_the_earliest_event_and_gpu_intervals_match_exactly(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    timed = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace" and "ts" in e]
    assert trace.metadata.time_origin_ns == min(absolute_ns(raw, e)[0] for e in timed)
    assert trace.events.num_rows == len(timed)
    df = trace.of_kind("kernel", "memcpy", "memset")
    got = sorted(
        zip(
            (df["start_ns"] + trace.metadata.time_origin_ns).tolist(),
            (df["end_ns"] + trace.metadata.time_origin_ns).tolist(),
            strict=True,
        )
    )
    want = sorted((s, e) for events in gpu_events_by_device(raw).values() for _, s, e in events)
    assert got == want


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_gpu_rows_link_to_their_launch_calls_by_correlation(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    launches = {}
    for e in raw["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATEGORIES and "correlation" in e.get("args", {}):
            launches.setdefault(e["args"]["correlation"], int(e["pid"]))
    gpu = [
        e
        for e in raw["traceEvents"]
        if e.get("ph") == "X" and (e.get("cat") in GPU_CATEGORIES or e.get("cat") == "cuda_sync")
    ]
    expected_linked = sum(1 for e in gpu if e["args"].get("correlation") in launches)

    df = trace.df
    launch_rows = df[df["kind"].isin(["runtime", "driver"])]
    gpu_rows = df[df["kind"].isin(["kernel", "memcpy", "memset", "gpu_sync"])]
    linked = gpu_rows["correlation_id"].isin(set(launch_rows["correlation_id"].dropna()))
    assert int(linked.sum()) == expected_linked
    # The GPU row's pid is the launching process's pid.
    expected_pids = Counter(
        launches[e["args"]["correlation"]] for e in gpu if e["args"].get("correlation") in launches
    )
    assert Counter(int(p) for p in gpu_rows.loc[linked, "pid"]) == expected_pids
    assert gpu_rows["tid"].isna().all()


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_steps_come_from_profiler_step_annotations(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    expected = sorted(
        int(m.group(1))
        for e in raw["traceEvents"]
        if e.get("ph") == "X"
        and e.get("cat") in ("user_annotation", "cpu_op", "Operator")
        and (m := re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", "")))
    )
    steps = trace.of_kind("step")
    assert sorted(int(s) for s in steps["step"]) == expected
    assert (steps["name"].astype(str) == [f"ProfilerStep#{s}" for s in steps["step"]]).all()
    # The profiler's copies on GPU streams stay GPU annotations, not steps.
    gpu_copies = sum(
        1
        for e in raw["traceEvents"]
        if e.get("cat") == "gpu_user_annotation" and e.get("name", "").startswith("ProfilerStep#")
    )
    ann = trace.of_kind("gpu_annotation")
    assert int(ann["name"].astype(str).str.startswith("ProfilerStep#").sum()) == gpu_copies


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_device_properties_and_metadata_are_mapped(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    props = {p["id"]: p for p in raw.get("deviceProperties", [])}
    assert trace.metadata.source_format == "kineto"
    assert trace.metadata.framework == "pytorch"
    info = raw.get("distributedInfo", {})
    assert trace.metadata.rank == info.get("rank")
    assert trace.metadata.world_size == info.get("world_size")
    for row in trace.devices.to_pylist():
        p = props.get(row["id"])
        if p is None:
            assert row["name"] is None
            continue
        assert row["name"] == p["name"]
        assert row["sm_count"] == p["numSms"]
        assert (row["compute_major"], row["compute_minor"]) == (p["computeMajor"], p["computeMinor"])
        assert row["max_threads_per_sm"] == p["maxThreadsPerMultiprocessor"]
        assert row["warp_size"] == p["warpSize"]
        assert row["regs_per_sm"] == p.get("regsPerMultiprocessor")
        assert row["shared_mem_per_sm"] == p.get(
            "sharedMemPerMultiprocessor", p.get("maxSharedMemoryPerMultiProcessor")
        )
        assert row["shared_mem_per_block_optin"] == p.get("sharedMemPerBlockOptin")
        assert row["total_memory_bytes"] == p["totalGlobalMem"]
        assert row["vendor"] == ("amd" if "AMD" in p["name"] else "nvidia")


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_kernel_launch_parameters_and_memcpy_kinds(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    kernels = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "Kernel")]
    df = trace.of_kind("kernel")
    for column, key in (
        ("registers_per_thread", "registers per thread"),
        ("static_shared_bytes", "shared memory"),
    ):
        want = [e["args"][key] for e in kernels if key in e["args"]]
        assert sorted(int(v) for v in df[column].dropna()) == sorted(want)
    grids = sorted(tuple(e["args"]["grid"]) for e in kernels if "grid" in e["args"])
    assert (
        sorted(zip(df["grid_x"].dropna(), df["grid_y"].dropna(), df["grid_z"].dropna(), strict=True)) == grids
    )
    occupancy = [
        e["args"]["est. achieved occupancy %"] / 100
        for e in kernels
        if "est. achieved occupancy %" in e["args"]
    ]
    assert np.allclose(sorted(df["reported_occupancy"].dropna().astype(float)), sorted(occupancy), atol=1e-6)

    memcpy_names = Counter(
        e["name"]
        for e in raw["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "Memcpy")
    )
    want_kinds: Counter = Counter()
    for name, n in memcpy_names.items():
        m = re.match(r"Memcpy (\w+) \((\w+) -> (\w+)\)", name)
        want_kinds[(m.group(1), m.group(2).lower(), m.group(3).lower())] += n
    mc = trace.of_kind("memcpy")
    got_kinds = Counter(
        zip(mc["copy_kind"].astype(str), mc["src_kind"].astype(str), mc["dst_kind"].astype(str), strict=True)
    )
    assert got_kinds == want_kinds


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("pytorch", "mi250*.json.gz"))
def test_rocm_trace_reads_as_amd_without_register_counts(path: Path) -> None:
    trace, doc = loaded(path)
    assert set(trace.devices.column("vendor").to_pylist()) == {"amd"}
    kernels = trace.of_kind("kernel")
    assert len(kernels) > 0
    assert kernels["registers_per_thread"].isna().all()
    assert kernels["reported_occupancy"].isna().all()
    assert trace.of_kind("runtime")["name"].astype(str).str.startswith("hip").all()
    # "Memcpy HtoD (Host -> Device)": host memory of unknown kind.
    mc = trace.of_kind("memcpy")
    assert set(mc["src_kind"].astype(str)) == {"host"}
    assert doc["devices"] and doc["devices"][0]["kernel_count"] == len(kernels)


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("pytorch", "a100_alexnet_cuda_sync_2023.json.gz"))
def test_cuda_sync_rows_become_gpu_sync_with_their_kind(path: Path) -> None:
    trace, _ = loaded(path)
    raw = raw_document(path)
    want = Counter(
        e["args"]["cuda_sync_kind"].lower().replace(" ", "_")
        for e in raw["traceEvents"]
        if e.get("cat") == "cuda_sync"
    )
    got = Counter(trace.of_kind("gpu_sync")["sync_kind"].astype(str))
    assert got == want and sum(want.values()) > 0


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_a_sync_row_without_kind_or_name_has_no_sync_kind(tmp_path: Path, engine: str) -> None:
    """A cuda_sync row's kind is its cuda_sync_kind, else its name; with neither it is null (it once took the
    last kind seen in the trace)."""
    sync = {"ph": "X", "cat": "cuda_sync", "pid": 0, "tid": 7, "dur": 5, "args": {"device": 0, "stream": 7}}
    events = [
        {
            **sync,
            "name": "Stream Sync",
            "ts": 20,
            "args": {**sync["args"], "cuda_sync_kind": "Stream Synchronize"},
        },
        {**sync, "name": "Event Sync", "ts": 30},
        {**sync, "ts": 40},
    ]
    path = tmp_path / "sync.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    kinds = kineto.read(path, engine=engine).of_kind("gpu_sync").sort_values("start_ns")["sync_kind"]
    assert kinds.iloc[0] == "stream_synchronize"
    assert kinds.iloc[1] == "event_sync"
    assert kinds.iloc[2] is None or kinds.isna().iloc[2]


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("pytorch", "v100_ns_resolution_2024.json.gz"))
def test_display_time_unit_ns_still_means_microsecond_timestamps(path: Path) -> None:
    raw = raw_document(path)
    assert raw["displayTimeUnit"] == "ns"
    trace, doc = loaded(path)
    # µs since the epoch: 2024-04-04 in ns is about 1.712e18.
    assert 1.70e18 < trace.metadata.time_origin_ns < 1.72e18
    # The profiled window is about 0.58 s (the profiler's own span event, in µs).
    span_event = next(e for e in raw["traceEvents"] if e.get("cat") == "Trace")
    assert doc["devices"][0]["span_ns"] < span_event["dur"] * 1000


def same_table_as_msgspec(path: Path, engine: str):
    """Read ``path`` with ``engine`` and with msgspec (the reference); assert the same tables and origin."""
    from tracelens.ingest import kineto

    via_engine = kineto.read(path, engine=engine)
    via_msgspec = kineto.read(path, engine="msgspec")
    assert via_engine.events.equals(via_msgspec.events)
    assert via_engine.devices.equals(via_msgspec.devices)
    assert via_engine.metadata.time_origin_ns == via_msgspec.metadata.time_origin_ns
    return via_engine, via_msgspec


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_native_and_msgspec_engines_give_the_same_table(path: Path) -> None:
    from tracelens.ingest import kineto

    if not kineto.native_scanner_built():
        pytest.skip("the native scanner was not built (no C compiler)")
    via_native, via_msgspec = same_table_as_msgspec(path, "native")
    counts = dict(via_native.metadata.extra["counts"])
    # Every block of every real trace is read by the scanner: none is left to msgspec.
    assert counts.pop("msgspec_blocks") == 0
    assert counts == {k: v for k, v in via_msgspec.metadata.extra["counts"].items() if k != "msgspec_blocks"}


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_a_minified_copy_is_read_natively_to_the_same_table(path: Path, tmp_path: Path) -> None:
    from tracelens.ingest import kineto

    if not kineto.native_scanner_built():
        pytest.skip("the native scanner was not built (no C compiler)")
    minified = tmp_path / "minified.json"
    minified.write_text(json.dumps(raw_document(path), separators=(",", ":")))
    trace = kineto.read(minified, engine="native")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0  # read natively, in one piece
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)


# Kineto args -> schema 1.1 and 1.3 columns (docs/schema.md): JSON-valued args as compact JSON text, numbers as
# they are. The 2021 key "Input dims" fills input_dims where "Input Dims" is missing.
OP_ARGS = {
    "Input Dims": "input_dims",
    "Input type": "input_types",
    "Concrete Inputs": "concrete_inputs",
    "flops": "flops",
    "In msg nelems": "msg_in_elems",
    "Out msg nelems": "msg_out_elems",
    "dtype": "msg_dtype",
    "Group size": "group_size",
    "Collective name": "collective_name",
    "Process Group Name": "process_group",
    "Process Group Ranks": "group_ranks",
}
JSON_ARGS = {"Input Dims", "Input type", "Concrete Inputs", "Input dims"}


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_op_and_collective_args_are_the_columns_of_their_rows(path: Path) -> None:
    """Every row's input_dims ... group_size equals its event's args read straight from the JSON (no other row
    has one): per (column, name, absolute start, value), as multisets."""
    doc = raw_document(path)
    want: Counter = Counter()
    for e in doc["traceEvents"]:
        args = e.get("args") or {}
        if e.get("ph") != "X" or "ts" not in e or not isinstance(args, dict):
            continue
        for key, column in OP_ARGS.items():
            value = args.get(key)
            if value is None and key == "Input Dims":
                value, key = args.get("Input dims"), "Input dims"
            if value is None:
                continue
            if key in JSON_ARGS:
                value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            want[(column, e["name"], absolute_ns(doc, e)[0], value)] += 1
    trace, _ = loaded(path)
    table = trace.events
    names = table.column("name").to_pylist()
    starts = (table.column("start_ns").to_numpy() + trace.metadata.time_origin_ns).tolist()
    got: Counter = Counter()
    for column in OP_ARGS.values():
        values = table.column(column).to_pylist()
        for i in np.flatnonzero(table.column(column).is_valid().to_numpy(zero_copy_only=False)):
            got[(column, names[i], starts[i], values[i])] += 1
    assert got == want
    if path.name.startswith(
        ("h100_bert", "a100_nccl", "v100_resnet50")
    ):  # recorded with shapes / collectives
        assert want
