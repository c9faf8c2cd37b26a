"""A GPU row without an end (nsys writes every one; a damaged or hand-edited export) is read as zero-length with a
warning. Before, it was treated like an NVTX range left open and stretched to the trace's last end, which made up
busy time: in the handmade 2026 fixture, relu [32_000, NULL] ran to 70_000 (38 µs of kernel time for a 5 µs kernel),
and the verdict flipped from unexplained_idle to none (92.4% busy). Both engines (page reader and SQLite) agree."""

from __future__ import annotations

import shutil
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from tracelens.ingest import load

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"


@pytest.mark.parametrize("engine", ["pages", "sqlite3"])
def test_gpu_row_without_end_is_zero_length(
    tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACELENS_NSYS_ENGINE", engine)
    path = tmp_path / "endless.sqlite"
    shutil.copy(FIXTURE, path)
    db = sqlite3.connect(path)
    db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = NULL WHERE correlationId = 104")  # K2 relu
    db.commit()
    db.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = load(path)
    ev = trace.events
    kind = np.asarray(ev.column("kind").to_pylist())
    corr = ev.column("correlation_id").to_numpy(zero_copy_only=False)
    start = ev.column("start_ns").to_numpy()
    end = ev.column("end_ns").to_numpy()
    relu = np.flatnonzero((kind == "kernel") & (corr == 104))
    assert relu.size == 1 and end[relu[0]] == start[relu[0]]
    kernels = kind == "kernel"
    assert int((end[kernels] - start[kernels]).sum()) == 30_000  # gemm 20_000 + 10_000; relu 0
    assert "1 GPU row(s) have no end: read as zero-length" in trace.metadata.warnings
    # the NVTX range left open still runs to the trace's last end
    still_open = np.flatnonzero(np.asarray(ev.column("name").to_pylist(), dtype=object) == "still_open")
    assert end[still_open[0]] == end.max()
