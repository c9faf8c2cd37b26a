"""Terminal summary: names never act as rich markup or terminal control, layout fits 100 columns."""

from __future__ import annotations

import pytest

from tests.test_report_golden import core_doc, golden_trace
from tracelens import load
from tracelens.analyses import analyze
from tracelens.cli import main
from tracelens.report import terminal
from tracelens.report.escape import terminal as clean
from tracelens.trace import Trace

MARKUP = "[bold red]boom[/bold red] [link=http://x]y[/link]"
CONTROL = "evil\x1b[2J\x1b]0;title\x07name"


def test_markup_and_control_characters_are_inert() -> None:
    rows = [
        {"kind": "kernel", "name": MARKUP, "start_ns": 0, "end_ns": 100, "device": 0, "stream": 1},
        {"kind": "kernel", "name": CONTROL, "start_ns": 200, "end_ns": 250, "device": 0, "stream": 1},
        {"kind": "cpu_op", "name": MARKUP, "start_ns": 0, "end_ns": 300, "pid": 1, "tid": 1},
    ]
    text = terminal.render(analyze(Trace.from_rows(rows)), color=True)
    assert "[bold red]boom[/bold red]" in text  # printed literally, not interpreted
    assert "\x1b[2J" not in text and "\x07" not in text and "evil" in text
    assert clean(CONTROL) == "evil [2J ]0;title name"


def test_width_and_order() -> None:
    text = terminal.render(analyze(golden_trace()))
    lines = text.split("\n")
    assert max(map(len, lines)) <= terminal.WIDTH
    order = [
        text.find(marker)
        for marker in (
            "Diagnosis:",
            "GPU busy",
            "Steps:",
            "idle gaps",
            "Top kernels",
            "Memory copies",
            "Host side",
        )
    ]
    assert all(i >= 0 for i in order) and order == sorted(order)


def test_sections_missing_from_the_doc_are_skipped() -> None:
    doc = core_doc()
    for key in ("kernels", "host", "diagnosis"):
        doc.pop(key)
    text = terminal.render(doc)
    assert "Top kernels" not in text and "Host side" not in text and "Diagnosis" not in text
    # GPU-time weighted over spans 15.19 and 12 ms (test_report_golden.test_core_golden_content): 52.2%.
    assert "GPU busy 52.2%: kernels 51.5%, copies only 0.7% (over 2 GPUs, GPU-time weighted)" in text


def test_no_gpu_trace() -> None:
    rows = [
        {
            "kind": "step",
            "name": "ProfilerStep#1",
            "start_ns": 0,
            "end_ns": 1000,
            "pid": 1,
            "tid": 1,
            "step": 1,
        }
    ]
    text = terminal.render(analyze(Trace.from_rows(rows)))
    assert "No GPU activity in this trace" in text


def test_cli_analyze_terminal_exit_code(tmp_path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "t.parquet"
    golden_trace().save(path)
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("handmade/golden.json  (handmade")  # the path recorded in the Parquet metadata
    assert main(["analyze", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err == f"tracelens: {tmp_path / 'missing.json'}: no such file or directory\n"
    # markdown through analyze: the PNG plot only with --png and written to a file
    out_md = tmp_path / "a.md"
    assert main(["analyze", str(path), "-o", str(out_md), "--no-plots"]) == 0
    assert out_md.read_text().startswith("# tracelens report: golden.json")
    assert "```mermaid" not in out_md.read_text()  # --no-plots: no inline charts either
    assert not (tmp_path / "a.utilization.png").exists()
    assert main(["analyze", str(path), "-o", str(out_md)]) == 0
    assert not (tmp_path / "a.utilization.png").exists()
    assert "```mermaid" in out_md.read_text()
    assert main(["analyze", str(path), "-o", str(out_md), "--png"]) == 0
    assert (tmp_path / "a.utilization.png").exists()
    assert "](a.utilization.png)" in out_md.read_text()


def test_a_cause_ranked_low_by_the_replay_still_gets_its_line() -> None:
    """The shared rank-0 NCCL trace: exposed collectives lose 6% of the span, but the replay gains nothing from
    overlapping them (the critical path is on the host), so communication ranks last, after four smaller causes.
    The summary still lists it: a later cause with at least 1% of the span gets an "also" line."""
    from tests.conftest import shared_traces
    from tracelens.report.terminal import ALSO_LISTED, ALSO_MIN_SHARE

    paths = shared_traces("pytorch", "a100_nccl_2rank_rank0_2024.json.gz")
    if not paths:
        pytest.skip("../shared/traces not present")
    doc = analyze(load(paths[0]))
    causes = doc["diagnosis"]["causes"]
    late = [c for c in causes[1 + ALSO_LISTED :] if c["share"] >= ALSO_MIN_SHARE]
    assert [c["cause"] for c in late] == ["communication"]
    text = terminal.render(doc, width=160)
    assert "also: communication 39.6 ms (6.0%)" in text
    assert text.count("also: ") == ALSO_LISTED + 1


def test_top_kernels_total_says_it_sums_the_gpus() -> None:
    # Two GPUs each running one 100 ns kernel: the summary shows per-GPU means (kernel time 100 ns), the top
    # kernels' heading the sum (200 ns): it says so, where one GPU's heading stays as it was.
    rows = [
        {"kind": "kernel", "name": "k", "start_ns": 0, "end_ns": 100, "device": d, "stream": 1}
        for d in (0, 1)
    ]
    text = terminal.render(analyze(Trace.from_rows(rows)))
    assert "Top kernels (2 launches, 1 name, 200 ns summed over 2 GPUs)" in text
    one = terminal.render(analyze(Trace.from_rows(rows[:1])))
    assert "Top kernels (1 launch, 1 name, 100 ns)" in one


def test_memory_copies_rows_say_they_sum_the_gpus() -> None:
    # One 100 ns HtoD copy on each of two GPUs: the table's row is 2 copies, 200 ns (the sum), the title's
    # exposed time 100 ns (the GPU-time weighted mean; the two share one window): the title says which is which.
    rows = [
        {
            "kind": "memcpy",
            "name": "Memcpy HtoD",
            "copy_kind": "HtoD",
            "bytes": 1024,
            "start_ns": 0,
            "end_ns": 100,
        }
        | {"device": d, "stream": 1}
        for d in (0, 1)
    ]
    text = terminal.render(analyze(Trace.from_rows(rows)), width=120)
    assert (
        "Memory copies (100 ns not overlapped by compute, per GPU, GPU-time weighted mean; rows summed over 2 GPUs)"
        in text
    )


def test_occupancy_without_any_computed_kernel_claims_no_loss() -> None:
    # Kernels with no launch geometry and no GPU model: no occupancy computed, so no "lost 0 ns" either (the
    # terminal and the markdown), and the markdown's per-GPU time cells are "-", not "0 ns".
    from tracelens.report import render

    rows = [{"kind": "kernel", "name": "k", "start_ns": 0, "end_ns": 100, "device": 0, "stream": 1}]
    doc = analyze(Trace.from_rows(rows))
    assert doc["occupancy"]["computed_count"] == 0
    text = terminal.render(doc)
    assert "Occupancy: 0 of 1 kernels computed: no occupancy loss can be measured" in text
    assert "lost 0 ns" not in text
    md = render(doc, "markdown")
    assert "0 of 1 kernel with a computed occupancy: no occupancy loss can be measured" in md
    (row,) = [
        line
        for line in md.splitlines()
        if line.endswith("| compute capability unknown (the trace does not record it) |")
    ]
    assert "0 ns" not in row and row.count("| - |") >= 1


def test_occupancy_grid_fill_loss_kept_without_computed_occupancy() -> None:
    # With an SM count, grid fill is measured even where no kernel's occupancy is (the AMD xplane trace: 0 of
    # 150 computed, 296 µs under-filled): that loss is still shown, and the 0 ns cells are measured ones.
    import copy

    from tracelens.report import render

    rows = [{"kind": "kernel", "name": "k", "start_ns": 0, "end_ns": 100, "device": 0, "stream": 1}]
    doc = copy.deepcopy(analyze(Trace.from_rows(rows)))
    doc["occupancy"]["per_device"][0].update(sm_count=80, lost_ns=50, under_filled_lost_ns=50)
    doc["occupancy"].update(lost_ns=50, under_filled_lost_ns=50)
    assert "Occupancy: 0 of 1 kernels computed, lost 50 ns (low < 50.0%)" in terminal.render(doc)
    md = render(doc, "markdown")
    assert "0 of 1 kernel with a computed occupancy; low means below 50.0%." in md
    assert "| 0 ns | 0 ns | 0 ns | 0 ns | 50 ns |" in md
