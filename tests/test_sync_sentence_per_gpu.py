"""The synchronization cause names one GPU's idle and, beside it, the blocking calls: those of the whole trace. On the
h100x2 window (two processes, one GPU each, 4 cudaStreamSynchronize calls each) it read "GPU 1 was idle 2.98 ms while
the host was blocked in ... cudaStreamSynchronize (8 calls, 857 ms)": GPU 1's host made 4 of them. Where the trace
has more than one GPU, the calls are those of the threads feeding the GPU named (attribution's feeding_threads),
counted here by SQL over the export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_params

from tests.nsys_handmade_export import query
from tracelens.cli import main
from tracelens.units import fmt_ns


@pytest.mark.parametrize("path", shared_params("nsys", "h100x2_*.sqlite"))
def test_the_sync_sentence_counts_the_named_gpus_calls(path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (sync,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "synchronization"]
    idle = sync["evidence"]["idle_by_device"]
    device = max(idle, key=lambda d: (idle[d], -int(d)))
    (attribution,) = [a for a in doc["attribution"]["devices"] if str(a["device"]) == device]
    threads = " OR ".join(
        f"(((r.globalTid >> 24) & 16777215) = {p} AND (r.globalTid & 16777215) = {t})"
        for p, t in attribution["feeding_threads"]
    )
    ((count, total),) = query(
        path,
        "SELECT count(*), sum(r.end - r.start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
        f"WHERE s.value LIKE 'cudaStreamSynchronize%' AND ({threads})",
    )
    assert count == 4  # of the export's 8
    assert main(["analyze", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"GPU {device} was idle" in text
    assert f"“cudaStreamSynchronize” ({count} calls, {fmt_ns(total)})" in text


@pytest.mark.parametrize("path", shared_params("nsys", "h100x2_*.sqlite"))
def test_the_item_reads_named_beside_a_gpu_are_its_own(path: Path, capsys: pytest.CaptureFixture) -> None:
    # "GPU 1 was idle ...; 4 small device-to-host reads waited for the GPU": 2 of them were GPU 1's. Every DtoH copy
    # of this export is an .item() read (the 4 aten::item ranges): counted per device by SQL.
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    item = doc["sync"]["item_pattern"]
    per_device = dict(
        query(
            path,
            "SELECT deviceId, count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2 GROUP BY deviceId",
        )
    )
    assert item["count"] == sum(per_device.values()) == 4
    assert item["by_device"] == {str(d): n for d, n in per_device.items()}
    (sync,) = [c for c in doc["diagnosis"]["causes"] if c["cause"] == "synchronization"]
    idle = sync["evidence"]["idle_by_device"]
    device = max(idle, key=lambda d: (idle[d], -int(d)))
    assert main(["analyze", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"GPU {device} was idle" in text
    assert f"; {per_device[int(device)]} small device-to-host reads waited for the GPU" in text
