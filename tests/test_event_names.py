"""The name rules every reader shares (tracelens/event_names.py): step markers and API suffixes.

The rule itself against hand-written cases and against Arrow's RE2 (the Nsight reader strips suffixes with
``pyarrow.compute``, the others with Python's ``re``); then each reader on a hand-made trace holding the same
names, so that a reader that stops using the rule fails here; and a source check that no other module spells
the rule again.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import test_xplane_helpers as pb
from conftest import copy_shared_trace
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tracelens.event_names import (
    API_SUFFIX_PATTERN,
    API_SUFFIX_REPLACEMENT,
    is_step_marker,
    step_number,
    strip_api_suffix,
)

PACKAGE = Path(__file__).resolve().parent.parent / "tracelens"


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("ProfilerStep#0", 0),
        ("ProfilerStep#17", 17),
        ("tracelens/step#3", 3),
        ("tracelens/step#0012", 12),
        # not markers: negative, not a number, other spellings, text around the marker
        ("ProfilerStep#-1", None),
        ("tracelens/step#-2", None),
        ("tracelens/step#x", None),
        ("ProfilerStep#", None),
        ("ProfilerStep#1.5", None),
        ("profilerstep#1", None),
        ("ProfilerStep#1 ", None),
        ("tracelens/step#1/forward", None),
        ("Optimizer.step#SGD.step", None),
        ("step#4", None),  # the readers' own name for a step row, not a marker
    ],
)
def test_step_markers(name: str, number: int | None) -> None:
    assert step_number(name) == number
    assert is_step_marker(name) == (number is not None)


@pytest.mark.parametrize(
    ("name", "stripped"),
    [
        ("cudaLaunchKernel_v7000", "cudaLaunchKernel"),
        ("cudaMemcpy2DAsync_v3020", "cudaMemcpy2DAsync"),
        ("cuMemAlloc_v2", "cuMemAlloc"),
        ("hipMemcpy_v2", "hipMemcpy"),
        ("cudaGetDeviceProperties_v2_v12000", "cudaGetDeviceProperties"),
        ("cudaStreamGetCaptureInfo_v2", "cudaStreamGetCaptureInfo"),
        ("cudaMemcpyAsync_ptsz", "cudaMemcpyAsync"),
        ("cudaMemcpyAsync_ptsz_v7000", "cudaMemcpyAsync"),
        ("cudaMemcpy_ptds", "cudaMemcpy"),
        ("cudaLaunchKernel", "cudaLaunchKernel"),
        # kernels and other names keep their suffix
        ("volta_scudnn_128x64_relu_interior_nn_v1", "volta_scudnn_128x64_relu_interior_nn_v1"),
        (
            "cudnn_infer_volta_scudnn_128x128_relu_small_nn_v1",
            "cudnn_infer_volta_scudnn_128x128_relu_small_nn_v1",
        ),
        ("my_op_v2", "my_op_v2"),
        ("cudaLaunchKernel_v", "cudaLaunchKernel_v"),
        ("cudaLaunchKernel_v7000x", "cudaLaunchKernel_v7000x"),
    ],
)
def test_api_suffixes(name: str, stripped: str) -> None:
    assert strip_api_suffix(name) == stripped
    assert strip_api_suffix(stripped) == stripped  # idempotent


_PIECES = st.sampled_from(
    [
        "cuda",
        "cu",
        "hip",
        "cudnn",
        "Launch",
        "Kernel",
        "Memcpy",
        "2D",
        "Async",
        "_v2",
        "_v7000",
        "_ptsz",
        "_ptds",
        "_",
        "v",
        "1",
        "x",
        "#",
        "é",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=8).map("".join))
def test_python_and_arrow_apply_the_same_rule(name: str) -> None:
    arrow = pc.replace_substring_regex(pa.array([name]), API_SUFFIX_PATTERN, API_SUFFIX_REPLACEMENT)
    assert arrow.to_pylist() == [strip_api_suffix(name)]


def test_no_other_module_spells_the_rules() -> None:
    """The step-marker and API-suffix regular expressions live in tracelens/event_names.py only."""
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "event_names.py":
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"_v\\+d", text) or re.search(r"(?i)step\)?#\)?\(", text) or "_ptsz" in text:
            copies.append(str(path.relative_to(PACKAGE)))
    assert not copies, f"use tracelens.event_names instead of a copy of its rules in {copies}"


# ----------------------------------------------------------------------------------- each reader


def _names_by_kind(trace: tracelens.Trace) -> dict[str, set[str]]:
    df = trace.df
    return {
        kind: set(df.loc[df["kind"] == kind, "name"].astype(str)) for kind in df["kind"].astype(str).unique()
    }


def test_kineto_reader(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#3",
            "pid": 9,
            "tid": 9,
            "ts": 0,
            "dur": 50,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#-1",
            "pid": 9,
            "tid": 9,
            "ts": 60,
            "dur": 10,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "tracelens/step#x",
            "pid": 9,
            "tid": 9,
            "ts": 75,
            "dur": 5,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemcpyAsync_ptsz_v7000",
            "pid": 9,
            "tid": 9,
            "ts": 10,
            "dur": 4,
            "args": {"correlation": 3},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaGetDeviceProperties_v2_v12000",
            "pid": 9,
            "tid": 9,
            "ts": 20,
            "dur": 4,
            "args": {"correlation": 4},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "volta_sgemm_128x64_nn_v1",
            "pid": 0,
            "tid": 7,
            "ts": 30,
            "dur": 10,
            "args": {"correlation": 5, "device": 0, "stream": 7},
        },
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    trace = tracelens.load(path)
    names = _names_by_kind(trace)
    steps = trace.of_kind("step")
    assert list(steps["step"].astype(int)) == [3] and names["step"] == {"ProfilerStep#3"}
    assert {"ProfilerStep#-1", "tracelens/step#x"} <= names["annotation"]
    assert names["runtime"] == {"cudaMemcpyAsync", "cudaGetDeviceProperties"}
    assert names["kernel"] == {"volta_sgemm_128x64_nn_v1"}


def test_xplane_reader(tmp_path: Path) -> None:
    names = {
        1: "ProfilerStep#4",
        2: "tracelens/step#-2",
        3: "cudaLaunchKernel_ptsz_v7000",
        4: "tracelens/step#5",
        5: "cuMemAlloc_v2",
    }
    host_line = pb.line(
        10,
        "python3",
        1000,
        [
            pb.event(1, 0, 5_000_000),
            pb.event(2, 6_000_000, 1_000_000),
            pb.event(3, 1_000_000, 500_000),
            pb.event(4, 8_000_000, 1_000_000),
            pb.event(5, 2_000_000, 500_000),
        ],
    )
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(pb.space([pb.plane(0, "/host:CPU", [host_line], names, {})]))
    trace = tracelens.load(path)
    by_kind = _names_by_kind(trace)
    steps = trace.of_kind("step")
    assert sorted(steps["step"].astype(int)) == [4, 5]  # step rows are named step#N by this reader
    assert "tracelens/step#-2" in by_kind["annotation"]
    assert by_kind["runtime"] == {"cudaLaunchKernel"} and by_kind["driver"] == {"cuMemAlloc"}


def test_nsys_reader(tmp_path: Path) -> None:
    path = copy_shared_trace(tmp_path, "nsys", "a100_saxpy_nsys2022.2.sqlite")
    gtid = 302119224788637  # the main thread of this export
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO StringIds (id, value) VALUES (100001, 'cudaMemcpyAsync_ptsz_v7000')")
    for start, text in (
        (900_000_000, "ProfilerStep#3"),
        (950_000_000, "tracelens/step#-1"),
        (970_000_000, "tracelens/step#6"),
    ):
        conn.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, globalTid, text, domainId) "
            f"VALUES ({start}, {start + 10_000_000}, 59, {gtid}, '{text}', 0)"
        )
    conn.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME "
        "(start, end, eventClass, globalTid, correlationId, nameId, returnValue) "
        f"VALUES (905000000, 905001000, 0, {gtid}, 999999, 100001, 0)"
    )
    conn.commit()
    conn.close()
    trace = tracelens.load(path)
    by_kind = _names_by_kind(trace)
    steps = trace.of_kind("step")
    assert sorted(steps["step"].astype(int)) == [3, 6]
    assert by_kind["step"] == {"ProfilerStep#3", "tracelens/step#6"}
    assert "tracelens/step#-1" in by_kind["annotation"]
    assert "cudaMemcpyAsync" in by_kind["runtime"]
    assert not [n for n in by_kind["runtime"] if re.search(r"_v\d+$|_pt[sd][sz]$", n)]


def test_tf_trace_json_reader(tmp_path: Path) -> None:
    def meta(kind: str, pid: int, name: str, tid: int | None = None) -> dict:
        return {"ph": "M", "name": kind, "pid": pid, "args": {"name": name}, **({"tid": tid} if tid else {})}

    events = [
        meta("process_name", 1, "/host:CPU"),
        meta("thread_name", 1, "python3", 10),
        {"ph": "X", "pid": 1, "tid": 10, "name": "ProfilerStep#2", "ts": 1000.0, "dur": 50.0},
        {"ph": "X", "pid": 1, "tid": 10, "name": "tracelens/step#-3", "ts": 1060.0, "dur": 5.0},
        {"ph": "X", "pid": 1, "tid": 10, "name": "cudaMemcpyAsync_ptsz_v7000", "ts": 1010.0, "dur": 1.0},
    ]
    path = tmp_path / "host.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    trace = tracelens.load(path)
    by_kind = _names_by_kind(trace)
    steps = trace.of_kind("step")
    assert list(steps["step"].astype(int)) == [2]
    assert (int(steps["start_ns"].iloc[0]), int(steps["end_ns"].iloc[0])) == (0, 50_000)
    assert "tracelens/step#-3" in by_kind["annotation"]
    assert by_kind["runtime"] == {"cudaMemcpyAsync"}
