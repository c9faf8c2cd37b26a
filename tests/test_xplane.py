"""The xplane reader against hand-built XSpaces (numbers derived by hand) and the real traces in
../shared/traces/tf (numbers from an independent walk of the protobuf in test_xplane_helpers)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import test_xplane_helpers as pb
from conftest import shared_params
from reference import union_length

import tracelens
from tracelens.analyses.devices import device_utilization
from tracelens.ingest import detect_format, tf_common, xplane
from tracelens.ingest.xplane import events as xplane_events

PROFILE_START = 1_700_000_000_000_000_000
REF_DETAILS = "regs:32 static_shared:1024 dynamic_shared:2048 grid:10,2,1 block:128,1,1 occ_pct:50"


def _host_plane(with_steps: bool = True) -> bytes:
    names = {
        1: "train",
        2: "IteratorGetNext",
        3: "cudaLaunchKernel",
        4: "Iterator::Prefetch",
        5: "MemoryAllocation",
        6: "aggregated_op",
    }
    stats = {1: "step_num", 2: "_r", 3: "correlation_id", 4: "kernel_details"}
    step0 = [pb.stat(1, int64=0), pb.stat(2, int64=1)] if with_steps else []
    step1 = [pb.stat(1, int64=1), pb.stat(2, int64=1)] if with_steps else []
    python_line = pb.line(
        10,
        "python3",
        1000,
        [
            pb.event(1, 0, 5_000_000, step0),  # step 0 [1000, 6000]
            pb.event(1, 6_000_000, 4_000_000, step1),  # step 1 [7000, 11000]
            pb.event(2, 100_500, 999_999),  # [1000 + 100, 1000 + 1100499 // 1000] = [1100, 2100]
            # a launch: its kernel_details on the host plane is garbage and must not be used
            pb.event(3, 2_000_000, 500_000, [pb.stat(3, int64=7), pb.stat(4, string="regs:999")]),
            pb.event(6, None, 0, num_occurrences=5),  # aggregated: not on the timeline
        ],
    )
    data_line = pb.line(
        11,
        "tf_data_iterator",
        1000,
        [
            pb.event(4, 200_000, 800_000),  # [1000 + 200, 1000 + 1000] = [1200, 2000]
            pb.event(1, 500_000, 5_000_000, step0),  # step 0 again, [1500, 6500]
            pb.event(5, 300_000, 0),
        ],
    )
    return pb.plane(0, "/host:CPU", [python_line, data_line], names, stats)


def _gpu_plane(index: int, step_label: str = "0", stream_lines: bool = True) -> bytes:
    names = {1: "volta_sgemm", 2: "MemcpyH2D", 3: "op_a", 4: step_label}
    stats = {
        1: "correlation_id",
        2: "kernel_details",
        3: "memcpy_details",
        4: REF_DETAILS,
        5: "step_name",
        6: "core_count",
        7: "compute_cap_major",
        8: "compute_cap_minor",
        9: "memory_bandwidth",
    }
    lines = []
    if stream_lines:
        lines += [
            pb.line(
                5,
                "Stream #5(Compute)",
                2000,
                [
                    pb.event(
                        1, 1_000_000, 2_000_000, [pb.stat(1, int64=7), pb.stat(2, ref=4)]
                    ),  # [3000, 5000]
                    # [2000 + 4000, 2000 + 5000500 // 1000] = [6000, 7000]
                    pb.event(
                        1,
                        4_000_000,
                        1_000_500,
                        [pb.stat(1, int64=8), pb.stat(2, string="regs:38 shm:512 grid:1,1,1 block:64,1,1")],
                    ),
                ],
            ),
            pb.line(
                6,
                "Stream #6(MemcpyH2D)",
                2000,
                [
                    pb.event(
                        2,
                        1_500_000,
                        1_000_000,
                        [  # [3500, 4500]
                            pb.stat(1, int64=9),
                            pb.stat(3, string="kind_src:pinned kind_dst:device size:4096 dest:0 async:1"),
                        ],
                    ),
                ],
            ),
            # derived line repeating the kernel: must not count
            pb.line(-559038734, "TensorFlow Ops", 2000, [pb.event(3, 1_000_000, 2_000_000)]),
        ]
    lines.append(
        pb.line(
            -559038737,
            "Steps",
            2000,
            [pb.event(4, 0, 9_000_000 + index * 1_000_000, [pb.stat(5, string=step_label)])],
        )
    )
    props = [
        pb.stat(6, int64=80),
        pb.stat(7, int64=7),
        pb.stat(8, int64=0),
        pb.stat(9, uint64=898_048_000_000),
    ]
    return pb.plane(index + 1, f"/device:GPU:{index}", lines, names, stats, props)


def _task_env() -> bytes:
    return pb.plane(
        99, "Task Environment", [], {}, {1: "profile_start_time"}, [pb.stat(1, uint64=PROFILE_START)]
    )


@pytest.fixture
def handmade(tmp_path: Path) -> Path:
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(pb.space([_host_plane(), _gpu_plane(0), _task_env()], ["host0"]))
    return path


def test_handmade_device_numbers(handmade: Path) -> None:
    trace = tracelens.load(handmade)
    (gpu,) = device_utilization(trace)
    # kernels [3000,5000], [6000,7000]; memcpy [3500,4500] -> union 2000 + 1000, span 7000 - 3000
    assert (gpu.id, gpu.busy_ns, gpu.span_ns) == (0, 3000, 4000)
    assert (gpu.kernel_count, gpu.kernel_ns, gpu.memcpy_count, gpu.memcpy_ns) == (2, 3000, 1, 1000)
    # origin = earliest event (step 0 at 1000) after the Task Environment start time
    assert trace.metadata.time_origin_ns == PROFILE_START + 1000
    assert trace.metadata.clock == "unix"
    assert gpu.first_start_ns == 2000


def test_handmade_kernel_and_memcpy_columns(handmade: Path) -> None:
    df = tracelens.load(handmade).df
    kernels = df[df["kind"] == "kernel"].sort_values("start_ns")
    first, second = kernels.iloc[0], kernels.iloc[1]
    assert (first["grid_x"], first["grid_y"], first["grid_z"]) == (10, 2, 1)
    assert (first["block_x"], first["registers_per_thread"]) == (128, 32)
    assert (first["static_shared_bytes"], first["dynamic_shared_bytes"]) == (1024, 2048)
    assert first["reported_occupancy"] == pytest.approx(0.5)
    assert (first["correlation_id"], first["stream"], first["device"]) == (7, 5, 0)
    assert (second["registers_per_thread"], second["static_shared_bytes"], second["block_x"]) == (38, 512, 64)
    assert second["dynamic_shared_bytes"] == 0 and second["reported_occupancy"] is pd_na()
    (copy,) = df[df["kind"] == "memcpy"].itertuples()
    assert (copy.bytes, copy.copy_kind, copy.src_kind, copy.dst_kind) == (4096, "HtoD", "pinned", "device")
    assert (copy.start_ns, copy.end_ns) == (2500, 3500)


def pd_na():
    import pandas as pd

    return pd.NA


def test_handmade_host_rows(handmade: Path) -> None:
    df = tracelens.load(handmade).df
    (launch,) = df[df["kind"] == "runtime"].itertuples()
    assert (launch.name, launch.correlation_id, launch.start_ns, launch.end_ns) == (
        "cudaLaunchKernel",
        7,
        2000,
        2500,
    )
    assert launch.tid == 10 and pd_is_na(launch.registers_per_thread)
    iterator = df[df["name"] == "IteratorGetNext"].iloc[0]
    assert (iterator["kind"], iterator["start_ns"], iterator["end_ns"]) == ("cpu_op", 100, 1100)
    prefetch = df[df["name"] == "Iterator::Prefetch"].iloc[0]
    assert (prefetch["start_ns"], prefetch["end_ns"], prefetch["tid"]) == (200, 1000, 11)
    assert "aggregated_op" not in set(df["name"].astype(str))
    assert "op_a" not in set(df["name"].astype(str))  # derived TensorFlow Ops line
    steps = df[df["kind"] == "step"].sort_values("step")
    # step 0 seen on two threads ([1000,6000] and [1500,6500]) -> one row [1000, 6500]; step 1 [7000, 11000]
    assert steps[["step", "start_ns", "end_ns"]].values.tolist() == [[0, 0, 5500], [1, 6000, 10000]]


def pd_is_na(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_handmade_metadata_and_devices(handmade: Path) -> None:
    trace = tracelens.load(handmade)
    assert trace.metadata.source_format == "xplane"
    assert trace.metadata.framework == "tensorflow"
    assert trace.metadata.extra["aggregated_events"] == 1
    info = trace.device_info(0)
    assert (info["sm_count"], info["compute_major"], info["compute_minor"]) == (80, 7, 0)
    assert info["memory_bandwidth_bytes_per_s"] == 898_048_000_000
    assert info["vendor"] == "nvidia"


def test_device_steps_when_host_has_no_markers(tmp_path: Path) -> None:
    path = tmp_path / "h.xplane.pb"
    path.write_bytes(pb.space([_host_plane(with_steps=False), _gpu_plane(0, "3"), _gpu_plane(1, "3")]))
    trace = xplane.read(path)
    steps = trace.df[trace.df["kind"] == "step"]
    # both GPUs' "Steps" lines hold step 3 ([2000, 11000] and [2000, 12000]): one row, union of the two
    assert steps[["step", "start_ns", "end_ns"]].values.tolist() == [[3, 1000, 11000]]
    assert trace.metadata.clock == "xplane"  # no Task Environment plane
    assert trace.metadata.time_origin_ns == 1000
    assert sorted(d.id for d in device_utilization(trace)) == [0, 1]


def test_logdir_discovery_newest_run_and_run_option(tmp_path: Path) -> None:
    for run, with_gpu in (("2024_01_01_00_00_00", False), ("2024_06_01_00_00_00", True)):
        folder = tmp_path / "logs" / "train" / "plugins" / "profile" / run
        folder.mkdir(parents=True)
        planes = [_host_plane()] + ([_gpu_plane(0)] if with_gpu else [])
        (folder / "host0.xplane.pb").write_bytes(pb.space(planes))
    logdir = tmp_path / "logs"
    assert detect_format(logdir) == "xplane"
    newest = tracelens.load(logdir)
    assert newest.metadata.extra["run"] == "2024_06_01_00_00_00"
    assert len(device_utilization(newest)) == 1
    older = tracelens.load(logdir, run="2024_01_01_00_00_00")
    assert older.metadata.extra["run"] == "2024_01_01_00_00_00"
    assert device_utilization(older) == []


def test_several_hosts_of_one_run_read_together(tmp_path: Path) -> None:
    run = tmp_path / "plugins" / "profile" / "r1"
    run.mkdir(parents=True)
    for host in ("a", "b"):  # each names its host (two hosts never write the same bytes; a copy is read once)
        (run / f"{host}.xplane.pb").write_bytes(pb.space([_host_plane(), _gpu_plane(0), _task_env()], [host]))
    trace = tracelens.load(tmp_path)
    devices = device_utilization(trace)
    # host b's GPU:0 is shifted past host a's GPUs; each has the hand-derived numbers
    assert [(d.id, d.busy_ns, d.span_ns, d.kernel_count) for d in devices] == [
        (0, 3000, 4000, 2),
        (1, 3000, 4000, 2),
    ]
    assert sorted(trace.df["pid"].dropna().unique().tolist()) == [0, 1]
    assert len(trace.df[trace.df["kind"] == "step"]) == 4  # 2 steps per host


def test_reads_after_tensorflow_style_registration_in_default_pool() -> None:
    # The reader's descriptors live in a private pool: registering an XSpace with the same full name in
    # the default pool (what importing TensorFlow does) must not clash.
    from google.protobuf import descriptor_pb2, descriptor_pool

    file = descriptor_pb2.FileDescriptorProto(
        name="tsl_test/xplane_clash.proto", package="tensorflow.profiler"
    )
    file.message_type.add(name="XSpace")
    try:
        descriptor_pool.Default().Add(file)
    except TypeError:
        pass  # already registered (e.g. TensorFlow imported by another test)
    path_space = pb.space([_host_plane(), _gpu_plane(0)])
    parsed = xplane.parse_xspace(path_space, Path("x.xplane.pb"))
    assert [p.name for p in parsed.planes] == ["/host:CPU", "/device:GPU:0"]


@pytest.mark.parametrize(
    ("details", "expected"),
    [
        (
            "regs:32 static_shared:1024 dynamic_shared:2048 grid:10,2,1 block:128,1,1 occ_pct:50",
            {
                "registers_per_thread": 32,
                "static_shared_bytes": 1024,
                "dynamic_shared_bytes": 2048,
                "grid_x": 10,
                "grid_y": 2,
                "block_x": 128,
                "reported_occupancy": 0.5,
            },
        ),
        (
            "regs:38 shm:0 grid:160,1,1 block:1024,1,1",
            {
                "registers_per_thread": 38,
                "static_shared_bytes": 0,
                "dynamic_shared_bytes": 0,
                "grid_x": 160,
                "block_x": 1024,
                "reported_occupancy": None,
            },
        ),
        (
            " grid:4,1,1 block:256,1,1 private_mem:0 group_mem:0 occ_pct:0",  # ROCm
            {
                "registers_per_thread": None,
                "static_shared_bytes": None,
                "grid_x": 4,
                "block_x": 256,
                "reported_occupancy": None,
            },
        ),
    ],
)
def test_kernel_details_forms(details: str, expected: dict) -> None:
    cols = tf_common.kernel_columns(pa.array([details]))
    for name, value in expected.items():
        got = cols[name][0]
        if value is None:
            assert np.isnan(got), name
        else:
            assert got == pytest.approx(value), name


def test_launch_values_past_int32_are_null_not_wrapped(tmp_path: Path) -> None:
    """A ROCm kernel_details once held regs:2191500840 (> 2**31 - 1): the int32 column got -2147483648 and
    numpy warned on every load. Out-of-range values are absent; the in-range ones beside them are kept."""
    details = "regs:2191500840 static_shared:0 dynamic_shared:4294967296 grid:4,1,1 block:256,1,1"
    names = {1: "rocm_kernel"}
    stats = {1: "correlation_id", 2: "kernel_details"}
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [
            pb.line(
                5,
                "Stream #5(Compute)",
                2000,
                [pb.event(1, 1_000_000, 2_000_000, [pb.stat(1, int64=7), pb.stat(2, string=details)])],
            )
        ],
        names,
        stats,
    )
    path = tmp_path / "host0.xplane.pb"
    path.write_bytes(pb.space([gpu], ["host0"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (kernel,) = tracelens.load(path).df.query("kind == 'kernel'").itertuples()
    assert kernel.registers_per_thread is pd_na() and kernel.dynamic_shared_bytes is pd_na()
    assert (kernel.static_shared_bytes, kernel.grid_x, kernel.block_x) == (0, 4, 256)
    tracelens.analyze(tracelens.load(path))


# ------------------------------------------------------------------------------- real traces


def _expected_devices(path: Path) -> dict[int, dict[str, int]]:
    """Per GPU: busy/span/counts from an independent walk (stream lines only, floor-ns rounding)."""
    out: dict[int, dict[str, int]] = {}
    for plane in pb.decode_space(path.read_bytes()):
        match = re.match(r"^/device:GPU:(\d+)$", plane["name"])
        if not match:
            continue
        memcpy_ids = {k for k, v in plane["stat_names"].items() if v == "memcpy_details"}
        intervals, kernels, copies = [], 0, 0
        for line in plane["lines"]:
            if not line["name"].startswith("Stream #"):
                continue
            for ev in line["events"]:
                start = line["ts"] + ev["offset_ps"] // 1000
                end = line["ts"] + (ev["offset_ps"] + ev["duration_ps"]) // 1000
                intervals.append((start, max(start, end)))
                name = plane["event_names"].get(ev["mid"], "")
                if name.lower().startswith("memcpy") or memcpy_ids & set(ev["stats"]):
                    copies += 1
                elif not name.lower().startswith("memset"):
                    kernels += 1
        if not intervals:
            continue
        span = max(e for _, e in intervals) - min(s for s, _ in intervals)
        out[int(match.group(1))] = {
            "busy_ns": union_length(intervals),
            "span_ns": span,
            "kernel_count": kernels,
            "memcpy_count": copies,
        }
    return out


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_real_trace_devices_match_independent_walk(path: Path) -> None:
    expected = _expected_devices(path)
    assert expected, "every shared xplane has GPU activity"
    trace = tracelens.load(path)
    got = {
        d.id: {
            "busy_ns": d.busy_ns,
            "span_ns": d.span_ns,
            "kernel_count": d.kernel_count,
            "memcpy_count": d.memcpy_count,
        }
        for d in device_utilization(trace)
    }
    assert got == expected


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_real_trace_launches_and_framework(path: Path) -> None:
    planes = pb.decode_space(path.read_bytes())
    host = next(p for p in planes if p["name"] == "/host:CPU")
    corr_ids = {k for k, v in host["stat_names"].items() if v == "correlation_id"}
    host_launches = sum(1 for line in host["lines"] for ev in line["events"] if corr_ids & set(ev["stats"]))
    python_frames = any(n.startswith("$") for n in host["event_names"].values())
    trace = tracelens.load(path)
    df = trace.df
    launches = df[df["kind"].isin(["runtime", "driver"]) & df["correlation_id"].notna()]
    assert len(launches) == host_launches
    gpu = df[df["kind"].isin(["kernel", "memcpy", "memset"])]
    # every GPU op's correlation id is one of a host launch's (same process)
    assert set(gpu["correlation_id"].dropna()) <= set(launches["correlation_id"])
    expected_framework = "jax" if "jax" in path.name else "tensorflow"
    assert trace.metadata.framework == expected_framework
    assert (df["kind"] == "python").any() == python_frames


@pytest.mark.shared
def test_v100_steps_and_devices() -> None:
    paths = [p for p in (shared_params("tf", "v100x8*.xplane.pb")) if p.values[0] is not None]
    if not paths:
        pytest.skip("../shared/traces/tf not present")
    path = paths[0].values[0]
    planes = pb.decode_space(path.read_bytes())
    gpu_planes = [p for p in planes if p["name"].startswith("/device:GPU:")]
    trace = tracelens.load(path)
    assert trace.devices.num_rows == len(gpu_planes) == 8
    assert set(trace.devices.column("sm_count").to_pylist()) == {80}
    # the only step markers are the device "Steps" lines (step "0" on GPU:4 and GPU:6): one row
    steps = trace.df[trace.df["kind"] == "step"]
    assert steps["step"].tolist() == [0]
    assert trace.metadata.extra["steps_from"] == "device Steps lines"


def test_noncanonical_field_order_reads_the_same(tmp_path: Path) -> None:
    # protobuf allows fields in any order; writers use field-number order. Same events, shuffled fields:
    def shuffled_event(mid: int, offset: int, duration: int, stats: list[bytes]) -> bytes:
        return (
            b"".join(pb.lfield(4, s) for s in stats)
            + pb.vfield(3, duration)
            + pb.vfield(2, offset)
            + pb.vfield(1, mid)
        )

    names, stat_names = {1: "k"}, {1: "correlation_id"}
    canonical = pb.line(
        5,
        "Stream #5",
        100,
        [
            pb.event(1, 1_000_500, 2_000_000, [pb.stat(1, int64=3)]),
            pb.event(1, 5_000_000, 1_000_000, [pb.stat(1, int64=4)]),
        ],
    )
    value_first_stat = pb.vfield(4, 3) + pb.vfield(1, 1)  # int64_value before metadata_id
    # first event: fields shuffled; second: fields in order, but its stat's value precedes its id
    mixed = pb.line(
        5,
        "Stream #5",
        100,
        [
            shuffled_event(1, 1_000_500, 2_000_000, [value_first_stat]),
            pb.event(1, 5_000_000, 1_000_000, [pb.vfield(4, 4) + pb.vfield(1, 1)]),
        ],
    )
    tables = []
    for label, line in (("a", canonical), ("b", mixed)):
        path = tmp_path / f"{label}.xplane.pb"
        path.write_bytes(pb.space([pb.plane(1, "/device:GPU:0", [line], names, stat_names)]))
        df = xplane.read(path).df
        tables.append(
            df[["kind", "start_ns", "end_ns", "correlation_id", "stream"]].astype(str).values.tolist()
        )
    assert tables[0] == tables[1]
    # [100 + 1000, 100 + 3000], [100 + 5000, 100 + 6000] -> origin 1100
    assert [row[1:4] for row in tables[0]] == [["0", "2000", "3"], ["4000", "5000", "4"]]


def test_vectorized_varints_match_reference_encoder() -> None:
    import random

    from tracelens.ingest.xplane import wire as xplane_wire

    rng = random.Random(4)
    values = [0, 1, 127, 128, 300, 2**14, 2**21 - 1, 2**28 + 5, 2**49, 2**56 - 1, 2**56, 2**63, 2**64 - 1]
    values += [rng.getrandbits(rng.randint(1, 64)) for _ in range(5000)]
    encoded = [pb.varint(v) for v in values]
    positions = np.cumsum([0] + [len(e) for e in encoded[:-1]])
    got, after = xplane_wire.read_varints(xplane_wire.padded(b"".join(encoded)), positions)
    assert [int(v) for v in got] == values
    assert after.tolist() == (positions + [len(e) for e in encoded]).tolist()


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_depth_matches_the_tables_own_fill(path: Path) -> None:
    # the reader fills `depth` itself (for speed); it must equal what build_events computes when left null
    from tracelens.trace import EVENT_COLUMNS, build_events

    events = xplane.read(path).events
    rebuilt = build_events({c: events.column(c) for c in EVENT_COLUMNS if c != "depth"}, sort=False)
    assert rebuilt.column("depth").to_pylist() == events.column("depth").to_pylist()
    assert events.column("depth").null_count < events.num_rows


def test_handmade_nested_depth(tmp_path: Path) -> None:
    names = {1: "outer", 2: "inner", 3: "innermost"}
    host = pb.plane(
        0,
        "/host:CPU",
        [
            pb.line(
                1,
                "t",
                0,
                [
                    pb.event(1, 0, 10_000_000),
                    pb.event(2, 1_000_000, 5_000_000),
                    pb.event(3, 2_000_000, 1_000_000),
                    pb.event(2, 7_000_000, 1_000_000),
                ],
            )
        ],
        names,
        {},
    )
    path = tmp_path / "n.xplane.pb"
    path.write_bytes(pb.space([host]))
    df = xplane.read(path).df.sort_values(["start_ns", "end_ns"], ascending=[True, False])
    # outer [0,10000] > inner [1000,6000] > innermost [2000,3000]; second inner [7000,8000] inside outer
    assert df["depth"].tolist() == [0, 1, 2, 1]


def _field_positions(data: bytes, start: int, end: int) -> list[int]:
    """Tag position of every top-level field, walked one by one (reference for field_starts)."""
    out, pos = [], start
    while pos < end:
        out.append(pos)
        tag, pos = pb._read_varint(data, pos)
        wt = tag & 7
        if wt == 0:
            pos = pb._read_varint(data, pos)[1]
        elif wt == 1:
            pos += 8
        elif wt == 5:
            pos += 4
        else:
            length, pos = pb._read_varint(data, pos)
            pos += length
    return out


def _random_line(rng, n_events: int) -> bytes:
    events = []
    for _ in range(n_events):
        stats = [
            pb.stat(rng.randint(1, 300), int64=rng.getrandbits(rng.randint(1, 63)))
            for _ in range(rng.randint(0, 4))
        ]
        if rng.random() < 0.3:  # strings full of 0x22 bytes and tag look-alikes
            stats.append(pb.stat(rng.randint(1, 300), string='"' * rng.randint(0, 300) + "\x08\x22"))
        if rng.random() < 0.2:
            stats.append(pb.stat(rng.randint(1, 300), double=rng.random()))
        events.append(
            pb.event(
                rng.randint(1, 200),
                rng.getrandbits(40),
                rng.getrandbits(30),
                stats,
                num_occurrences=rng.randint(1, 3) if rng.random() < 0.1 else None,
            )
        )
    tail = pb.vfield(9, 77) + pb.lfield(11, "display") + pb.vfield(15, 1)  # fields after the events
    return pb.line(3, "Stream #3", 5, events) + tail


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000, 1 << 14])
def test_field_starts_match_a_field_by_field_walk(chunk: int) -> None:
    import random

    from tracelens.ingest.xplane import wire as xplane_wire

    rng = random.Random(chunk)
    lines = [_random_line(rng, n) for n in (0, 1, 5, 300, 2000)]
    huge = pb.event(1, 5, 5, [pb.stat(2, string="y" * 20000)])  # a length over 2**14: three bytes
    lines.append(pb.line(1, "x", 0, [pb.event(1, 1), huge, pb.event(2, 3)]))
    data = b"".join(lines)
    bounds = np.cumsum([0] + [len(ln) for ln in lines])
    expected = [p for s, e in zip(bounds[:-1], bounds[1:], strict=True) for p in _field_positions(data, s, e)]
    got = xplane_wire.field_starts(
        xplane_wire.padded(data), data, bounds[:-1], bounds[1:], seed_tag=0x22, chunk=chunk
    )
    assert got.tolist() == expected


def test_field_starts_rejects_a_field_past_its_message() -> None:
    from tracelens.ingest.xplane import wire as xplane_wire

    data = pb.lfield(4, b"\x08\x01" * 40)[:-3]
    with pytest.raises(xplane_wire.WireError):
        xplane_wire.field_starts(xplane_wire.padded(data), data, [0], [len(data)], seed_tag=0x22, chunk=16)


def test_events_located_in_the_file_or_taken_from_upb_read_the_same(tmp_path: Path, monkeypatch) -> None:
    import random

    rng = random.Random(7)
    names = {i: f"op{i}" for i in range(1, 201)}
    stat_names = {i: ("correlation_id" if i == 1 else f"s{i}") for i in range(1, 301)}
    gpu = pb.plane(1, "/device:GPU:0", [_random_line(rng, 3000), _random_line(rng, 10)], names, stat_names)
    path = tmp_path / "r.xplane.pb"
    path.write_bytes(pb.space([gpu, _host_plane(), _task_env()]))
    located, from_upb = _located_and_from_upb(path, monkeypatch)
    assert located.events.num_rows > 2000
    assert located.events.equals(from_upb.events)


def _located_and_from_upb(path: Path, monkeypatch):
    """The trace read with events located in the file (asserting that path was taken), then through upb."""
    # private on purpose: _locate_events is the fast path under test; no public switch turns it off
    calls = []
    locate = xplane_events._locate_events
    monkeypatch.setattr(
        xplane_events, "_locate_events", lambda *args: calls.append(locate(*args)) or calls[-1]
    )
    located = xplane.read(path)
    assert calls and calls[0] is not None  # the fast path was taken
    monkeypatch.setattr(xplane_events, "_locate_events", lambda *args: None)
    return located, xplane.read(path)


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("tf", "*.xplane.pb"))
def test_real_trace_events_located_in_the_file_read_as_from_upb(path: Path, monkeypatch) -> None:
    located, from_upb = _located_and_from_upb(path, monkeypatch)
    assert located.events.equals(from_upb.events)
