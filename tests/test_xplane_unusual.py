"""Valid but unusual XSpaces built by hand: what the analysis says of them (numbers derived by hand)."""

from __future__ import annotations

from pathlib import Path

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
    calls = [pb.event(1, max(i * 2_000_000 - 100_000, 0), 50_000, [pb.stat(1, int64=i + 1)]) for i in range(10)]
    host = pb.plane(0, "/host:CPU", [pb.line(1, "main", 0, calls)], {1: "cudaMemcpyAsync"}, {1: "correlation_id"})
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
