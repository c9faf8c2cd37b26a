"""``tracelens diff``: metrics, verdict, kernel changes, rendering and the CI gate's exit codes."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, copy_shared_trace
from tests.test_markdown import assert_details_balanced, assert_tables_well_formed
from tracelens.cli import main
from tracelens.diff import compare, gpu_utilization, mean_step_ns, regression_reasons
from tracelens.report.diff_renderer import render_diff
from tracelens.trace import Trace

TEMPLATES = FIXTURES / "templates"


def doc(devices: list[tuple[int, int]], steps: list[int] | None = None, kernels: dict | None = None) -> dict:
    """A minimal analysis document: devices as (busy_ns, span_ns), steps as durations."""
    out: dict = {
        "schema_version": "1.0",
        "source": {"path": "x", "format": "handmade", "framework": "unknown"},
        "devices": [
            {
                "id": i,
                "busy_ns": b,
                "span_ns": s,
                "utilization": b / s,
                "kernel_count": 1,
                "kernel_ns": b,
                "memcpy_count": 0,
                "memcpy_ns": 0,
                "memset_count": 0,
                "memset_ns": 0,
            }
            for i, (b, s) in enumerate(devices)
        ],
    }
    if steps is not None:
        out["steps"] = {
            "count": len(steps),
            "steps": [{"step": i, "duration_ns": d} for i, d in enumerate(steps)],
            "summary": {"mean_ns": sum(steps) / len(steps), "min_ns": min(steps), "max_ns": max(steps)}
            if steps
            else None,
        }
    if kernels is not None:
        out["kernels"] = {
            "count": 0,
            "total_ns": 0,
            "distinct_names": len(kernels),
            "by_name": [
                {"name": n, "count": c, "total_ns": t, "avg_ns": t / c} for n, (c, t) in kernels.items()
            ],
        }
    return out


def metric(result: dict, key: str) -> dict:
    return next(m for m in result["metrics"] if m["key"] == key)


def test_utilization_is_the_device_mean() -> None:
    # Device 0 busy 90 of 100, device 1 busy 10 of 300: GPU-time weighted, Σbusy/Σspan = 100 / 400 = 0.25 (the
    # plain mean of the shares read (0.9 + 1/30) / 2 = 0.4667), as its parts (summary.utilization_by_kind) add up.
    assert gpu_utilization(doc([(90, 100), (10, 300)])) == pytest.approx(100 / 400)
    # Equal spans: the plain mean of the shares.
    assert gpu_utilization(doc([(90, 100), (10, 100)])) == (0.9 + 0.1) / 2
    assert gpu_utilization(doc([])) is None
    assert mean_step_ns(doc([(1, 2)], steps=[10, 20, 60])) == 30.0
    assert mean_step_ns(doc([(1, 2)])) is None


def test_deltas_and_verdict_regressed() -> None:
    # base 80/100 = 0.80, head 50/100 = 0.50: delta -0.30 (30 points), relative -0.375.
    # steps: base mean 10 ms, head mean 12 ms: +2 ms, +20%.
    base = doc([(80, 100)], steps=[10_000_000, 10_000_000])
    head = doc([(50, 100)], steps=[12_000_000, 12_000_000])
    result = compare(base, head)
    util = metric(result, "gpu_utilization")
    assert util["base"] == 0.8 and util["head"] == 0.5
    assert util["delta"] == pytest.approx(-0.3) and util["relative"] == pytest.approx(-0.375)
    assert util["change"] == "regressed"
    step = metric(result, "mean_step_ns")
    assert (
        step["delta"] == 2_000_000
        and step["relative"] == pytest.approx(0.2)
        and step["change"] == "regressed"
    )
    assert result["verdict"] == "regressed"
    # 30 points > 5 and 20% > 5%: both criteria fire; at 25 only utilization does, at 30 neither.
    assert len(regression_reasons(result, 5)) == 2
    assert len(regression_reasons(result, 25)) == 1 and "utilization" in regression_reasons(result, 25)[0]
    assert regression_reasons(result, 30) == []


def test_improved_and_unchanged_within_noise() -> None:
    improved = compare(doc([(50, 100)], steps=[12]), doc([(80, 100)], steps=[10]))
    assert improved["verdict"] == "improved"
    assert regression_reasons(improved, 0) == []
    # +1.5 points utilization and +1.9% step time are inside the 2% noise floor.
    same = compare(doc([(500, 1000)], steps=[1000]), doc([(515, 1000)], steps=[1019]))
    assert same["verdict"] == "unchanged"
    assert metric(same, "gpu_utilization")["change"] == "unchanged"
    assert metric(same, "mean_step_ns")["change"] == "unchanged"
    # ... but a 1-point threshold still fires on the 1.9% longer step time.
    assert len(regression_reasons(same, 1)) == 1


def test_missing_criteria_are_not_applied() -> None:
    # No GPU on either side: utilization criterion not applied; no steps: step criterion not applied.
    no_gpu = compare(doc([], steps=[10]), doc([], steps=[30]))
    assert metric(no_gpu, "gpu_utilization")["change"] == "n/a"
    assert no_gpu["verdict"] == "regressed"
    assert len(regression_reasons(no_gpu, 5)) == 1
    nothing = compare(doc([]), doc([]))
    assert nothing["verdict"] == "inconclusive" and regression_reasons(nothing, 0) == []


def test_kernel_changes() -> None:
    # gemm avg 10 -> 12 (+20%): slower; relu avg 5 -> 5.05 (+1%): within noise; conv only in base; attn only in head.
    base = doc([(1, 2)], kernels={"gemm": (10, 100), "relu": (100, 500), "conv": (1, 7)})
    head = doc([(1, 2)], kernels={"gemm": (10, 120), "relu": (100, 505), "attn": (2, 40)})
    k = compare(base, head)["kernels"]
    assert [x["name"] for x in k["slower"]] == ["gemm"]
    assert k["slower"][0]["avg_relative"] == pytest.approx(0.2) and k["slower"][0]["total_delta_ns"] == 20
    assert [x["name"] for x in k["added"]] == ["attn"] and [x["name"] for x in k["removed"]] == ["conv"]
    assert k["faster"] == [] and (k["added_count"], k["removed_count"], k["slower_count"]) == (1, 1, 1)


def run_doc(device: tuple[int, int], ranks: list[tuple[int, int]]) -> dict:
    """A run's document as far as diff reads it: devices, and per rank (step_count, mean_step_ns); no steps section
    (a run's summary.steps is null, docs/multirank.md)."""
    out = doc([device] * len(ranks))
    out["source"]["format"] = "run"
    out["ranks"] = [{"rank": r, "step_count": n, "mean_step_ns": m} for r, (n, m) in enumerate(ranks)]
    return out


def test_step_time_gate_applies_to_runs() -> None:
    """Two runs (analyze DIR documents) have no steps section: the step-time criterion was not applied, so a run whose
    steps got twice as long passed --fail-on-regression. Their mean step is over every rank's steps: rank 0 10 steps
    of 10 ms and rank 1 30 steps of 14 ms -> (100 + 420) / 40 = 13 ms; head 10 x 20 + 30 x 28 = 1040 / 40 = 26 ms."""
    base = run_doc((80, 100), [(10, 10_000_000), (30, 14_000_000)])
    head = run_doc((80, 100), [(10, 20_000_000), (30, 28_000_000)])
    assert mean_step_ns(base) == 13_000_000 and mean_step_ns(head) == 26_000_000
    result = compare(base, head)
    step = metric(result, "mean_step_ns")
    assert step["change"] == "regressed" and step["relative"] == pytest.approx(1.0)
    assert result["verdict"] == "regressed"
    (reason,) = regression_reasons(result, 5)
    assert reason.startswith("mean step time 13.000 ms -> 26.000 ms (100.0% longer")
    # a rank without steps adds none; no rank with steps: no step time (the criterion not applied)
    assert mean_step_ns(run_doc((80, 100), [(0, 0), (10, 10_000_000)])) == 10_000_000
    assert mean_step_ns(run_doc((80, 100), [(0, 0)])) is None


def test_kernels_not_compared_against_a_document_without_them() -> None:
    """A run's document (analyze DIR) has no kernels section: every kernel of the trace it was compared with was
    listed as added (or removed), as if the run had run none. Not compared, and the renderers say why; a side that
    was measured and ran no kernel (an empty by_name) still makes the other side's kernels added or removed."""
    measured = doc([(1, 2)], kernels={"gemm": (10, 100), "attn": (2, 40)})
    run_like = doc([(1, 2)])  # no "kernels" key, as a run's document
    for base, head, side in ((run_like, measured, "BASE"), (measured, run_like, "HEAD")):
        result = compare(base, head)
        k = result["kernels"]
        assert k["available"] is False and k["added"] == k["removed"] == [], side
        assert k["unavailable_reason"].startswith(f"{side} (x) has no kernel table"), k
        for fmt in ("terminal", "markdown"):
            text = render_diff(result, fmt)
            assert "gemm" not in text and "added" not in text, (fmt, text)
            assert "no kernel table" in text, fmt
    # measured on both sides, none in HEAD: both kernels removed
    k = compare(measured, doc([(1, 2)], kernels={}))["kernels"]
    assert k["available"] is True and k["unavailable_reason"] is None
    assert sorted(x["name"] for x in k["removed"]) == ["attn", "gemm"] and k["added"] == []


def test_render_markdown_and_json() -> None:
    hostile = "a|b</details><script>x</script>"
    base = doc([(80, 100)], steps=[10], kernels={hostile: (1, 10), "k" * 90: (1, 10)})
    head = doc([(50, 100)], steps=[12], kernels={hostile: (1, 20)})
    result = compare(base, head)
    text = render_diff(result, "markdown")
    assert "**Verdict: ❌ regressed**" in text
    assert "<script>" not in text and "a&#124;b&lt;/details&gt;" in text
    assert (
        "| GPU utilization (device-mean busy/span) | 80.0% | 50.0% | -30.0 pts | -37.5% | ❌ regressed |"
        in text
    )
    assert assert_tables_well_formed(text) >= 4  # sides, metrics, slower, removed
    assert_details_balanced(text)
    assert json.loads(render_diff(result, "json"))["verdict"] == "regressed"


def _step_trace(step_ns: int, busy_ns: int, steps: int = 4) -> Trace:
    """Steps of ``step_ns``; in each, input wait then one kernel of ``busy_ns`` at the step's end."""
    rows = []
    for i in range(steps):
        base = i * step_ns
        kernel_start = base + step_ns - busy_ns
        rows += [
            {
                "kind": "step",
                "name": f"ProfilerStep#{i}",
                "start_ns": base,
                "end_ns": base + step_ns,
                "pid": 1,
                "tid": 1,
                "step": i,
            },
            {
                "kind": "annotation",
                "name": "tracelens/data",
                "start_ns": base,
                "end_ns": kernel_start - 1000,
                "pid": 1,
                "tid": 1,
            },
            {
                "kind": "runtime",
                "name": "cudaLaunchKernel",
                "start_ns": kernel_start - 1000,
                "end_ns": kernel_start - 500,
                "pid": 1,
                "tid": 1,
                "correlation_id": i + 1,
            },
            {
                "kind": "kernel",
                "name": "gemm",
                "start_ns": kernel_start,
                "end_ns": base + step_ns,
                "device": 0,
                "stream": 7,
                "correlation_id": i + 1,
            },
        ]
    return Trace.from_rows(rows)


@pytest.fixture
def healthy_and_slow(tmp_path: Path) -> tuple[str, str]:
    # healthy: 4 steps of 10 ms, an 8 ms kernel ending each step: GPU from 2 ms to 40 ms = span 38 ms,
    #          busy 4 * 8 = 32 ms -> utilization 32/38 = 84.2%; mean step 10 ms.
    # slow:    4 steps of 30 ms, same kernels: GPU from 22 ms to 120 ms = span 98 ms, busy 32 ms -> 32.7%.
    healthy, slow = tmp_path / "healthy.parquet", tmp_path / "slow.parquet"
    _step_trace(10_000_000, 8_000_000).save(healthy)
    _step_trace(30_000_000, 8_000_000).save(slow)
    return str(healthy), str(slow)


def test_cli_gate_exit_codes_hand_built(
    healthy_and_slow: tuple[str, str], capsys: pytest.CaptureFixture
) -> None:
    healthy, slow = healthy_and_slow
    assert main(["diff", healthy, slow, "--fail-on-regression", "5", "-f", "json"]) == 1
    out, err = capsys.readouterr()
    result = json.loads(out)
    util = metric(result, "gpu_utilization")
    assert util["base"] == pytest.approx(32 / 38) and util["head"] == pytest.approx(32 / 98)
    assert result["verdict"] == "regressed"
    assert err.startswith("tracelens: regression: GPU utilization 84.2% -> 32.7%") and err.count("\n") == 1
    assert main(["diff", slow, healthy, "--fail-on-regression", "5", "-f", "markdown"]) == 0
    out, err = capsys.readouterr()
    assert "**Verdict: ✅ improved**" in out and err == ""
    # Without the flag a regression is reported but does not fail.
    assert main(["diff", healthy, slow]) == 0
    capsys.readouterr()


def test_cli_diff_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    assert main(["diff", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "broken.json" in err and "Traceback" not in err


def test_cli_diff_writes_file(
    healthy_and_slow: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    healthy, slow = healthy_and_slow
    out = tmp_path / "diff.json"
    assert main(["diff", healthy, slow, "-o", str(out)]) == 0
    assert json.loads(out.read_text())["verdict"] == "regressed"  # format from the .json extension


def _profiler_step_mean_us(path: Path) -> float:
    """Mean duration of the ProfilerStep#N host annotations, read straight from the Kineto JSON."""
    with gzip.open(path, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    durations = [
        float(e["dur"])
        for e in events
        if e.get("ph") == "X"
        and str(e.get("name", "")).startswith("ProfilerStep#")
        and e.get("cat") == "user_annotation"
    ]
    assert durations, f"no ProfilerStep in {path}"
    return sum(durations) / len(durations)


@pytest.mark.skipif(
    not (TEMPLATES / "pytorch_healthy_cpu.pt.trace.json.gz").exists(), reason="template traces not recorded"
)
def test_cli_gate_on_recorded_templates(capsys: pytest.CaptureFixture) -> None:
    # CPU runs of the PyTorch template (no GPU: only the step-time criterion applies). On CPU both scenarios
    # run the same model (Scenario.on_device), so slow-input is healthy plus a 50 ms sleep per batch: healthy is
    # the known-better run. The exact deltas come from the step durations in the JSON files themselves.
    healthy = TEMPLATES / "pytorch_healthy_cpu.pt.trace.json.gz"
    slow = TEMPLATES / "pytorch_slow-input_cpu.pt.trace.json.gz"
    means = {healthy: _profiler_step_mean_us(healthy), slow: _profiler_step_mean_us(slow)}
    assert means[slow] > 1.05 * means[healthy] + 40_000  # at least the injected 50 ms, less timer slack
    expected_exit = {(healthy, slow): 1, (slow, healthy): 0}
    for base, head in ((healthy, slow), (slow, healthy)):
        longer_pct = 100 * (means[head] - means[base]) / means[base]
        expected = expected_exit[(base, head)]
        assert expected == (1 if longer_pct > 5 else 0)
        # Recorded without a GPU, neither trace can say why a GPU idles: the gate fails on that alone ...
        assert main(["diff", str(base), str(head), "--fail-on-regression", "5", "-f", "json"]) == 1
        out, err = capsys.readouterr()
        assert err.startswith("tracelens: inconclusive: BASE (") and "no GPU activity recorded" in err
        # ... and with --allow-inconclusive it gates on the step time both have.
        assert (
            main(
                [
                    "diff",
                    str(base),
                    str(head),
                    "--fail-on-regression",
                    "5",
                    "--allow-inconclusive",
                    "-f",
                    "json",
                ]
            )
            == expected
        )
        out, err = capsys.readouterr()
        result = json.loads(out)
        step = metric(result, "mean_step_ns")
        assert step["relative"] == pytest.approx(longer_pct / 100, abs=1e-3)
        assert metric(result, "gpu_utilization")["change"] == "n/a"
        assert result["verdict"] == "inconclusive"
        assert step["change"] == (
            "regressed" if longer_pct > 2 else "improved" if longer_pct < -2 else "unchanged"
        )
        assert ("mean step time" in err) == bool(expected)
    # No GPU side: incomplete_trace, whatever the host shows (its input wait is the first cause).
    assert main(["diff", str(healthy), str(slow), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["head"]["primary_cause"] == "incomplete_trace"


@pytest.mark.parametrize("value", ["nan", "-5", "-5%", "abc", "5%%", "", "nan%"])
def test_fail_on_regression_threshold_must_be_a_number_from_zero(
    value: str, capsys: pytest.CaptureFixture
) -> None:
    # nan compares false with every change, so the gate would never fail; a negative one fails on improvements;
    # a word is no number: all are refused as a usage error (exit 2), before any trace is read, in one line (it was
    # click's four-line usage block: 'Usage: ... Try ... Error: Invalid value ...')
    code = main(["diff", "base.json", "head.json", f"--fail-on-regression={value}"])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tracelens: --fail-on-regression ")
    assert "the threshold is a number >= 0" in err and "Usage:" not in err


def test_fail_on_regression_accepts_a_trailing_percent(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """'--fail-on-regression 5%' was refused ('5%' is not a valid float, exit 2): PCT with a trailing % is the same
    number. base: steps of 6 ms, head: steps of 10 ms: 66.7% longer (utilization 72.7% -> 84.2%, higher): a 60
    threshold fails, a 70 one passes, written with % or without."""
    base, head = tmp_path / "base.parquet", tmp_path / "head.parquet"
    _step_trace(6_000_000, 4_000_000).save(base)
    _step_trace(10_000_000, 8_000_000).save(head)
    for pct, expected in (("60", 1), ("70", 0)):
        outcomes = []
        for value in (pct, f"{pct}%", f" {pct} % "):
            assert (
                main(["diff", str(base), str(head), "--fail-on-regression", value, "-f", "json"]) == expected
            )
            outcomes.append(capsys.readouterr().err)
        assert outcomes[0] == outcomes[1] == outcomes[2]
        assert ("mean step time 6.000 ms -> 10.000 ms (66.7% longer" in outcomes[0]) == (expected == 1)


def test_faster_steps_with_lower_utilization_are_no_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A change that shortens the GPU's work (faster kernels) lowers busy / span while every step gets faster: the gate
    failed it ('GPU utilization 84.2% -> 72.7%') and the verdict read 'regressed' next to a 40% faster step.
    base: 4 steps of 10 ms, an 8 ms kernel ending each: span 2..40 ms = 38 ms, busy 32 ms -> 32/38 = 84.2%.
    head: 4 steps of 6 ms, a 4 ms kernel ending each: span 2..24 ms = 22 ms, busy 16 ms -> 16/22 = 72.7%: 11.5 points
    lower; mean step 10 ms -> 6 ms (-40%)."""
    base, head = tmp_path / "base.parquet", tmp_path / "head.parquet"
    _step_trace(10_000_000, 8_000_000).save(base)
    _step_trace(6_000_000, 4_000_000).save(head)
    assert main(["diff", str(base), str(head), "--fail-on-regression", "5", "-f", "json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    util, step = metric(result, "gpu_utilization"), metric(result, "mean_step_ns")
    assert util["base"] == pytest.approx(32 / 38) and util["head"] == pytest.approx(16 / 22)
    assert util["change"] == "regressed"  # the row states the fact; it is not counted as a regression
    assert step["base"] == 10_000_000 and step["head"] == 6_000_000 and step["change"] == "improved"
    assert result["verdict"] == "improved" and err == ""
    assert "the mean step time improved" in result["verdict_reasons"][0]
    assert regression_reasons(result, 0) == []
    # Steps within the noise floor (10 ms -> 10.1 ms, +1%) do not excuse the same fall: 80% -> 50%.
    same_steps = compare(doc([(80, 100)], steps=[10_000_000]), doc([(50, 100)], steps=[10_100_000]))
    assert same_steps["verdict"] == "regressed"
    (reason,) = regression_reasons(same_steps, 5)
    assert reason.startswith("GPU utilization 80.0% -> 50.0% (30.0 points lower")
    # Without steps utilization is all the gate has: it still fails.
    assert len(regression_reasons(compare(doc([(80, 100)]), doc([(50, 100)])), 5)) == 1
    # Swapped (steps slower, utilization higher): step time decides, regressed.
    assert main(["diff", str(head), str(base), "--fail-on-regression", "5"]) == 1
    assert "mean step time 6.000 ms -> 10.000 ms (66.7% longer" in capsys.readouterr().err


def test_capture_totals_are_judged_per_step_when_step_counts_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A head that recorded more steps of the same work read as regressed on every capture total (span, memcpy time,
    idle time by cause, ...): a trace cut to 2 of its 3 steps against itself whole showed ten ❌ rows. Where both
    traces have steps and the counts differ, those rows are judged per step.
    base: 2 steps, span 100 -> 50 per step; head: 3 steps, span 150 -> 50 per step (unchanged, +0%); span 180 ->
    60 per step (+20%: regressed per step, though 100 -> 180 is +80% in total)."""
    base = doc([(80, 100)], steps=[10, 10])
    same = metric(compare(base, doc([(120, 150)], steps=[10, 10, 10])), "device_mean_span_ns")
    assert (same["base"], same["head"], same["relative"]) == (100, 150, 0.5)
    assert same["change"] == "unchanged" and same["per_step_relative"] == 0.0
    worse = metric(compare(base, doc([(120, 180)], steps=[10, 10, 10])), "device_mean_span_ns")
    assert worse["change"] == "regressed" and worse["per_step_relative"] == pytest.approx(60 / 50 - 1)
    # Equal step counts, or a side without steps: totals as before, per_step_relative null.
    equal = metric(compare(base, doc([(80, 150)], steps=[10, 10])), "device_mean_span_ns")
    assert equal["change"] == "regressed" and equal["per_step_relative"] is None
    no_steps = metric(compare(doc([(80, 100)]), doc([(120, 150)], steps=[10])), "device_mean_span_ns")
    assert no_steps["change"] == "regressed" and no_steps["per_step_relative"] is None
    # Through the CLI on traces: 4 and 6 steps of 10 ms, an 8 ms kernel ending each: span 2..40 = 38 ms and
    # 2..60 = 58 ms; per step 9.5 ms and 9.667 ms: +1.75%, inside the noise floor.
    four, six = tmp_path / "four.parquet", tmp_path / "six.parquet"
    _step_trace(10_000_000, 8_000_000, steps=4).save(four)
    _step_trace(10_000_000, 8_000_000, steps=6).save(six)
    assert main(["diff", str(four), str(six), "-f", "json"]) == 0
    span = metric(json.loads(capsys.readouterr().out), "device_mean_span_ns")
    assert (span["base"], span["head"]) == (38_000_000, 58_000_000)
    assert (
        span["per_step_relative"] == pytest.approx((58 / 6) / (38 / 4) - 1) and span["change"] == "unchanged"
    )
    assert main(["diff", str(four), str(six), "-f", "markdown"]) == 0
    assert "| GPU span (device-mean) | 38 ms | 58 ms | +20 ms | +52.6% | unchanged per step (+1.8%) |" in (
        capsys.readouterr().out
    )
    # The terminal marks the cell with "*" and says so under the table (a wider cell would split an 80-column table).
    assert main(["diff", str(four), str(six), "-f", "terminal"]) == 0
    out = capsys.readouterr().out
    assert any(
        line.split()
        == ["GPU", "span", "(device-mean)", "38", "ms", "58", "ms", "+20", "ms", "+52.6%", "unchanged*"]
        for line in out.splitlines()
    )
    assert "* judged per step (the total / the trace's step count): the traces recorded 4 and 6 steps" in out


def test_caveats_say_what_else_differs() -> None:
    """The diff compared a 2-GPU Nsight capture with a 1-GPU Kineto trace (or an A100 with an RTX 3080, rank 0 with
    rank 1, a trace with steps with one without) and said nothing: the gate read 'regressed' as if code had changed.
    Each difference is now one caveat line (the figures are still compared); steps on one side only make the
    comparison inconclusive (test_caveats_on_real_traces)."""
    base = doc([(80, 100)], steps=[10])
    assert compare(base, doc([(80, 100)], steps=[10]))["caveats"] == []
    (two_gpus,) = compare(doc([(80, 100), (80, 100)], steps=[10]), base)["caveats"]
    assert two_gpus.startswith("BASE has activity on 2 GPUs, HEAD on 1")
    a100, h100 = doc([(80, 100)], steps=[10]), doc([(80, 100)], steps=[10])
    a100["devices"][0]["name"], h100["devices"][0]["name"] = "NVIDIA A100", "NVIDIA H100"
    (models,) = compare(a100, h100)["caveats"]
    assert models.startswith("the GPU models differ (BASE NVIDIA A100; HEAD NVIDIA H100)")
    # Across formats the names are not compared (each profiler words a model its own way); the profilers are.
    a100["source"]["format"], h100["source"]["format"] = "nsys", "kineto"
    (formats,) = compare(a100, h100)["caveats"]
    assert formats.startswith(
        "BASE was recorded by Nsight Systems (nsys), HEAD by the PyTorch profiler (kineto)"
    )
    rank0, rank1 = doc([(80, 100)], steps=[10]), doc([(80, 100)], steps=[10])
    rank0["source"].update(rank=0, world_size=2)
    rank1["source"].update(rank=1, world_size=2)
    assert compare(rank0, rank1)["caveats"][0].startswith("BASE is rank 0 of 2, HEAD rank 1 of 2")
    rank1["source"].update(rank=0, world_size=None)  # same rank, the other's size unknown: nothing to say
    assert compare(rank0, rank1)["caveats"] == []
    # Steps on one side only: no caveat but an inconclusive comparison (the next test).
    assert compare(base, doc([(80, 100)]))["caveats"] == []


def test_caveats_on_real_traces(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The 2-GPU Nsight window against a copy that lost GPU 1's rows; the NCCL rank-0 trace against a copy that says
    rank 1, and one without its ProfilerStep annotations (then inconclusive)."""
    nsys = copy_shared_trace(tmp_path, "nsys", "h100x2_fastvideo_window_nsys2026.2.sqlite")
    one_gpu = tmp_path / "one_gpu.sqlite"
    one_gpu.write_bytes(nsys.read_bytes())
    one_gpu.chmod(0o600)
    with sqlite3.connect(one_gpu) as db:
        for table in ("KERNEL", "MEMCPY", "MEMSET"):
            db.execute(f"DELETE FROM CUPTI_ACTIVITY_KIND_{table} WHERE deviceId = 1")
    counts = []
    for path in (nsys, one_gpu):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            counts.append(
                db.execute("SELECT COUNT(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
            )
    assert counts == [2, 1]
    assert main(["diff", str(nsys), str(one_gpu), "-f", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["caveats"][0].startswith(f"BASE has activity on {counts[0]} GPUs, HEAD on {counts[1]}:")

    kineto = copy_shared_trace(tmp_path, "pytorch", "a100_nccl_2rank_rank0_2024.json.gz")
    with gzip.open(kineto, "rt") as fh:
        trace = json.load(fh)
    info = trace["distributedInfo"]
    assert main(["diff", str(kineto), str(kineto), "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["caveats"] == []
    rank1 = tmp_path / "rank1.json"
    rank1.write_text(json.dumps({**trace, "distributedInfo": {**info, "rank": info["rank"] + 1}}))
    no_steps = tmp_path / "no_steps.json"
    events = [e for e in trace["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(events) < len(trace["traceEvents"])
    no_steps.write_text(json.dumps({**trace, "traceEvents": events}))
    assert main(["diff", str(kineto), str(rank1), "-f", "json"]) == 0
    (line,) = json.loads(capsys.readouterr().out)["caveats"]
    assert line.startswith(
        f"BASE is rank {info['rank']} of {info['world_size']}, HEAD rank {info['rank'] + 1} of"
    )
    # HEAD lost its step markers: the step time, the gate's measure of speed, cannot be compared. It passed on
    # utilization alone ('unchanged', exit 0); inconclusive now, --allow-inconclusive gates on utilization.
    line = "HEAD has no steps and BASE has: the mean step time cannot be compared"
    assert main(["diff", str(kineto), str(no_steps), "--fail-on-regression", "5", "-f", "json"]) == 1
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["verdict"] == "inconclusive" and result["verdict_reasons"][0] == line
    assert result["inconclusive_reason"] == line and result["caveats"] == []
    assert err == f"tracelens: inconclusive: {line} (--allow-inconclusive to pass)\n"
    assert (
        main(["diff", str(no_steps), str(kineto), "--fail-on-regression", "5", "--allow-inconclusive"]) == 0
    )
    assert (
        "- BASE has no steps and HEAD has: the mean step time cannot be compared" in capsys.readouterr().out
    )


def test_run_with_a_rank_that_lost_its_gpu_side_cannot_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two runs (analyze DIR) of two ranks; in HEAD rank 1's trace has its 4 launch calls and no GPU event
    (fixtures/completeness/launches_without_gpu.json): the run's diagnosis is its representative rank's, so the
    gate passed, 'unchanged', on rank 0's GPU alone. The run now cannot answer, naming the rank."""
    good = json.loads((FIXTURES / "completeness" / "missing_correlation.json").read_text())
    lost = json.loads((FIXTURES / "completeness" / "launches_without_gpu.json").read_text())
    base, head = tmp_path / "base", tmp_path / "head"
    for folder, rank1 in ((base, good), (head, lost)):
        folder.mkdir()
        for rank, trace in ((0, good), (1, rank1)):
            trace = {**trace, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2}}
            (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))
    assert main(["diff", str(base), str(head), "--fail-on-regression", "5", "-f", "json"]) == 1
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["base"]["answerable"] is True and result["head"]["answerable"] is False
    reason = (
        "1 of 2 ranks' traces cannot answer, their GPU side missing: rank 1 (launches without gpu activity)"
    )
    assert result["head"]["incomplete_reason"] == reason and result["verdict"] == "inconclusive"
    assert (
        err
        == f"tracelens: inconclusive: HEAD ({head}) cannot answer: {reason} (--allow-inconclusive to pass)\n"
    )
    assert main(["diff", str(base), str(base), "--fail-on-regression", "5"]) == 0
    capsys.readouterr()


def test_threshold_zero_names_the_change_it_fired_on() -> None:
    """--fail-on-regression 0 fires on any drop: a copy of the 2-GPU Nsight window with one kernel 1 ns shorter failed
    with 'GPU utilization 99.3% -> 99.3% (0.0 points lower, threshold 0)', naming no change. Such amounts are given
    to two significant digits. busy 500,000,000 -> 499,999,999 ns of a 1 s span: 100 x 1e-9 = 1e-07 points; a step
    of 10,000,000 -> 10,000,001 ns: 100 x 1 / 1e7 = 1e-05 % longer."""
    base = doc([(500_000_000, 1_000_000_000)], steps=[10_000_000])
    head = doc([(499_999_999, 1_000_000_000)], steps=[10_000_001])
    util, step = regression_reasons(compare(base, head), 0)
    assert util == "GPU utilization 50.0% -> 50.0% (1e-07 points lower, threshold 0)"
    assert step == "mean step time 10.000 ms -> 10.000 ms (1e-05% longer, threshold 0%)"
    # at one decimal where that shows the change
    (util,) = regression_reasons(compare(doc([(80, 100)]), doc([(70, 100)])), 0)
    assert util == "GPU utilization 80.0% -> 70.0% (10.0 points lower, threshold 0)"


def test_primary_lost_time_is_compared_only_for_one_cause() -> None:
    """'lost time of the primary cause' compared a memcpy-bound base's loss with a launch-bound head's (the 2-GPU
    Nsight window, 941 ms, against the NCCL trace, 430 ms: 'improved'). Two different primaries: n/a, both named."""
    base, head = doc([(80, 100)], steps=[10]), doc([(80, 100)], steps=[10])
    base["diagnosis"] = {"primary": {"cause": "memcpy", "lost_ns": 900}}
    head["diagnosis"] = {"primary": {"cause": "host_launch_overhead", "lost_ns": 400}}
    row = metric(compare(base, head), "device_mean_primary_lost_ns")
    assert (row["base"], row["head"], row["delta"]) == (900, 400, -500)
    assert row["change"] == "n/a" and row["label"].endswith(": memcpy -> host_launch_overhead")
    # one cause: its loss fell 900 -> 400
    head["diagnosis"] = {"primary": {"cause": "memcpy", "lost_ns": 400}}
    row = metric(compare(base, head), "device_mean_primary_lost_ns")
    assert row["change"] == "improved" and row["label"] == "lost time of the primary cause (device-mean)"


def test_a_long_gpu_model_name_leaves_the_diff_its_tables() -> None:
    """A trace's GPU model name is the trace's text: two of 70,000 characters put into the caveat line pushed the
    markdown past its 60,000-character budget, which cut everything after the verdict (sides, metrics). Each name is
    given as 66 characters, '…', the last 33 (100 in all)."""
    base, head = doc([(80, 100)], steps=[10]), doc([(80, 100)], steps=[10])
    base["devices"][0]["name"], head["devices"][0]["name"] = "A" * 70_000 + "|x", "B" * 70_000
    (line,) = compare(base, head)["caveats"]
    assert f"(BASE {'A' * 66}…{'A' * 31}|x; HEAD {'B' * 66}…{'B' * 33})" in line
    text = render_diff(compare(base, head), "markdown")
    assert "## Metrics" in text and "A&#124;x" in text and len(text) < 5_000
