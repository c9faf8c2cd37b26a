"""Exact golden files of the markdown report and the terminal summary for hand-built traces.

These tests only compare. After an intended change regenerate with ``python3 -m tests.goldens --regen report``
and review the diff of ``tests/golden/`` like code (tests/goldens.py).

* ``core``: the devices, kernels and host sections (computed) plus a diagnosis block written here in the
  documented shape — stable against changes to other sections.
* ``full``: every registered section on the same trace — changes whenever a section's output changes
  (regenerate and review then).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.goldens import check_text
from tests.test_markdown import assert_details_balanced, assert_only_our_tags, assert_tables_well_formed
from tracelens.analyses import analyze
from tracelens.report import markdown, terminal
from tracelens.trace import Trace, TraceMetadata

HOSTILE = "a|b</details><script>x</script>"
MS = 1_000_000


def golden_trace() -> Trace:
    """Two steps of 10 ms on one host thread feeding two GPUs.

    Per step: 4 ms input wait (tracelens/data), a 1 MiB pageable HtoD copy on GPU 0, a 5 ms kernel on GPU 0,
    a 2 ms kernel with a hostile name on GPU 1, a blocking cudaDeviceSynchronize at the end.
    """
    rows = []
    for i in range(2):
        t = i * 10 * MS
        rows += [
            {
                "kind": "step",
                "name": f"ProfilerStep#{i}",
                "start_ns": t,
                "end_ns": t + 10 * MS,
                "pid": 7,
                "tid": 7,
                "step": i,
            },
            {
                "kind": "annotation",
                "name": "tracelens/data",
                "start_ns": t,
                "end_ns": t + 4 * MS,
                "pid": 7,
                "tid": 7,
                "domain": "tracelens",
            },
            {
                "kind": "runtime",
                "name": "cudaMemcpyAsync",
                "start_ns": t + 4 * MS,
                "end_ns": t + 4 * MS + 20_000,
                "pid": 7,
                "tid": 7,
                "correlation_id": 100 + i,
            },
            {
                "kind": "memcpy",
                "name": "Memcpy HtoD (Pageable -> Device)",
                "start_ns": t + 4 * MS + 30_000,
                "end_ns": t + 4 * MS + 130_000,
                "device": 0,
                "stream": 7,
                "correlation_id": 100 + i,
                "pid": 7,
                "bytes": 1 << 20,
                "copy_kind": "HtoD",
                "src_kind": "pageable",
                "dst_kind": "device",
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": t + 4 * MS + 200_000,
                "end_ns": t + 4 * MS + 210_000,
                "pid": 7,
                "tid": 7,
                "correlation_id": 200 + i,
            },
            {
                "kind": "kernel",
                "name": "void gemm_kernel<float, 128>(float const*, float*)",
                "start_ns": t + 4 * MS + 220_000,
                "end_ns": t + 9 * MS + 220_000,
                "device": 0,
                "stream": 7,
                "correlation_id": 200 + i,
                "pid": 7,
                "grid_x": 40,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 256,
                "block_y": 1,
                "block_z": 1,
                "registers_per_thread": 64,
                "static_shared_bytes": 0,
                "dynamic_shared_bytes": 0,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": t + 4 * MS + 300_000,
                "end_ns": t + 4 * MS + 310_000,
                "pid": 7,
                "tid": 7,
                "correlation_id": 300 + i,
            },
            {
                "kind": "kernel",
                "name": HOSTILE,
                "start_ns": t + 5 * MS,
                "end_ns": t + 7 * MS,
                "device": 1,
                "stream": 9,
                "correlation_id": 300 + i,
                "pid": 7,
            },
            {
                "kind": "runtime",
                "name": "cudaDeviceSynchronize",
                "start_ns": t + 4 * MS + 320_000,
                "end_ns": t + 9 * MS + 230_000,
                "pid": 7,
                "tid": 7,
            },
        ]
    devices = [
        {
            "id": 0,
            "name": "Test GPU",
            "vendor": "nvidia",
            "sm_count": 80,
            "compute_major": 8,
            "compute_minor": 0,
        },
        {
            "id": 1,
            "name": "Test GPU",
            "vendor": "nvidia",
            "sm_count": 80,
            "compute_major": 8,
            "compute_minor": 0,
        },
    ]
    meta = TraceMetadata(
        source_format="handmade", source_path="handmade/golden.json", producer="tests", framework="pytorch"
    )
    return Trace.from_rows(rows, devices=devices, metadata=meta)


def core_doc() -> dict:
    doc = analyze(golden_trace(), sections=["devices", "kernels", "host"])
    # A traced name (HOSTILE) reaches the finding sentence: the renderers must escape it.
    cause = {
        "cause": "input_pipeline",
        "lost_ns": 8 * MS,
        "share": 0.4,
        "evidence": {
            "idle_by_device": {"0": 8 * MS},
            "share_of_idle": 0.8,
            "top_input_ranges": [{"name": HOSTILE, "count": 2, "total_ns": 8 * MS}],
            "input_per_step_ns": 4 * MS,
            "steps_input_share": 0.4,
            "loader": "other",
        },
        "fix": "DataLoader(num_workers=4, pin_memory=True, persistent_workers=True)",
    }
    sync = {
        "cause": "synchronization",
        "lost_ns": MS,
        "share": 0.05,
        "evidence": {
            "idle_by_device": {"0": MS},
            "blocking_calls": 2,
            "blocking_ns": 9 * MS,
            "top_sync_calls": [{"name": "cudaDeviceSynchronize", "count": 2, "total_ns": 9 * MS}],
            "item_pattern": {},
            "after_sync_idle_ns": 0,
            "remedy": "explicit",
        },
        "fix": None,
    }
    doc["diagnosis"] = {"primary": cause, "causes": [cause, sync]}
    return doc


def full_doc() -> dict:
    return analyze(golden_trace())


CASES = {"core": core_doc, "full": full_doc}


def rendered() -> dict[str, Callable[[], str]]:
    """Golden file name (in tests/golden/) -> its text: what the tests compare and `tests.goldens` writes."""
    out: dict[str, Callable[[], str]] = {}
    for case, doc in CASES.items():
        out[f"{case}.md"] = lambda doc=doc: markdown.render(doc(), output=None)
        out[f"{case}.txt"] = lambda doc=doc: terminal.render(doc())
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_markdown_golden(case: str) -> None:
    text = rendered()[f"{case}.md"]()
    assert_tables_well_formed(text)
    assert_details_balanced(text)
    assert_only_our_tags(text)
    check_text(f"{case}.md", text)


@pytest.mark.parametrize("case", sorted(CASES))
def test_terminal_golden(case: str) -> None:
    text = rendered()[f"{case}.txt"]()
    assert max(len(line) for line in text.split("\n")) <= terminal.WIDTH
    check_text(f"{case}.txt", text)


def test_core_golden_content() -> None:
    """What the core golden must say, checked by substance so a regenerated file cannot silently drop it."""
    text = markdown.render(core_doc())
    # GPU 0 busy: 2 copies of 100 µs + 2 kernels of 5 ms = 10.2 ms over 4.03 ms .. 19.22 ms = 15.19 ms span;
    # GPU 1: 2 kernels of 2 ms = 4 ms over 5 ms .. 17 ms = 12 ms span. GPU-time weighted (Σ / Σ span, 27.19 ms):
    # (10.2 + 4) / 27.19 = 52.2% (the plain mean of the shares read 50.2%); kernels (10 + 4) / 27.19 = 51.5%,
    # copies only 0.2 / 27.19 = 0.7%.
    assert (
        "- **GPU busy 52.2%:** kernels 51.5%, copies only 0.7% "
        "(over 2 devices, GPU-time weighted: GPU 0 67.1%, GPU 1 33.3%)" in text
    )
    assert "- **Primary cause:** `input_pipeline`: 8 ms lost (40.0% of the span)" in text
    assert "| 1 | 🔴 high | `input_pipeline` | 8 ms | 40.0% |" in text
    assert "| 2 | 🟡 low | `synchronization` | 1 ms | 5.0% |" in text
    assert "a&#124;b&lt;/details&gt;&lt;script&gt;x&lt;/script&gt;" in text
    summary = terminal.render(core_doc())
    assert summary.split("\n")[2] == "Diagnosis: input_pipeline  lost 8 ms (40.0% of span)"
