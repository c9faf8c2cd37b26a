"""Valid but unusual XSpaces built by hand: what the analysis says of them (numbers derived by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_xplane_helpers as pb

import tracelens
from tracelens.analyses import analyze
from tracelens.report.findings import sentence


def _copies_only(path: Path) -> Path:
    """A GPU plane with only copies (10 x 1 µs HtoD/DtoH, every 2 µs from 0) and their cudaMemcpyAsync calls
    (50 ns each, 100 ns before each copy except the first at 0): host API calls cover part of the gaps."""
    copies = [
        pb.event(
            1 + i % 2,
            i * 2_000_000,
            1_000_000,
            [pb.stat(1, int64=i + 1), pb.stat(2, string="size:4096 dest:0 async:1")],
        )
        for i in range(10)
    ]
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(6, "Stream #6(MemcpyH2D)", 0, copies)],
        {1: "MemcpyH2D", 2: "MemcpyD2H"},
        {1: "correlation_id", 2: "memcpy_details"},
    )
    calls = [
        pb.event(1, max(i * 2_000_000 - 100_000, 0), 50_000, [pb.stat(1, int64=i + 1)]) for i in range(10)
    ]
    host = pb.plane(
        0, "/host:CPU", [pb.line(1, "main", 0, calls)], {1: "cudaMemcpyAsync"}, {1: "correlation_id"}
    )
    path.write_bytes(pb.space([host, gpu]))
    return path


def test_copies_only_gpu_plane_says_nothing_of_kernel_time(tmp_path: Path) -> None:
    # No kernel ran: "0.0% of kernel time is in kernels under 10 µs" was said of no kernel time at all.
    doc = dict(analyze(tracelens.load(_copies_only(tmp_path / "host.xplane.pb"))))
    assert doc["summary"]["kernel_count"] == 0
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    launch = causes["host_launch_overhead"]
    # gaps 1 µs each (9); the calls cover 50 ns of each of the last 9 gaps: 450 ns of launch idle
    assert launch["evidence"]["idle_launch_by_device"] == {"0": 450}
    assert launch["evidence"]["small_kernel_share"] is None
    assert "kernel time" not in sentence(launch, doc["diagnosis"])


def _kernels_plane(
    name: str = "/device:GPU:0", props: dict[int, str] | None = None, values: list[bytes] = ()
) -> bytes:
    kernels = [pb.event(1, i * 2_000_000, 1_000_000) for i in range(5)]
    return pb.plane(1, name, [pb.line(5, "Stream #5", 0, kernels)], {1: "k"}, props or {}, values)


def test_device_properties_of_unexpected_types_read_as_null(tmp_path: Path) -> None:
    # memory_bandwidth as a ref_value (so a stat name, a string) stopped the read: "internal error".
    props = {
        1: "core_count",
        2: "compute_cap_major",
        3: "clock_rate",
        4: "memory_bandwidth",
        5: "device_name",
    }
    values = [
        pb.stat(1, string="eighty"),
        pb.stat(2, double=8.0),
        pb.stat(3, int64=1_410_000),
        pb.stat(4, ref=1),
        pb.stat(5, int64=7),
    ]
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_kernels_plane(props=props, values=values)]))
    (device,) = tracelens.load(path).devices.to_pylist()
    assert device["sm_count"] is None  # "eighty"
    assert device["compute_major"] == 8
    assert device["clock_rate_khz"] == 1_410_000
    assert device["memory_bandwidth_bytes_per_s"] is None  # the ref names "core_count"
    assert device["name"] == "7"


def test_profile_start_time_not_a_number_leaves_the_profile_clock(tmp_path: Path) -> None:
    env = pb.plane(
        99, "Task Environment", [], {}, {1: "profile_start_time"}, [pb.stat(1, string="yesterday")]
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_kernels_plane(), env]))
    trace = tracelens.load(path)
    assert trace.metadata.clock == "xplane"
    kernels = trace.df[trace.df["kind"] == "kernel"]
    assert kernels["start_ns"].tolist() == [0, 2000, 4000, 6000, 8000]


def test_gpu_plane_index_past_int32_is_one_line(tmp_path: Path) -> None:
    from tracelens.cli import main

    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_kernels_plane("/device:GPU:99999999999")]))
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["analyze", str(path), "-f", "json"])
    lines = err.getvalue().strip().splitlines()
    assert code == 2 and len(lines) == 1, err.getvalue()
    assert str(path) in lines[0] and "/device:GPU:99999999999" in lines[0]


def test_device_properties_past_their_columns_read_as_null(tmp_path: Path) -> None:
    # uint64 2^64-1 core count / memory size / clock rate, a 2^64-1 profile start time: "internal error" before.
    props = {1: "core_count", 2: "compute_cap_major", 3: "memory_size", 4: "clock_rate"}
    huge = 2**64 - 1
    values = [pb.stat(1, uint64=huge), pb.stat(2, int64=-1), pb.stat(3, uint64=huge), pb.stat(4, uint64=huge)]
    env = pb.plane(99, "Task Environment", [], {}, {1: "profile_start_time"}, [pb.stat(1, uint64=huge)])
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([_kernels_plane(props=props, values=values), env]))
    trace = tracelens.load(path)
    (device,) = trace.devices.to_pylist()
    assert [device[k] for k in ("sm_count", "compute_major", "total_memory_bytes", "clock_rate_khz")] == [
        None
    ] * 4
    assert trace.metadata.clock == "xplane"


def test_string_stats_with_invalid_utf8_are_replaced_not_fatal(tmp_path: Path) -> None:
    # hlo_op as a bytes_value, hlo_module as a str_value holding invalid UTF-8 (the reader takes event stats from
    # the file's bytes, past upb's UTF-8 check): "internal error: UnicodeDecodeError" before.
    raw_bytes = pb.vfield(1, 1) + pb.lfield(6, b"dot\xff")
    bad_string = pb.vfield(1, 2) + pb.lfield(5, b"jit_\xfe")
    kernels = [pb.event(1, 0, 1_000_000, [raw_bytes, bad_string])]
    gpu = pb.plane(
        1, "/device:GPU:0", [pb.line(5, "Stream #5", 0, kernels)], {1: "k"}, {1: "hlo_op", 2: "hlo_module"}
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([gpu]))
    trace = tracelens.load(path)
    assert trace.df[trace.df["kind"] == "kernel"]["op"].tolist() == ["jit_\ufffd/dot\ufffd"]
    analyze(trace)


def test_jax_without_correlation_ids_does_not_name_a_launching_thread(tmp_path: Path) -> None:
    # JAX kernels with hlo_op and no correlation id; the Python thread dispatches once (300 ns) and a worker thread
    # decodes images all along. The idle was put on "its launching thread" running "DecodeJpeg": no correlation
    # id says which thread launches, so the sentence must say it read every host thread of the process.
    kernels = [
        pb.event(
            1,
            500_000 + i * 44_000_000,
            4_000_000,
            [pb.stat(1, string="fusion.0"), pb.stat(2, string="jit_f")],
        )
        for i in range(20)
    ]
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(14, "Stream #14", 0, kernels)],
        {1: "fusion_1"},
        {1: "hlo_op", 2: "hlo_module"},
    )
    lines = [
        pb.line(1, "python3", 0, [pb.event(1, 0, 300_000)]),
        pb.line(2, "worker", 0, [pb.event(2, i * 1_000_000, 990_000) for i in range(900)]),
    ]
    host = pb.plane(0, "/host:CPU", lines, {1: "PjitFunction(f)", 2: "DecodeJpeg"}, {})
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([host, gpu]))
    doc = dict(analyze(tracelens.load(path)))
    assert doc["source"]["framework"] == "jax"
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    launch = causes["host_launch_overhead"]
    assert launch["evidence"]["feeding_threads_from"] == ["process"]
    text = sentence(launch, doc["diagnosis"])
    assert "launching thread ran" not in text and "host threads of its process" in text, text


def _gpu_only(path: Path, module: str | None, jax_metadata: bool = False) -> Path:
    """A GPU plane alone (no /host:CPU): 5 kernels of an XLA module ``module`` (its hlo_module stat)."""
    stats = [pb.stat(1, string="fusion.0"), pb.stat(2, string=module)] if module else []
    kernels = [pb.event(1, i * 2_000_000, 1_000_000, stats) for i in range(5)]
    gpu = pb.plane(1, "/device:GPU:0", [pb.line(5, "Stream #5", 0, kernels)], {1: "fusion_1"},
                   {1: "hlo_op", 2: "hlo_module"})  # fmt: skip
    planes = [gpu]
    if jax_metadata:  # JAX writes its versions on a /host:metadata plane, with or without host events
        planes.append(
            pb.plane(2, "/host:metadata", [], {}, {1: "jaxlib_version"}, [pb.stat(1, string="0.4.30")])
        )
    path.write_bytes(pb.space(planes))
    return path


@pytest.mark.parametrize(
    ("module", "jax_metadata", "framework", "producer"),
    [
        ("jit_train_step", False, "jax", "JAX profiler"),
        ("pmap_step", False, "jax", "JAX profiler"),
        (None, True, "jax", "JAX profiler"),
        ("a_inference_train_step_123__XlaMustCompile_true", False, "tensorflow", "TensorFlow Profiler"),
        (None, False, "unknown", "TensorFlow/JAX profiler"),
    ],
)
def test_gpu_only_profile_names_its_framework_from_the_gpu_side(
    tmp_path: Path, module: str | None, jax_metadata: bool, framework: str, producer: str
) -> None:
    # A JAX profile without host events was "TensorFlow Profiler" and got TensorFlow's fixes.
    trace = tracelens.load(_gpu_only(tmp_path / "host.xplane.pb", module, jax_metadata))
    assert (trace.metadata.framework, trace.metadata.producer) == (framework, producer)
    doc = dict(analyze(trace))
    assert doc["source"]["framework"] == framework
    assert doc["diagnosis"]["framework"] == framework


def test_gpu_only_jax_or_tf_profile_is_told_its_own_profilers_host_tracing(tmp_path: Path) -> None:
    # A JAX or TF profile without host events (host_tracer_level=0) was told to "record the host side (nsys -t
    # cuda,nvtx,osrt)": another profiler, where its own records the host side at its default host tracer level.
    from tracelens.analyses import analyze

    for module, framework, named in (
        ("jit_train_step", "jax", "jax.profiler.ProfileOptions"),
        ("cluster_0", "tensorflow", "tf.profiler.experimental.ProfilerOptions"),
    ):
        kernels = [pb.event(1, i * 100_000_000, 30_000_000, [pb.stat(1, string=module)]) for i in range(20)]
        gpu = pb.plane(
            1, "/device:GPU:0", [pb.line(5, "Stream #5", 1000, kernels)], {1: "fusion_1"}, {1: "hlo_module"}
        )
        path = tmp_path / f"{framework}.xplane.pb"
        path.write_bytes(pb.space([gpu]))
        doc = analyze(tracelens.load(path))
        assert doc["source"]["framework"] == framework
        primary = doc["diagnosis"]["causes"][0]
        assert primary["cause"] == "unexplained_idle" and primary["evidence"]["remedy"] == "no_api"
        assert (
            "nsys" not in primary["fix"] and named in primary["fix"] and "host_tracer_level" in primary["fix"]
        )


def test_under_filled_kernels_of_an_amd_gpu_have_no_made_up_occupancy(tmp_path: Path) -> None:
    # An AMD GPU's kernels carry grid and block (ROCm's kernel_details) but no register count: occupancy is not
    # computed, yet the top under-filled kernels listed occupancy 0.0, theoretical 0.0 and waves 0.0 (shown as
    # "est. 0.0%  theor. 0.0%"), where docs/json.md has null "when not computed". The SM fill is known: 10 blocks
    # on 100 compute units fill 10%, 90% of each kernel's time lost.
    from tracelens.analyses import analyze

    details = "grid:10,1,1 block:256,1,1 private_mem:0 group_mem:0"
    kernels = [pb.event(1, i * 20_000_000, 10_000_000, [pb.stat(1, string=details)]) for i in range(4)]
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(2, "Stream #2", 0, kernels)],
        {1: "fusion.kd"},
        {1: "kernel_details", 2: "device_vendor", 3: "core_count"},
        [pb.stat(2, string="AMD"), pb.stat(3, uint64=100)],
    )
    path = tmp_path / "amd.xplane.pb"
    path.write_bytes(pb.space([gpu]))
    occupancy = analyze(tracelens.load(path))["occupancy"]
    assert occupancy["computed_count"] == 0 and occupancy["not_computed"]
    (row,) = occupancy["top_low_occupancy_kernels"]
    assert row["sm_fill"] == 0.1 and row["lost_ns"] == 4 * 9_000
    assert (
        row["occupancy"] is None
        and row["theoretical"] is None
        and row["waves"] is None
        and row["limiter"] is None
    )
    # fewer blocks than SMs: known from the grid and the SM count alone (it read 0 under-filled kernels, 0 ns,
    # beside 36 us lost to under-filled grids)
    assert row["under_filled_count"] == 4
    (device,) = occupancy["per_device"]
    assert device["under_filled_count"] == 4 and device["under_filled_ns"] == 4 * 10_000
    assert device["under_filled_lost_ns"] == 4 * 9_000


def test_metadata_ids_past_32_bits_keep_their_own_names_and_stats(tmp_path: Path) -> None:
    # Metadata ids are int64 in xplane.proto. Keyed as (plane << 32 | id & 0xFFFFFFFF), event ids 1 and 2^32 + 1
    # were one key: the second kernel lost its name ("") and stat ids 1 and 2^32 + 1 took each other's meaning.
    big = (1 << 32) + 1
    details = "regs:32 static_shared:0 dynamic_shared:0 grid:10,1,1 block:128,1,1 occ_pct:50"
    kernels = [
        pb.event(1, i * 10_000_000, 1_000_000, [pb.stat(1, string=details), pb.stat(big, int64=i + 1)])
        for i in range(3)
    ] + [
        pb.event(big, 40_000_000 + i * 10_000_000, 2_000_000, [pb.stat(big, int64=10 + i)]) for i in range(2)
    ]
    gpu = pb.plane(
        1,
        "/device:GPU:0",
        [pb.line(5, "Stream #5(Compute)", 0, kernels)],
        {1: "gemm", big: "small"},
        {1: "kernel_details", big: "correlation_id"},
    )
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(pb.space([gpu]))
    rows = tracelens.load(path).events.to_pylist()
    assert [r["name"] for r in rows] == ["gemm"] * 3 + ["small"] * 2
    assert [r["correlation_id"] for r in rows] == [1, 2, 3, 10, 11]
    assert [r["grid_x"] for r in rows] == [10] * 3 + [None] * 2
    assert [r["block_x"] for r in rows] == [128] * 3 + [None] * 2


def test_a_plane_written_twice_is_read_once(tmp_path: Path) -> None:
    # Two byte-identical /device:GPU:0 planes (a writer or a merge that wrote one plane twice): each event was read
    # twice, 10 kernels and 10 µs of kernel time in a 5 µs busy union. A same-named plane of other content is
    # still read (as a plane split in two): its events are events of the same device.
    gpu = _kernels_plane()  # 5 kernels of 1 µs, every 2 µs
    other = pb.plane(
        2, "/device:GPU:0", [pb.line(6, "Stream #6", 0, [pb.event(1, 100_000_000, 3_000_000)])], {1: "k"}, {}
    )
    path = tmp_path / "host.xplane.pb"
    renumbered = _kernels_plane().replace(
        pb.vfield(1, 1), pb.vfield(1, 9), 1
    )  # the copy under another plane id
    assert renumbered != gpu
    path.write_bytes(pb.space([gpu, gpu, other, renumbered]))
    trace = tracelens.load(path)
    doc = dict(analyze(trace))
    assert doc["summary"]["kernel_count"] == 5 + 1
    assert doc["summary"]["device_mean_kernel_ns"] == 5 * 1_000 + 3_000
    assert doc["summary"]["device_mean_busy_ns"] == 5 * 1_000 + 3_000
    assert any("2 plane(s) are copies (the plane id aside)" in w for w in trace.metadata.warnings)
