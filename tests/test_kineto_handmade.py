"""The Kineto reader on the project's own fixtures: hand-made traces with numbers derived by hand (the
derivations are in ``fixtures/make_handmade.py``'s docstrings and repeated in short comments here), the
README's demo trace, and a CPU trace recorded with torch.profiler by ``fixtures/record_pytorch_cpu.py``."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from test_kineto import absolute_ns, gpu_events_by_device, union_length

import tracelens
from tests.conftest import SHARED_TRACES
from tests.kineto_events import complete_event
from tracelens.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KINETO = FIXTURES / "kineto"
DEMO = FIXTURES / "demo.pt.trace.json.gz"
CPU_TRACE = FIXTURES / "pytorch_cpu_train.pt.trace.json.gz"


def fast_engine(engine: str) -> None:
    """Skip unless ``engine`` ("native") is available here."""
    from tracelens.ingest import kineto

    if engine == "native" and not kineto.native_scanner_built():
        pytest.skip("the native scanner was not built (no C compiler)")


def load(name: str):
    trace = tracelens.load(KINETO / name)
    return trace, tracelens.analyze(trace, sections=["devices"])


def rows(trace, kind: str) -> list[dict]:
    df = trace.of_kind(kind)
    return [
        {k: (None if v is None or v != v else v) for k, v in r.items()}
        for r in df.astype(object).where(df.notna(), None).to_dict("records")
    ]


def test_overlapping_streams_union_and_span() -> None:
    trace, doc = load("overlapping_streams.json")
    # Origin: the cpu_op at 985 µs.
    assert trace.metadata.time_origin_ns == 985_000
    (device,) = doc["devices"]
    # |[1000,1015] U [1020,1025] U [1030,1032] U [1040,1040]| = 15 + 5 + 2 + 0 µs.
    assert device["busy_ns"] == 22_000
    assert device["span_ns"] == 40_000  # 1040 - 1000 µs
    assert (device["first_start_ns"], device["last_end_ns"]) == (15_000, 55_000)
    assert device["utilization"] == pytest.approx(22 / 40)
    assert (device["kernel_count"], device["kernel_ns"]) == (3, 25_000)  # 10 + 5 + 10 µs
    assert (device["memcpy_count"], device["memcpy_ns"]) == (1, 2_000)
    assert (device["memset_count"], device["memset_ns"]) == (1, 0)  # zero-length memset kept
    assert device["name"] == "NVIDIA A100-SXM4-40GB"


def test_overlapping_streams_row_details() -> None:
    trace, _ = load("overlapping_streams.json")
    kernels = {r["name"]: r for r in rows(trace, "kernel")}
    assert kernels["kernel_C"]["stream"] == 8 and kernels["kernel_A"]["stream"] == 7
    for k in kernels.values():
        assert (k["grid_x"], k["grid_y"], k["block_x"], k["registers_per_thread"]) == (4, 1, 256, 32)
        assert k["reported_occupancy"] == pytest.approx(0.5)  # 50 %
        assert k["pid"] == 77 and k["tid"] is None and k["device"] == 0
    (memcpy,) = rows(trace, "memcpy")
    assert (memcpy["copy_kind"], memcpy["src_kind"], memcpy["dst_kind"], memcpy["bytes"]) == (
        "HtoD",
        "pinned",
        "device",
        4096,
    )
    runtime_names = sorted(r["name"] for r in rows(trace, "runtime"))
    # cudaLaunchKernel_v7000 loses its version suffix.
    assert runtime_names == ["cudaLaunchKernel"] * 3 + ["cudaMemcpyAsync", "cudaMemsetAsync"]
    gpu_corr = sorted(r["correlation_id"] for k in ("kernel", "memcpy", "memset") for r in rows(trace, k))
    assert gpu_corr == [1, 2, 3, 4, 5] == sorted(r["correlation_id"] for r in rows(trace, "runtime"))
    assert trace.metadata.extra["counts"]["flow"] == 2


def test_nested_ranges_steps_depths_and_zero_length() -> None:
    trace, doc = load("nested_ranges.json")
    assert doc["devices"] == []  # host only: not an error
    assert trace.metadata.time_origin_ns == 1_700_000_000_000_100_000  # base + 100 µs
    steps = sorted((r["step"], r["start_ns"], r["end_ns"]) for r in rows(trace, "step"))
    assert steps == [(0, 0, 100_000), (1, 100_000, 200_000), (9, 10_000, 20_000)]
    df = trace.df
    depth = dict(zip(df["name"].astype(str), df["depth"], strict=True))
    assert [
        depth[n]
        for n in (
            "ProfilerStep#0",
            "forward",
            "aten::linear",
            "aten::addmm",
            "ProfilerStep#1",
            "aten::zero_",
            "tracelens/step#9",
        )
    ] == [0, 1, 2, 3, 0, 1, 0]
    zero = df[df["name"] == "aten::zero_"].iloc[0]
    assert zero["start_ns"] == zero["end_ns"] == 150_000
    assert df.loc[df["name"] == "tracelens/step#9", "domain"].iloc[0] == "tracelens"


def test_both_time_origin_styles_give_the_same_table() -> None:
    absolute, _ = load("time_origin_absolute.json")
    relative, _ = load("time_origin_relative.json")
    # ts 1712195495519689.25 µs (written "…689.2", the same float64) -> …689_250 ns.
    for trace in (absolute, relative):
        assert trace.metadata.time_origin_ns == 1_712_195_495_519_689_250
        (launch,) = rows(trace, "runtime")
        (kernel,) = rows(trace, "kernel")
        assert (launch["start_ns"], launch["end_ns"]) == (0, 2_500)  # dur 2.5 µs
        assert (kernel["start_ns"], kernel["end_ns"]) == (5_250, 7_000)  # +5.25 µs, dur 1.75 µs
    assert absolute.events.equals(relative.events)


def test_old_format_capitalised_categories() -> None:
    trace, doc = load("old_format.json")
    assert trace.metadata.time_origin_ns == 1_990_000
    (device,) = doc["devices"]
    assert (device["busy_ns"], device["span_ns"]) == (201_000, 301_000)  # 100+100+1 µs; 2301-2000 µs
    assert (device["kernel_count"], device["memcpy_count"], device["memset_count"]) == (1, 1, 1)
    for kind in ("kernel", "memcpy", "memset"):
        (row,) = rows(trace, kind)
        assert (row["pid"], row["stream"], row["device"], row["external_id"]) == (4000, 7, 0, 7)
    (kernel,) = rows(trace, "kernel")
    assert kernel["reported_occupancy"] is None
    assert (kernel["registers_per_thread"], kernel["static_shared_bytes"]) == (64, 2304)
    assert (kernel["grid_x"], kernel["grid_y"], kernel["grid_z"]) == (28, 2, 1)
    (memcpy,) = rows(trace, "memcpy")
    assert (memcpy["src_kind"], memcpy["dst_kind"]) == ("pageable", "device")
    assert {r["tid"] for r in rows(trace, "runtime")} == {139}  # "139" string tid
    assert len(rows(trace, "cpu_op")) == 1
    assert trace.devices.to_pylist()[0]["name"] is None  # no deviceProperties in 2021


def test_bare_list_with_driver_launch_sync_and_tracelens_step() -> None:
    trace, doc = load("bare_list.json")
    assert trace.metadata.time_origin_ns == 0
    (device,) = doc["devices"]
    assert (device["id"], device["busy_ns"], device["span_ns"]) == (1, 30_000, 30_000)
    (launch,) = rows(trace, "driver")
    (kernel,) = rows(trace, "kernel")
    assert launch["name"] == "cuLaunchKernel" and kernel["correlation_id"] == launch["correlation_id"] == 3
    assert (kernel["pid"], kernel["stream"]) == (9, 13)
    (sync,) = rows(trace, "gpu_sync")
    assert (sync["sync_kind"], sync["correlation_id"], sync["device"]) == ("event_sync", 4, 1)
    (step,) = rows(trace, "step")
    assert (step["step"], step["start_ns"], step["end_ns"]) == (2, 0, 70_000)


# --- the README demo ---------------------------------------------------------------------------------------


def test_demo_matches_an_independent_walk() -> None:
    raw = json.loads(gzip.open(DEMO).read())
    trace = tracelens.load(DEMO)
    doc = tracelens.analyze(trace, sections=["devices"])
    expected = gpu_events_by_device(raw)
    (device,) = doc["devices"]
    pairs = [(s, e) for _, s, e in expected[0]]
    assert device["busy_ns"] == union_length(pairs)
    assert device["span_ns"] == max(e for _, e in pairs) - min(s for s, _ in pairs)
    assert device["kernel_count"] == sum(1 for k, _, _ in expected[0] if k == "kernel")
    assert device["utilization"] < 0.3  # the GPU mostly waits for the DataLoader
    assert sorted(trace.of_kind("step")["step"]) == [1, 2, 3, 4, 5]
    # Every step is mostly DataLoader time (the point of the demo), by the raw JSON.
    steps = {
        e["name"]: absolute_ns(raw, e)
        for e in raw["traceEvents"]
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    }
    loaders = [
        absolute_ns(raw, e)
        for e in raw["traceEvents"]
        if e.get("name", "").startswith("enumerate(DataLoader)")
    ]
    assert len(loaders) == len(steps) == 5
    for (s0, s1), (l0, l1) in zip(sorted(steps.values()), sorted(loaders), strict=True):
        assert s0 <= l0 and l1 <= s1 and (l1 - l0) / (s1 - s0) > 0.7
    info = trace.device_info(0)
    assert (info["sm_count"], info["compute_major"], info["shared_mem_per_block_optin"]) == (108, 8, 166912)


def test_demo_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "--format", "json", str(DEMO)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["format"] == "kineto" and doc["source"]["framework"] == "pytorch"
    assert len(doc["devices"]) == 1


def test_make_handmade_is_deterministic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_handmade", FIXTURES / "make_handmade.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    monkeypatch.setattr(module, "KINETO_DIR", tmp_path / "kineto")
    module.main()
    assert (tmp_path / "demo.pt.trace.json.gz").read_bytes() == DEMO.read_bytes()
    for path in KINETO.glob("*.json"):
        assert (tmp_path / "kineto" / path.name).read_bytes() == path.read_bytes(), path.name


# --- the recorded CPU trace ---------------------------------------------------------------------------------


def test_recorded_cpu_trace_has_steps_and_no_gpu_activity() -> None:
    raw = json.loads(gzip.open(CPU_TRACE).read())
    want_steps = sorted(
        int(m.group(1))
        for e in raw["traceEvents"]
        if e.get("ph") == "X" and (m := re.fullmatch(r"ProfilerStep#(\d+)", e.get("name", "")))
    )
    trace = tracelens.load(CPU_TRACE)
    assert sorted(trace.of_kind("step")["step"]) == want_steps == [2, 3, 4]
    assert trace.of_kind("kernel", "memcpy", "memset").empty
    assert trace.events.num_rows == sum(
        1 for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"
    )
    names = set(trace.of_kind("annotation")["name"].astype(str))
    assert {"tracelens/data", "tracelens/forward", "tracelens/backward", "tracelens/optimizer"} <= names
    assert CPU_TRACE.stat().st_size < 300_000


def test_recorded_cpu_trace_cli_says_no_gpu_activity(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(CPU_TRACE)]) == 0
    out = capsys.readouterr().out
    assert "no gpu activity" in out.lower()


# --- block-by-block reading gives the same table as reading in one piece ------------------------------------


@pytest.mark.parametrize("block_bytes", [7, 333, 4096])
@pytest.mark.parametrize("name", ["demo", "overlapping_streams.json", "bare_list.json", "old_format.json"])
def test_any_block_size_reads_the_same_table(
    name: str, block_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracelens.ingest import kineto

    path = DEMO if name == "demo" else KINETO / name
    whole = kineto.read(path)
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", block_bytes)
    pieces = kineto.read(path)
    assert pieces.events.equals(whole.events)
    assert pieces.metadata.time_origin_ns == whole.metadata.time_origin_ns
    assert pieces.devices.equals(whole.devices)


def test_minified_and_reindented_copies_read_the_same(tmp_path: Path) -> None:
    raw = json.loads(gzip.open(DEMO).read())
    minified = tmp_path / "demo_min.json"
    minified.write_text(json.dumps(raw, separators=(",", ":")))
    indented = tmp_path / "demo_indent.json.gz"
    indented.write_bytes(gzip.compress(json.dumps(raw, indent=4).encode()))
    bare = tmp_path / "demo_bare.json"
    bare.write_text(json.dumps(raw["traceEvents"]))
    reference = tracelens.load(DEMO)
    for path in (minified, indented):
        trace = tracelens.load(path)
        assert trace.events.equals(reference.events), path.name
        assert trace.devices.equals(reference.devices)
    # A bare list has no header: same events, no device properties, no baseTimeNanoseconds.
    bare_trace = tracelens.load(bare)
    assert bare_trace.events.num_rows == reference.events.num_rows
    assert (
        bare_trace.metadata.time_origin_ns == reference.metadata.time_origin_ns - raw["baseTimeNanoseconds"]
    )


@pytest.mark.parametrize("engine", ["native"])
@pytest.mark.parametrize(
    "name", ["demo", "overlapping_streams.json", "nested_ranges.json", "time_origin_relative.json"]
)
def test_fast_engines_match_msgspec_on_fixtures(
    name: str, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast_engine(engine)
    from tracelens.ingest import kineto

    path = DEMO if name == "demo" else KINETO / name
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 2048)  # several blocks, each through the fast engine
    trace = kineto.read(path, engine=engine)
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0


def test_a_block_the_scanner_cannot_type_falls_back_to_msgspec(tmp_path: Path) -> None:
    fast_engine("native")
    from tracelens.ingest import kineto

    # "grid" as a string: the scanner declines the block, msgspec reads it loosely; same rows either way.
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 10 + i,
            "dur": 1,
            "args": {"device": 0, "stream": 7, "correlation": i, "grid": "1,1,1" if i == 3 else [1, 1, 1]},
        }
        for i in range(6)
    ]
    path = tmp_path / "odd.json"
    path.write_text(
        '{\n  "traceEvents": [\n'
        + ",\n".join("  {\n    " + json.dumps(e)[1:-1] + "\n  }" for e in events)
        + "\n  ]\n}\n"
    )
    trace = kineto.read(path, engine="native")
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 1
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)
    assert trace.of_kind("kernel")["grid_x"].isna().sum() == 1


def _many_event_file(tmp_path: Path, events: int, corrupt_at: int | None = None) -> Path:
    """A Kineto-layout file of ``events`` kernels; event ``corrupt_at`` is cut short (invalid JSON)."""
    texts = []
    for i in range(events):
        text = json.dumps(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"k{i % 7}",
                "pid": 0,
                "tid": 7,
                "ts": 10 + 3 * i,
                "dur": 2,
                "args": {"device": 0, "stream": 7, "correlation": i},
            }
        )[1:-1]
        texts.append("  {\n    " + (text[:20] if i == corrupt_at else text) + "\n  }")
    path = tmp_path / "many.json"
    path.write_text('{\n  "traceEvents": [\n' + ",\n".join(texts) + "\n  ]\n}\n")
    return path


@pytest.mark.parametrize("engine", ["native"])
def test_blocks_decoded_by_parallel_workers_keep_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    fast_engine(engine)
    from tracelens.ingest import kineto

    path = _many_event_file(tmp_path, 3000)
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 4096)  # ~200 blocks, several workers, a few in flight
    monkeypatch.setattr(kineto.reader, "MAX_WORKERS", 3)
    trace = kineto.read(path, engine=engine)
    assert trace.metadata.extra["counts"]["msgspec_blocks"] == 0
    kernels = trace.of_kind("kernel")
    # Hand-derived: kernel i starts at 10 + 3i us, lasts 2 us, and carries correlation id i.
    assert kernels["correlation_id"].tolist() == list(range(3000))
    assert (kernels["end_ns"] - kernels["start_ns"]).eq(2000).all()
    assert kernels["start_ns"].diff().dropna().eq(3000).all()
    assert trace.events.equals(kineto.read(path, engine="msgspec").events)


@pytest.mark.parametrize("engine", ["native"])
def test_a_corrupt_block_in_a_worker_is_one_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    fast_engine(engine)
    from tracelens.errors import InputError
    from tracelens.ingest import kineto

    path = _many_event_file(tmp_path, 3000, corrupt_at=1500)
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(kineto.reader, "MAX_WORKERS", 3)
    with pytest.raises(InputError, match="invalid JSON"):
        kineto.read(path, engine=engine)


@pytest.mark.parametrize("layout", ["kineto", "kineto.gz", "minified", "bare_list"])
@pytest.mark.parametrize("engine", ["msgspec", "native"])
def test_invalid_json_names_its_byte_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, engine: str
) -> None:
    if engine != "msgspec":
        fast_engine(engine)
    from tracelens.errors import InputError
    from tracelens.ingest import kineto

    text = _many_event_file(tmp_path, 2000).read_text()
    if layout == "minified":
        text = json.dumps(json.loads(text), separators=(",", ":"))
    elif layout == "bare_list":
        text = "[\n" + text[text.index("  {") : text.rindex("]")] + "]\n"
    # Event 1234's duration becomes "@": the first byte no JSON parser can accept, found here by hand.
    marker = text.index(
        '"dur":', text.index('"correlation": 1234' if layout != "minified" else '"correlation":1234') - 200
    )
    bad_at = text.index("2", marker)
    text = text[:bad_at] + "@" + text[bad_at + 1 :]
    path = tmp_path / ("bad.json.gz" if layout.endswith(".gz") else "bad.json")
    path.write_bytes(gzip.compress(text.encode()) if layout.endswith(".gz") else text.encode())
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 4096)
    with pytest.raises(InputError) as caught:
        kineto.read(path, engine=engine)
    assert f"at byte {bad_at:,} of the JSON text" in str(caught.value)


def test_one_thread_budget_reads_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Multi-rank workers allow one thread (pyarrow.set_cpu_count(1)): every pool is then run inline."""
    import pyarrow as pa

    from tracelens.ingest import kineto

    path = _many_event_file(tmp_path, 3000)
    monkeypatch.setattr(kineto.reader, "BLOCK_BYTES", 4096)
    reference = kineto.read(path, engine="msgspec")
    before = pa.cpu_count()
    pa.set_cpu_count(1)
    try:
        assert kineto.threads.thread_budget() == 1
        assert isinstance(kineto.threads.executor(kineto.threads.thread_budget()), kineto.threads.Inline)
        engines = ["msgspec"] + (["native"] if kineto.native_scanner_built() else [])
        for engine in engines:
            assert kineto.read(path, engine=engine).events.equals(reference.events), engine
    finally:
        pa.set_cpu_count(before)


def _stream_order_trace(path: Path) -> Path:
    """GPU 0: stream 7 runs k0 [100, 110], k1 [120, 130], k2 [140, 150] (µs); k0's end was recorded 3.4 s late
    (dur 3,400,000: a lost end timestamp), so it "outlasts" k1 and k2. Stream 8 runs nccl [105, 200], which spans
    k1 and k2 on another stream (a real overlap: left alone). Stream 9 runs a [300, 320] and b [315, 330]: b
    starts before a ends but ends after it (programmatic dependent launch): left alone. Host: one launch per op."""

    ops = [
        ("k0", 100, 3_400_000, 7),
        ("k1", 120, 10, 7),
        ("k2", 140, 10, 7),
        ("nccl", 105, 95, 8),
        ("a", 300, 20, 9),
        ("b", 315, 15, 9),
    ]
    events = [
        complete_event("kernel", n, 0, stream, ts, dur, device=0, stream=stream, correlation=i + 1)
        for i, (n, ts, dur, stream) in enumerate(ops)
    ]
    events += [
        complete_event("cuda_runtime", "cudaLaunchKernel", 1, 1, ts - 5, 2, correlation=i + 1)
        for i, (_, ts, _, _) in enumerate(ops)
    ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_an_op_outlasting_a_later_op_of_its_stream_is_cut_to_that_op(tmp_path: Path, engine: str) -> None:
    # Before: k0's 3.4 s stood, the GPU was "busy 100%" of a 3.4 s span and the diagnosis said none.
    fast_engine(engine)
    trace = tracelens.load(_stream_order_trace(tmp_path / "late_end.json"), engine=engine)
    ends = {r["name"]: (r["start_ns"], r["end_ns"]) for r in rows(trace, "kernel")}
    origin = 95_000  # the earliest start: k0's launch at 95 µs
    assert ends["k0"] == (100_000 - origin, 120_000 - origin)  # cut at k1's start
    assert ends["k1"] == (120_000 - origin, 130_000 - origin)
    assert ends["nccl"] == (105_000 - origin, 200_000 - origin)  # another stream: kept
    assert ends["a"] == (300_000 - origin, 320_000 - origin)  # overlaps b, does not outlast it: kept
    (warning,) = [w for w in trace.metadata.warnings if "later op of the same stream" in w]
    # dropped: k0's recorded end (3,400,100 µs) - k1's start (120 µs)
    assert "1 GPU op ended after" in warning and "dropping 3.4 s" in warning and "“k0”" in warning
    doc = tracelens.analyze(trace)
    # busy = union of [100, 200] and [300, 330] µs = 130 µs of the span [100, 330] µs
    assert doc["summary"]["gpu_utilization"] == pytest.approx(130 / 230)


def test_no_real_trace_has_an_op_outlasting_a_later_op_of_its_stream() -> None:
    # (an independent walk of every real trace found no overlap at all on one stream: the rule cuts nothing there)
    paths = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "gpu").rglob("*.pt.trace.json.gz"))
    if SHARED_TRACES.is_dir():
        paths += sorted((SHARED_TRACES / "pytorch").glob("*.json.gz"))
    for path in paths:
        warnings = tracelens.load(path).metadata.warnings
        assert not [w for w in warnings if "later op of the same stream" in w], path.name


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_gpu_ops_written_at_ts_0_with_dur_0_are_left_out(tmp_path: Path, engine: str) -> None:
    # pytorch/kineto#109 (2021): kernels written "ts": 0, "dur": 0 among absolute Unix-µs timestamps. Before, the
    # time origin went to the epoch: "unexplained_idle lost 1610366576 s (100.0% of span)".
    t0 = 1_615_207_264_505_000  # µs, the cudaLaunchKernel
    events = [
        {
            "ph": "X",
            "cat": "Runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": t0 + 10 * i,
            "dur": 6,
            "args": {"correlation": i + 1},
        }
        for i in range(3)
    ]
    events += [
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "k",
            "pid": 0,
            "tid": "stream 7",
            "ts": t0 + 10 * i + 8,
            "dur": 2,
            "args": {"device": 0, "stream": 7, "correlation": i + 1},
        }
        for i in range(2)
    ]
    events.append(
        {
            "ph": "X",
            "cat": "Kernel",
            "name": "k",
            "pid": 0,
            "tid": "stream 7",
            "ts": 0,
            "dur": 0,
            "args": {"device": 0, "stream": 7, "correlation": 3},
        }
    )
    path = tmp_path / "ts0.json"
    path.write_text(json.dumps({"traceEvents": events}))
    fast_engine(engine)
    trace = tracelens.load(path, engine=engine)
    assert trace.metadata.time_origin_ns == t0 * 1000  # the first launch, not the epoch
    kernels = rows(trace, "kernel")
    assert [(k["start_ns"], k["end_ns"]) for k in kernels] == [(8_000, 10_000), (18_000, 20_000)]
    (warning,) = [w for w in trace.metadata.warnings if "carried no time" in w]
    assert warning.startswith("1 GPU op carried no time")
    doc = tracelens.analyze(trace)
    assert doc["diagnosis"]["span_ns"] == 12_000  # [8, 20) µs after the first launch
