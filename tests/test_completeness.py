"""diagnosis.completeness: each problem on a hand-built trace (fixtures/completeness/, counts derived by hand in
make_completeness.py), the incomplete_trace verdict and its sentence, the diff gate's exit codes through the
CLI, the readers' record of what the profiler dropped, and the shared traces (counts from the files directly)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES, copy_shared_trace
from tracelens.analyses import analyze
from tracelens.cli import main
from tracelens.ingest.profiler_log import profiler_drops
from tracelens.report import render
from tracelens.report.findings import problem_sentence, sentence

CASES = FIXTURES / "completeness"
SHARED = FIXTURES.parent.parent / "shared" / "traces"
GOOD = FIXTURES / "kineto" / "bare_list.json"  # one launch, one kernel: complete

# fixture -> [(kind, blocking, evidence)], evidence as derived in make_completeness.py (messages left out).
EXPECTED = {
    "launches_without_gpu": [
        (
            "launches_without_gpu_activity",
            True,
            {
                "launch_calls": 4,
                "gpu_ops": 0,
                "after_last_gpu_op": 4,
                "share": 1.0,
                "last_gpu_op_end_ns": None,
                "host_end_ns": 310_000,
                "unmatched_launch_calls": 4,
            },
        )
    ],  # the last launch: 300 + 5 us, 5 us long
    "gpu_stops_early": [
        (
            "launches_without_gpu_activity",
            True,
            {
                "launch_calls": 10,
                "gpu_ops": 4,
                "after_last_gpu_op": 6,
                "share": 0.6,
                "last_gpu_op_end_ns": 38_000,
                "host_end_ns": 95_000,
                "unmatched_launch_calls": 6,
            },
        ),
        (
            "dropped_events",
            False,
            {"dropped_records": None, "collection_stopped_early": True, "message_count": 2},
        ),
    ],
    "gpu_starts_late": [
        (
            "launches_before_gpu_activity",
            True,
            {"launch_calls": 10, "before_first_gpu_op": 6, "share": 0.6, "first_gpu_op_start_ns": 66_000},
        )
    ],
    "kernels_lost": [
        ("kernel_launches_without_kernels", True, {"kernel_launch_calls": 1, "kernels": 0, "gpu_ops": 1})
    ],
    # (before: the GPU read as idle 92% of the span and the idle as the host's; all-negative durations on a real
    # trace read "host_launch_overhead 99.7%")
    "gpu_ops_without_duration": [
        ("gpu_ops_without_duration", True, {"gpu_ops": 4, "zero_length": 3, "share": 0.75})
    ],
    # (before: "GPUs 0" and "Diagnosis: none ... the GPUs are busy most of it": every kernel's device was -1 or
    # 4294967295, so no GPU held them)
    "gpu_ops_without_device": [
        ("gpu_ops_without_device", True, {"gpu_ops": 4, "without_device": 4, "share": 1.0})
    ],
    # (before: "every launch call starts after the last GPU op: the GPU side stops 1 ms early", a lost GPU side)
    "gpu_clock_skew": [
        (
            "gpu_clock_skew",
            True,
            {"matched_gpu_ops": 4, "before_their_call": 4, "share": 1.0, "median_ahead_ns": 992_000},
        )
    ],
    "gpu_without_launches": [
        (
            "gpu_activity_without_launches",
            False,
            {"gpu_ops": 2, "api_calls": 0, "gpu_ops_with_id": 2, "unmatched_gpu_ops": 2, "share": 1.0},
        )
    ],
    "missing_correlation": [
        (
            "missing_correlation_ids",
            False,
            {
                "gpu_ops": 5,
                "gpu_ops_without_id": 5,
                "gpu_share": 1.0,
                "launch_calls": 5,
                "launch_calls_without_id": 0,
                "launch_share": 0.0,
            },
        )
    ],
    "dropped_records": [
        (
            "dropped_events",
            False,
            {"dropped_records": 120, "collection_stopped_early": False, "message_count": 1},
        )
    ],
    "profiler_overhead": [
        (
            "profiler_overhead",
            False,
            {
                "overhead_rows": 1,
                "overhead_ns": 30_000,
                "window_ns": 300_000,
                "window": "gpu",
                "share": 0.1,
                "python_events": 6,
                "python_events_per_gpu_op": 3.0,
            },
        )
    ],
    "cpu_only": [
        ("no_gpu_activity", True, {"host_events": 3, "api_calls": 0, "framework_ops": 2, "annotations": 1})
    ],
}
# What the recorded part gives as primary when nothing blocks (derivations in make_completeness.py).
PRIMARY = {
    "launches_without_gpu": "incomplete_trace",
    "gpu_stops_early": "incomplete_trace",
    "kernels_lost": "incomplete_trace",
    "gpu_ops_without_duration": "incomplete_trace",
    "gpu_ops_without_device": "incomplete_trace",
    "gpu_clock_skew": "incomplete_trace",
    "gpu_starts_late": "incomplete_trace",
    "cpu_only": "incomplete_trace",
    "gpu_without_launches": "unexplained_idle",
}


def _doc(name: str) -> dict:
    return analyze(tracelens.load(CASES / f"{name}.json"))


def test_every_case_is_built_and_every_kind_covered() -> None:
    assert {p.stem for p in CASES.glob("*.json")} == set(EXPECTED)
    from tracelens.analyses.completeness import KINDS

    assert {kind for problems in EXPECTED.values() for kind, _, _ in problems} == set(KINDS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_problems_and_their_counts(name: str) -> None:
    completeness = _doc(name)["diagnosis"]["completeness"]
    got = [
        (p["kind"], p["blocking"], {k: v for k, v in p["evidence"].items() if k != "messages"})
        for p in completeness["problems"]
    ]
    assert got == EXPECTED[name]
    blocking = any(b for _, b, _ in EXPECTED[name])
    assert completeness["answerable"] is not blocking
    assert completeness["complete"] is False
    assert completeness["recorder"] == "pytorch"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_primary_is_incomplete_trace_exactly_when_a_problem_blocks(name: str) -> None:
    diagnosis = _doc(name)["diagnosis"]
    blocking = [kind for kind, b, _ in EXPECTED[name] if b]
    primary = diagnosis["primary"]
    if blocking:
        assert primary["cause"] == "incomplete_trace"
        assert primary["evidence"]["problems"] == blocking
        assert (primary["lost_ns"], primary["share"]) == (0, 0.0)
        assert "incomplete_trace" not in {c["cause"] for c in diagnosis["causes"]}
        if blocking == ["gpu_ops_without_device"]:
            # the GPU side is there: the fix says what is wrong (the device ids), not to record it again
            assert primary["fix"].startswith(
                "The GPU ops are recorded, but their device ids are missing or invalid"
            )
            assert "recording again the same way will not fix it" in primary["fix"]
        else:
            # The fix says how to record the GPU side with the PyTorch profiler.
            assert "ProfilerActivity.CUDA" in primary["fix"]
    else:
        assert primary["cause"] != "incomplete_trace"
    if name in PRIMARY:
        assert primary["cause"] == PRIMARY[name]


def test_the_issue_reproducer_is_never_healthy() -> None:
    # 4 cudaLaunchKernel calls and no kernel: was "Diagnosis: none. No cause loses more than 10% of the span".
    doc = _doc("launches_without_gpu")
    text = render(doc, "terminal")
    assert "Diagnosis: none" not in text
    assert (
        "Diagnosis: incomplete_trace. The trace cannot say why the GPU idles: the trace records 4 launch "
        "calls and no GPU activity: the profiler lost the GPU side." in " ".join(text.split())
    )
    markdown = render(doc, "markdown")
    assert "- **Primary cause:** `incomplete_trace`: this trace cannot answer." in markdown
    assert "- **How to record it:** Record the GPU side" in markdown


def test_partial_loss_sentence_has_its_numbers() -> None:
    diagnosis = _doc("gpu_stops_early")["diagnosis"]
    # 6 of 10 launches after the last GPU op (ends at 38 us); the host's last launch ends at 95 us: 57 us.
    # The recorded part: GPU span [6, 38) us, kernels 2 us each, gaps [8,16), [18,26), [28,36); the launches
    # [10,15), [20,25), [30,35) fall in them: 15 us of launch overhead, 15/32 = 46.9% of the span.
    assert sentence(diagnosis["primary"], diagnosis) == (
        "The trace cannot say why the GPU idles: 6 of 10 launch calls (60.0%) start after the last recorded GPU op "
        "ended: the GPU side stops 57 µs before the host's last launch. What was recorded shows "
        "host_launch_overhead (46.9%)."
    )
    assert [(c["cause"], c["lost_ns"]) for c in diagnosis["causes"]] == [
        ("host_launch_overhead", 15_000),
        ("unexplained_idle", 9_000),
    ]
    dropped = next(p for p in diagnosis["completeness"]["problems"] if p["kind"] == "dropped_events")
    assert problem_sentence(dropped).startswith(
        "The profiler says it lost events: GPU collection stopped early; "
    )


@pytest.mark.parametrize(
    "name", ["missing_correlation", "dropped_records", "profiler_overhead", "gpu_without_launches"]
)
def test_non_blocking_problems_are_caveats(name: str) -> None:
    doc = _doc(name)
    terminal = " ".join(render(doc, "terminal").split())
    markdown = render(doc, "markdown")
    for problem in doc["diagnosis"]["completeness"]["problems"]:
        assert f"caveat: {problem_sentence(problem)}" in terminal
        assert "- **Trace caveat:** " in markdown


def test_overhead_sentence() -> None:
    problem = _doc("profiler_overhead")["diagnosis"]["completeness"]["problems"][0]
    assert problem_sentence(problem) == (
        "The profiler's own work inflates host time: profiler overhead covers 30 µs (10.0%) of the GPU window; "
        "6 Python calls recorded (3.0 per GPU op: a Python tracer such as with_stack=True slows the host)."
    )


# ------------------------------------------------------------------ the diff gate, through the CLI


def _diff(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, dict, list[str]]:
    code = main(["diff", *map(str, args), "-f", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), [line for line in err.splitlines() if line]


def test_gate_fails_when_head_cannot_answer(capsys: pytest.CaptureFixture) -> None:
    head = CASES / "launches_without_gpu.json"
    code, result, err = _diff(capsys, GOOD, head, "--fail-on-regression", "5")
    assert code == 1
    assert err == [
        f"tracelens: inconclusive: HEAD ({head}) cannot answer: 4 launch calls and no GPU activity "
        "recorded (the profiler lost the GPU side) (--allow-inconclusive to pass)"
    ]
    assert result["verdict"] == "inconclusive"
    assert (result["base"]["answerable"], result["head"]["answerable"]) == (True, False)
    assert result["verdict_reasons"][0].startswith(f"HEAD ({head}) cannot answer: ")


def test_gate_fails_when_head_lost_its_kernels(capsys: pytest.CaptureFixture) -> None:
    # copies recorded, kernels launched and none recorded: not a "100% busy" GPU, a trace that cannot answer
    head = CASES / "kernels_lost.json"
    code, result, err = _diff(capsys, GOOD, head, "--fail-on-regression", "5")
    assert code == 1
    assert err == [
        f"tracelens: inconclusive: HEAD ({head}) cannot answer: 1 kernel launch call and no kernel recorded "
        "(the profiler lost the kernels) (--allow-inconclusive to pass)"
    ]
    assert result["verdict"] == "inconclusive"


def test_gate_names_the_base_side_and_partial_loss(capsys: pytest.CaptureFixture) -> None:
    base = CASES / "gpu_stops_early.json"
    code, result, err = _diff(capsys, base, GOOD, "--fail-on-regression", "5")
    assert code == 1
    assert err == [
        f"tracelens: inconclusive: BASE ({base}) cannot answer: 6 of 10 launch calls start after the "
        "last recorded GPU op (the GPU side stops early) (--allow-inconclusive to pass)"
    ]
    assert result["base"]["incomplete_reason"] == (
        "6 of 10 launch calls start after the last recorded GPU op (the GPU side stops early)"
    )


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        # make_completeness.py: kernels 1-3 of 4 have no or a negative dur (read as 0)
        (
            "gpu_ops_without_duration",
            "3 of 4 GPU ops have no duration (a missing or negative dur: their busy time is lost)",
        ),
        # make_completeness.py: the 4 kernels' args.device -1 or 4294967295
        ("gpu_ops_without_device", "4 of 4 GPU ops name no GPU (device id missing or invalid)"),
        # each of the 4 kernels starts 992 us before its launch call began
        (
            "gpu_clock_skew",
            "4 of 4 GPU ops start before the call that launched them began, by 992 µs at the median (the GPU's "
            "clock is not the host's)",
        ),
    ],
)
def test_gate_words_the_newer_blocking_problems(
    capsys: pytest.CaptureFixture, case: str, reason: str
) -> None:
    """The diff named these two by their kind alone ("HEAD (...) cannot answer: gpu_clock_skew")."""
    head = CASES / f"{case}.json"
    code, result, err = _diff(capsys, GOOD, head, "--fail-on-regression", "5")
    assert code == 1
    assert result["head"]["incomplete_reason"] == reason
    assert err == [
        f"tracelens: inconclusive: HEAD ({head}) cannot answer: {reason} (--allow-inconclusive to pass)"
    ]


def test_every_blocking_problem_is_worded_in_the_diff(capsys: pytest.CaptureFixture) -> None:
    """No completeness case that cannot answer is summarised by its bare kind (an identifier with "_")."""
    from tracelens.analyses.completeness import KINDS

    blocked = 0
    for head in sorted(CASES.glob("*.json")):
        code, result, _ = _diff(capsys, GOOD, head)
        reason = result["head"]["incomplete_reason"]
        if reason is not None:
            blocked += 1
            assert not any(kind in reason for kind in KINDS), (head.name, reason)
    # cpu_only, the two GPU sides lost, starts late, kernels lost, no duration, no device, clock skew
    assert blocked == 8


def test_allow_inconclusive_passes_and_no_gate_no_failure(capsys: pytest.CaptureFixture) -> None:
    head = CASES / "launches_without_gpu.json"
    code, result, err = _diff(capsys, GOOD, head, "--fail-on-regression", "5", "--allow-inconclusive")
    assert (code, err) == (0, [])  # utilization is null on HEAD and neither has steps: no criterion applies
    assert result["verdict"] == "inconclusive"
    code, _, err = _diff(capsys, GOOD, head)
    assert (code, err) == (0, [])  # without --fail-on-regression the diff only reports


def test_gate_passes_on_complete_and_caveated_traces(capsys: pytest.CaptureFixture) -> None:
    for base, head in ((GOOD, GOOD), (CASES / "dropped_records.json", CASES / "dropped_records.json")):
        code, result, err = _diff(capsys, base, head, "--fail-on-regression", "5")
        assert (code, err) == (0, [])
        assert result["head"]["answerable"] is True and result["head"]["incomplete_reason"] is None
        assert result["verdict"] == "unchanged"


def test_gate_through_click_runner() -> None:
    from click.testing import CliRunner

    from tracelens.cli import cli
    from tracelens.errors import RegressionError

    head = str(CASES / "launches_without_gpu.json")
    runner = CliRunner()
    failed = runner.invoke(cli, ["diff", str(GOOD), head, "--fail-on-regression", "5"])
    assert isinstance(failed.exception, RegressionError) and failed.exception.exit_code == 1
    assert str(failed.exception).startswith(f"inconclusive: HEAD ({head}) cannot answer: ")
    passed = runner.invoke(
        cli, ["diff", str(GOOD), head, "--fail-on-regression", "5", "--allow-inconclusive"]
    )
    assert passed.exit_code == 0 and passed.exception is None
    assert passed.output.startswith(
        "tracelens diff: inconclusive"
    )  # the terminal diff, the default on stdout
    as_markdown = runner.invoke(
        cli,
        [
            "diff",
            str(GOOD),
            head,
            "--format",
            "markdown",
            "--fail-on-regression",
            "5",
            "--allow-inconclusive",
        ],
    )
    assert as_markdown.exit_code == 0 and "**Verdict: ❔ inconclusive**" in as_markdown.output


def test_a_saved_document_without_completeness_is_judged_by_its_primary(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    doc = json.loads(json.dumps(_doc("launches_without_gpu")))
    del doc["diagnosis"]["completeness"]
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps(doc))
    code, result, err = _diff(capsys, GOOD, saved, "--fail-on-regression", "5")
    assert code == 1 and result["head"]["incomplete_reason"] == "incomplete trace"


# ------------------------------------------------------------------ what the profilers record as lost


def test_profiler_log_lines() -> None:
    counts = (
        "INFO:2024-04-03 18:51:36 1102:1102 CuptiActivityProfiler.cpp:300] Record counts: Out-of-range = 3829, "
        "Blocklisted runtime = 56517, Invalid ext correlations = 0, CPU GPU out-of-order = 0, "
        "Unexpected CUDA events = 0, CUPTI stopped early? = {}"
    )
    assert profiler_drops([counts.format(0), "Tracing complete."]) is None
    assert profiler_drops([counts.format(1)]) == {
        "dropped_records": None,
        "collection_stopped_early": True,
        "messages": [counts.format(1)],
        "message_count": 1,
    }
    got = profiler_drops(
        [
            "Dropped 1,200 activity records",
            "Dropped 5 activity records",
            "2 events were lost",
            "Some events were discarded",
            17,
            None,
        ]
    )
    assert got is not None
    assert (got["dropped_records"], got["collection_stopped_early"], got["message_count"]) == (1207, False, 4)


@pytest.mark.parametrize("engine", ["native", "msgspec"])
def test_both_kineto_engines_read_the_log(engine: str) -> None:
    from tracelens.ingest.kineto import native

    if engine == "native" and native.scanner() is None:
        pytest.skip("native scanner not built")
    drops = tracelens.load(CASES / "gpu_stops_early.json", engine=engine).metadata.extra["profiler_drops"]
    assert (drops["collection_stopped_early"], drops["message_count"], drops["dropped_records"]) == (
        True,
        2,
        None,
    )


@pytest.mark.shared
def test_real_kineto_logs_say_nothing_was_lost() -> None:
    name = SHARED / "pytorch" / "v100_ns_resolution_2024.json.gz"
    if not name.exists():
        pytest.skip("../shared/traces is absent")
    info = json.loads(gzip.decompress(name.read_bytes()))["INFO"]
    assert any("CUPTI stopped early? = 0" in line for line in info)  # the record-counts line is there
    trace = tracelens.load(name)
    assert "profiler_drops" not in trace.metadata.extra


@pytest.mark.shared
def test_nsys_export_without_gpu_tables(tmp_path: Path) -> None:
    # A real export with its GPU tables dropped and one diagnostic added: the launch calls, counted by SQL.
    path = copy_shared_trace(tmp_path, "nsys", "rtx3080_tiny_nsys2026.1.sqlite")
    with sqlite3.connect(path) as conn:
        ((launches,),) = conn.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
            "WHERE s.value LIKE 'cudaLaunchKernel%' OR s.value LIKE 'cudaMemcpy%' OR s.value LIKE 'cudaMemset%'"
        )
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"):
            conn.execute(f"DROP TABLE {table}")
        conn.execute(
            "INSERT INTO DIAGNOSTIC_EVENT (timestamp, timestampType, source, severity, text, globalPid) "
            "VALUES (1, 1, 1, 2, 'CUPTI: 7 records were dropped', 0)"
        )
    assert launches == 3  # two cudaLaunchKernel, one cudaMemcpyAsync
    diagnosis = analyze(tracelens.load(path))["diagnosis"]
    kinds = {p["kind"]: p for p in diagnosis["completeness"]["problems"]}
    assert kinds["launches_without_gpu_activity"]["evidence"]["launch_calls"] == launches
    assert kinds["launches_without_gpu_activity"]["blocking"] is True
    assert kinds["dropped_events"]["evidence"]["dropped_records"] == 7
    assert diagnosis["completeness"]["recorder"] == "nsys"
    assert diagnosis["primary"]["cause"] == "incomplete_trace"
    assert "nsys profile -t cuda" in diagnosis["primary"]["fix"]


@pytest.mark.shared
def test_shared_traces_can_answer_and_their_caveats() -> None:
    if not SHARED.exists():
        pytest.skip("../shared/traces is absent")
    window = SHARED / "nsys" / "h100x2_fastvideo_window_nsys2026.2.sqlite"
    with sqlite3.connect(f"file:{window}?mode=ro", uri=True) as conn:
        # a GPU op matches a call of its own process (CUPTI numbers each process's calls from 1: the window's
        # two processes share some ids, docs/formats/nsys.md)
        ((gpu_ops, unmatched),) = conn.execute(
            "SELECT count(*), sum(NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = "
            "o.c AND (r.globalTid >> 24) & 16777215 = (o.g >> 24) & 16777215)) "
            "FROM (SELECT correlationId AS c, globalPid AS g FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT "
            "correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT correlationId, globalPid "
            "FROM CUPTI_ACTIVITY_KIND_MEMSET) o"
        )
    completeness = analyze(tracelens.load(window))["diagnosis"]["completeness"]
    assert completeness["answerable"] is True
    (problem,) = completeness["problems"]
    assert problem["kind"] == "gpu_activity_without_launches"
    assert (problem["evidence"]["gpu_ops"], problem["evidence"]["unmatched_gpu_ops"]) == (gpu_ops, unmatched)

    bert = SHARED / "pytorch" / "h100_bert_small_inference_torch2.6.json.gz"
    events = json.loads(gzip.decompress(bert.read_bytes()))["traceEvents"]
    python = sum(e.get("cat") == "python_function" and e.get("ph") == "X" for e in events)
    gpu = sum(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X" for e in events)
    completeness = analyze(tracelens.load(bert))["diagnosis"]["completeness"]
    (problem,) = completeness["problems"]
    assert problem["kind"] == "profiler_overhead" and completeness["answerable"] is True
    assert problem["evidence"]["python_events"] == python
    assert problem["evidence"]["python_events_per_gpu_op"] == pytest.approx(python / gpu)
