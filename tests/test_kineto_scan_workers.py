"""kineto/reader.py's scan workers: a gzipped file's blocks are scanned by one worker fewer than the thread budget
(the main thread inflates; SCAN_THREADS_SPARE), a plain file's by as many as the budget, one budget thread scans
in the main thread; every way gives the msgspec engine's table."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tracelens.ingest.kineto import reader


def _events_file(tmp_path: Path, events: int, gzipped: bool) -> Path:
    texts = []
    for i in range(events):
        event = {
            "ph": "X",
            "cat": "cuda_runtime" if i % 3 else "cpu_op",
            "name": "cuLaunchKernel" if i % 5 == 1 else f"op{i % 11}",
            "pid": 1,
            "tid": 2,
            "ts": 10 + (i * 7919) % 4001,  # out of file order, with ties
            "dur": 3 - i % 5,  # some negative
            "args": {"correlation": i},
        }
        texts.append("  {\n    " + json.dumps(event)[1:-1] + "\n  }")
    text = ('{\n  "traceEvents": [\n' + ",\n".join(texts) + "\n  ]\n}\n").encode()
    path = tmp_path / ("events.json.gz" if gzipped else "events.json")
    path.write_bytes(gzip.compress(text) if gzipped else text)
    return path


@pytest.mark.parametrize(
    ("gzipped", "budget", "want"), [(True, 2, 1), (False, 2, 2), (True, 3, 2), (True, 1, 0)]
)
def test_scan_workers_by_input_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gzipped: bool, budget: int, want: int
) -> None:
    if reader.native.scanner() is None:
        pytest.skip("the native scanner was not built")
    path = _events_file(tmp_path, 2000, gzipped)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 8192)  # many blocks, several in flight
    monkeypatch.setattr(reader, "MIN_BLOCK_BYTES", 4096)
    monkeypatch.setattr(reader, "thread_budget", lambda: budget)
    seen: list[int] = []
    original = reader._BlockDecoder.__init__

    def record(self: reader._BlockDecoder, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        seen.append(self.workers)

    monkeypatch.setattr(reader._BlockDecoder, "__init__", record)
    native = reader.read(path, engine="native")
    assert seen == [want]
    reference = reader.read(path, engine="msgspec")
    assert native.events.equals(reference.events)
    assert native.metadata.extra["counts"]["msgspec_blocks"] == 0
