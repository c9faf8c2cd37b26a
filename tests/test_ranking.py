"""The diagnosis's ranking key (diagnosis/ranking.py, docs/analyses.md "Ranking"): lost time and the what-if
replay's predicted gain in one currency, and the critical path on the host in the verdict."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

import tracelens
from tests.conftest import FIXTURES, SHARED_ABSENT_REASON, SHARED_TRACES
from tracelens.analyses.diagnosis import BY_NAME, NONE_THRESHOLD, ranking
from tracelens.report.findings import sentence

PAIRS = FIXTURES / "gpu" / "pairs"
INJECTED = {
    "input": "input_pipeline",
    "launch": "host_launch_overhead",
    "sync": "synchronization",
    "memcpy": "memcpy",
    "occupancy": "low_occupancy",
}


@cache
def _doc(path: str) -> dict[str, Any]:
    return dict(tracelens.analyze(tracelens.load(path)))


def _pair(name: str) -> dict[str, Any]:
    return _doc(str(PAIRS / f"{name}.pt.trace.json.gz"))


# ------------------------------------------------------------------------------ the key, by hand


def _finding(cause: str, lost: int, evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "cause": cause,
        "lost_ns": lost,
        "share": lost / 10_000_000,
        "evidence": evidence or {},
        "fix": None,
    }


def _whatif(steps: int, **remedies: dict[str, Any]) -> dict[str, Any]:
    return {
        "replay_error": {"steps": steps},
        "not_modeled": ["unexplained_idle"],
        "remedies": [{"cause": cause, **r} for cause, r in remedies.items()],
    }


SPAN = 10_000_000  # 10 ms: above ranking.MIN_REPLAY_SPAN_NS


def test_gain_below_lost_time_ranks_by_gain_on_the_step():
    # steps: the step gain share (0.3) × span = 3 ms < 6 ms lost: credited 3 ms
    whatif = _whatif(3, input_pipeline={"gain_share": 0.5, "step_gain_share": 0.3, "predicted_step_ns": 7e6})
    out = ranking.with_gain(_finding("input_pipeline", 6_000_000), BY_NAME["input_pipeline"], whatif, SPAN)
    assert (out["predicted_gain_ns"], out["gain_basis"], out["predicted_step_ns"]) == (3_000_000, "step", 7e6)
    assert (out["rank_ns"], out["rank_share"], out["gain_reason"]) == (3_000_000, 0.3, None)


def test_gain_above_lost_time_is_capped_by_it():
    # no steps: span gain 0.9 × 10 ms = 9 ms, but the cause owns 2 ms of idle: credited 2 ms
    whatif = _whatif(
        0, host_launch_overhead={"gain_share": 0.9, "step_gain_share": None, "predicted_step_ns": None}
    )
    out = ranking.with_gain(
        _finding("host_launch_overhead", 2_000_000), BY_NAME["host_launch_overhead"], whatif, SPAN
    )
    assert (out["predicted_gain_ns"], out["gain_basis"], out["rank_ns"]) == (9_000_000, "span", 2_000_000)


def test_a_gain_above_lost_time_says_which_figure_ranks_it():
    """The finding printed the replay's 90% beside a cause that loses 20% (the rtx3080 Nsight trace: "2.6%" lost,
    "saves 92.4% of the span"; a serving trace: a 0.0% cause, "saves 94.5%") as if the 90% ranked it: it says
    that its lost time, the smaller figure, ranks it."""
    whatif = _whatif(
        0, host_launch_overhead={"gain_share": 0.9, "step_gain_share": None, "predicted_step_ns": None}
    )
    out = ranking.with_gain(
        _finding("host_launch_overhead", 2_000_000), BY_NAME["host_launch_overhead"], whatif, SPAN
    )
    diagnosis = {"span_ns": SPAN}
    assert sentence(out, diagnosis).endswith(
        "Replay: fixing it saves 90.0% of the span, more than its own lost time (20.0% of the span), which ranks it."
    )
    # A gain within the lost time ranks the cause: said as before.
    whatif = _whatif(3, input_pipeline={"gain_share": 0.5, "step_gain_share": 0.3, "predicted_step_ns": 7e6})
    out = ranking.with_gain(_finding("input_pipeline", 6_000_000), BY_NAME["input_pipeline"], whatif, SPAN)
    assert sentence(out, diagnosis).endswith("Replay: fixing it saves 30.0% of the step (to 7 ms).")


def test_a_remedy_that_costs_time_ranks_at_zero_and_a_non_positive_step_falls_back_to_the_span():
    whatif = _whatif(
        2,
        synchronization={"gain_share": -0.1, "step_gain_share": -0.2, "predicted_step_ns": 1.2e6},
        host_launch_overhead={"gain_share": 0.25, "step_gain_share": 42.0, "predicted_step_ns": -6e6},
    )
    sync = ranking.with_gain(_finding("synchronization", 1_000_000), BY_NAME["synchronization"], whatif, SPAN)
    assert (sync["predicted_gain_ns"], sync["rank_ns"]) == (-2_000_000, 0)
    launch = ranking.with_gain(
        _finding("host_launch_overhead", 5_000_000), BY_NAME["host_launch_overhead"], whatif, SPAN
    )
    assert (launch["gain_basis"], launch["predicted_gain_ns"], launch["rank_ns"]) == (
        "span",
        2_500_000,
        2_500_000,
    )


@pytest.mark.parametrize(
    ("cause", "evidence", "whatif", "span", "reason"),
    [
        ("input_pipeline", {}, None, SPAN, "no_replay"),
        ("input_pipeline", {}, {"replay_error": None, "remedies": []}, SPAN, "no_replay"),
        ("input_pipeline", {}, _whatif(0, input_pipeline={"gain_share": 0.0}), 999_999, "short_window"),
        ("unexplained_idle", {"remedy": "untraced"}, _whatif(0), SPAN, "not_modeled"),
        ("input_pipeline", {"remedy": "other"}, _whatif(0), SPAN, "no_change"),
        ("memcpy", {"remedy": "floor"}, _whatif(0, memcpy={"gain_share": 0.0}), SPAN, "other_remedy"),
        ("memcpy", {"remedy": "pin"}, _whatif(0, memcpy={"gain_share": 0.0}), SPAN, None),
        (
            "startup",
            {},
            _whatif(4, startup={"gain_share": 0.05, "step_gain_share": 0.0, "predicted_step_ns": 1e6}),
            SPAN,
            "one_time",
        ),
        (
            "host_launch_overhead",
            {},
            {
                "replay_error": {"steps": 1, "gpu_ops": 61, "unlaunched_gpu_ops": 60},
                "not_modeled": [],
                "remedies": [{"cause": "host_launch_overhead", "gain_share": 0.0, "step_gain_share": 0.0}],
            },
            SPAN,
            "unlaunched",
        ),
    ],
)
def test_causes_ranked_by_lost_time_say_why(cause, evidence, whatif, span, reason):
    out = ranking.with_gain(_finding(cause, 4_000_000, evidence), BY_NAME[cause], whatif, span)
    assert out["gain_reason"] == reason
    assert out["rank_ns"] == (4_000_000 if reason else 0)
    assert out["rank_basis"] == ("estimated" if reason else "predicted")
    if reason == "one_time":  # its prediction is reported, over the span (one-time work is outside the steps)
        assert (out["gain_basis"], out["predicted_gain_ns"], out["predicted_step_ns"]) == (
            "span",
            500_000,
            None,
        )
    if reason in ("no_replay", "short_window", "not_modeled", "no_change", "unlaunched"):
        assert out["predicted_gain_ns"] is None and out["gain_basis"] is None


# ------------------------------------------------------------------------------ on the recorded pairs


@pytest.mark.parametrize("name", sorted(INJECTED))
def test_each_before_trace_ranks_the_injected_cause_first(name):
    diagnosis = _pair(f"{name}_before")["diagnosis"]
    assert diagnosis["causes"][0]["cause"] == diagnosis["primary"]["cause"] == INJECTED[name]
    assert diagnosis["primary"]["rank_share"] > NONE_THRESHOLD


@pytest.mark.parametrize("name", ["launch_before", "memcpy_before", "sync_after"])
def test_rank_key_recomputed_from_the_whatif_section(name):
    # independently of ranking.py: the whatif remedies' shares × the diagnosis span, the minimum with lost_ns
    doc = _pair(name)
    diagnosis, whatif = doc["diagnosis"], doc["whatif"]
    span = diagnosis["span_ns"]
    remedies = {r["cause"]: r for r in whatif["remedies"]}
    for c in diagnosis["causes"]:
        r = remedies.get(c["cause"])
        if c["gain_reason"] is None:
            assert r is not None and whatif["replay_error"]["steps"] > 0
            assert c["predicted_gain_ns"] == round(r["step_gain_share"] * span)
            assert c["rank_ns"] == min(c["lost_ns"], max(c["predicted_gain_ns"], 0))
        else:
            assert c["rank_ns"] == c["lost_ns"]
    keys = [c["rank_ns"] for c in diagnosis["causes"]]
    assert keys == sorted(keys, reverse=True)


def test_a_cause_over_the_threshold_by_lost_time_is_below_it_by_its_predicted_gain():
    # The slower host's sync pair before-run: the idle the attribution gives host_launch_overhead is over 10% of the
    # span; the replay's gain of its remedy is under it: the verdict is `none` (docs/analyses.md, the verdict table)
    diagnosis = _doc(str(PAIRS.parent / "pairs_h200_vm" / "sync_before.pt.trace.json.gz"))["diagnosis"]
    launch = next(c for c in diagnosis["causes"] if c["cause"] == "host_launch_overhead")
    assert launch["share"] > NONE_THRESHOLD > launch["rank_share"]
    assert diagnosis["primary"]["cause"] == "none"
    assert diagnosis["primary"]["evidence"]["largest_share"] == diagnosis["causes"][0]["rank_share"]


def test_sync_after_ranks_the_gaps_before_kernels_the_gpu_had_as_launch_overhead():
    # One synchronize per step, the GPU idles between kernels it already had queued (launched one by one): that idle
    # is launch overhead's (attribution, "Queued"), not the synchronize's; the replay predicts the launch remedy
    # saves over 10% of the step and dropping the synchronize under it (was `none`: the gaps went to the
    # synchronize, whose predicted gain capped its rank, and the launch cause's small lost time capped its own)
    doc = _pair("sync_after")
    diagnosis = doc["diagnosis"]
    gains = {r["cause"]: r["step_gain_share"] for r in doc["whatif"]["remedies"]}
    assert gains["host_launch_overhead"] > NONE_THRESHOLD > gains["synchronization"]
    launch = next(c for c in diagnosis["causes"] if c["cause"] == "host_launch_overhead")
    assert diagnosis["primary"]["cause"] == "host_launch_overhead"
    assert launch["rank_share"] > NONE_THRESHOLD
    assert diagnosis["primary"]["evidence"]["remedy"] == "queued_kernels"
    (device,) = doc["attribution"]["devices"]
    # most of the launch cause is the GPU's gaps before queued kernels, not the thread's launch calls
    assert 2 * device["queued_launch"]["idle_ns"] > device["by_cause"]["launch"] + device["by_cause"]["cpu"]


# ------------------------------------------------------------------------------ the critical path in the verdict


def test_a_critical_path_on_the_host_is_in_the_verdict():
    doc = _pair("launch_before")
    path = doc["whatif"]["critical_path"]
    host = path["ns"]["host"] / path["length_ns"]
    assert host > 0.5
    diagnosis = doc["diagnosis"]
    assert diagnosis["critical_path"] == {"on_host": True, "host_share": pytest.approx(host)}
    text = sentence(diagnosis["primary"], diagnosis)
    assert f"The critical path runs on the host: {100 * host:.1f}% of it." in text
    # only the primary's sentence says it
    assert all("critical path" not in sentence(c, diagnosis) for c in diagnosis["causes"][1:])


def test_a_critical_path_on_the_gpu_is_not():
    doc = _pair("memcpy_before")
    path = doc["whatif"]["critical_path"]
    assert path["ns"]["host"] / path["length_ns"] < 0.5
    diagnosis = doc["diagnosis"]
    assert diagnosis["critical_path"]["on_host"] is False
    assert "critical path" not in sentence(diagnosis["primary"], diagnosis)


def test_the_sentence_gives_the_predicted_step():
    diagnosis = _pair("launch_before")["diagnosis"]
    primary = diagnosis["primary"]
    share = primary["predicted_gain_ns"] / diagnosis["span_ns"]
    assert 0.8 < share < 1.0  # the replay's 90%: the after-trace measured 89.8% (tests/test_pairs.py)
    step_us = primary["predicted_step_ns"] / 1000
    assert f"Replay: fixing it saves {100 * share:.1f}% of the step (to {step_us:.0f} µs)" in sentence(
        primary, diagnosis
    )


def test_no_replay_without_gpu_activity():
    diagnosis = _doc(str(FIXTURES / "templates" / "pytorch_slow-input_cpu.pt.trace.json.gz"))["diagnosis"]
    assert diagnosis["critical_path"] is None
    assert [c["gain_reason"] for c in diagnosis["causes"]] == ["no_replay"]
    assert diagnosis["primary"]["rank_ns"] == 0 and diagnosis["primary"]["gain_reason"] is None


@pytest.mark.shared
def test_memcpy_floor_is_not_ranked_by_the_pinning_model():
    # fastvideo's copies are pinned already: the replay's pinning model gains nothing, the fix is fewer bytes
    path = SHARED_TRACES / "nsys" / "h100x2_fastvideo_window_nsys2026.2.sqlite"
    if not path.exists():
        pytest.skip(SHARED_ABSENT_REASON)
    diagnosis = _doc(str(path))["diagnosis"]
    memcpy = diagnosis["primary"]
    assert memcpy["cause"] == "memcpy" and memcpy["evidence"]["remedy"] == "floor"
    assert memcpy["gain_reason"] == "other_remedy" and memcpy["rank_ns"] == memcpy["lost_ns"]
    assert 0 <= memcpy["predicted_gain_ns"] < 0.001 * memcpy["lost_ns"]


def test_no_replay_figure_for_a_cause_ranked_by_its_lost_time() -> None:
    """Start-up (one_time) and copies whose fix the replay does not model (other_remedy) are ranked by lost time:
    their sentence gives no replay gain, which could contradict it (start-up's fix, profiling after warm-up, gives
    back exactly its lost time), and says they are not predicted and why."""
    from tracelens.report.findings import gain_clause

    diagnosis = {"span_ns": 1000}
    cause = {"cause": "startup", "predicted_gain_ns": 90, "gain_basis": "span", "gain_reason": "one_time"}
    assert gain_clause(cause, diagnosis) == (
        "Not predicted (profiling after warm-up removes exactly that one-time time): ranked by its lost time."
    )
    assert gain_clause({**cause, "gain_reason": "other_remedy"}, diagnosis) == (
        "Not predicted (its fix is not the one the replay models): ranked by its lost time."
    )
    assert (
        gain_clause({**cause, "gain_reason": None}, diagnosis) == "Replay: fixing it saves 9.0% of the span."
    )
    # primary-only verdicts (none, incomplete_trace) carry no ranking: no clause
    assert gain_clause({"cause": "none", **ranking.NO_GAIN}, diagnosis) is None


# ------------------------------------------------------------------------------ predicted vs estimated, by hand

# One trace (times in ns, H200: 132 SMs, 4 blocks of 512 threads per SM = 528 block slots) where a cause whose fix
# the replay applies gains nothing and a cause whose fix the replay cannot apply both occur:
#   L1 cudaLaunchKernel [0, 5_000] -> K1 my_scan_kernel, 2 blocks of 512 threads, [10_000, 1_010_000]
#   aten::my_host_work [5_000, 3_000_000]: the host's own work (framework code)
#   L2 cudaMemcpyAsync [3_000_000, 3_005_000] -> C pinned HtoD copy, 40 MB, [3_010_000, 3_410_000]
#   S cudaDeviceSynchronize [3_006_000, 3_412_000]: waits for C
# - low_occupancy: K1 leaves 130 of 132 SMs empty for 1 ms: lost 1_000_000 x 130 / 132 = 984_848. Its remedy
#   runs K1 at full fill (1_000_000 x 2 / 528 = 3_788 ns), but nothing waits for K1 before the host's 2.995 ms of
#   work ends: the replayed span is unchanged, gain 0. Predicted: ranked at 0, below every other cause.
# - memcpy: C runs with no kernel beside it for 400_000 ns (its lost time), but it is pinned and asynchronous
#   already: the memcpy remedy (pinned, asynchronous copies) finds nothing to change, no whatif.remedies entry.
#   Estimated: ranked by its 400_000 lost, above low_occupancy though it lost less.
PREDICTED_VS_ESTIMATED_ROWS: list[dict[str, Any]] = [
    {
        "kind": "runtime",
        "name": "cudaLaunchKernel",
        "start_ns": 0,
        "end_ns": 5_000,
        "pid": 1,
        "tid": 1,
        "correlation_id": 1,
    },
    {
        "kind": "kernel",
        "name": "my_scan_kernel",
        "start_ns": 10_000,
        "end_ns": 1_010_000,
        "device": 0,
        "stream": 7,
        "pid": 0,
        "correlation_id": 1,
        "grid_x": 2,
        "grid_y": 1,
        "grid_z": 1,
        "block_x": 512,
        "block_y": 1,
        "block_z": 1,
        "registers_per_thread": 32,
        "static_shared_bytes": 0,
    },
    {
        "kind": "cpu_op",
        "name": "aten::my_host_work",
        "start_ns": 5_000,
        "end_ns": 3_000_000,
        "pid": 1,
        "tid": 1,
    },
    {
        "kind": "runtime",
        "name": "cudaMemcpyAsync",
        "start_ns": 3_000_000,
        "end_ns": 3_005_000,
        "pid": 1,
        "tid": 1,
        "correlation_id": 2,
    },
    {
        "kind": "memcpy",
        "name": "Memcpy HtoD (Pinned -> Device)",
        "start_ns": 3_010_000,
        "end_ns": 3_410_000,
        "device": 0,
        "stream": 7,
        "pid": 0,
        "correlation_id": 2,
        "bytes": 40_000_000,
        "copy_kind": "HtoD",
        "src_kind": "pinned",
        "dst_kind": "device",
    },
    {
        "kind": "runtime",
        "name": "cudaDeviceSynchronize",
        "start_ns": 3_006_000,
        "end_ns": 3_412_000,
        "pid": 1,
        "tid": 1,
    },
]


def test_applied_without_gain_ranks_last_and_unrepresented_keeps_its_estimate() -> None:
    from tests.test_replay import H200
    from tracelens.trace import Trace

    doc = tracelens.analyze(Trace.from_rows(PREDICTED_VS_ESTIMATED_ROWS, devices=[H200]))
    diagnosis = doc["diagnosis"]
    assert diagnosis["span_ns"] == 3_400_000 >= ranking.MIN_REPLAY_SPAN_NS  # 10_000 -> 3_410_000
    remedies = {r["cause"]: r for r in doc["whatif"]["remedies"]}
    causes = {c["cause"]: c for c in diagnosis["causes"]}

    occupancy = causes["low_occupancy"]
    assert occupancy["lost_ns"] == 1_000_000 * 130 // 132
    assert remedies["low_occupancy"]["gain_ns"] == 0
    assert (occupancy["rank_basis"], occupancy["gain_reason"]) == ("predicted", None)
    assert (occupancy["predicted_gain_ns"], occupancy["rank_ns"]) == (0, 0)

    memcpy = causes["memcpy"]
    assert "memcpy" not in remedies
    assert (memcpy["rank_basis"], memcpy["gain_reason"], memcpy["predicted_gain_ns"]) == (
        "estimated",
        "no_change",
        None,
    )
    assert memcpy["lost_ns"] == memcpy["rank_ns"] == 400_000

    order = [c["cause"] for c in diagnosis["causes"]]
    assert order.index("memcpy") < order.index("low_occupancy") == len(order) - 1
    assert (
        memcpy["lost_ns"] < occupancy["lost_ns"]
    )  # a ranking by lost time alone would put them the other way
    # every cause with a positive key ranks above the zero prediction, estimated or predicted
    assert all(c["rank_ns"] > 0 for c in diagnosis["causes"][:-1])
    # the findings say which is which
    assert sentence(occupancy, diagnosis).endswith(
        "Replay: fixing it saves no time here, so it ranks below every cause that may gain."
    )
    assert sentence(memcpy, diagnosis).endswith(
        "Not predicted (the replay's model of its fix finds nothing of it to change here): "
        "ranked by its lost time."
    )


def _unlaunched_kernels_trace(path: Any) -> Any:
    """A host-bound Kineto trace whose kernels lost their correlation ids (their launch calls keep theirs), as some
    ROCm and GPU-only exports write them. Times (µs), 20 iterations i at t = 1000 + 100 i: aten::mul [t, t+80]
    holding cudaLaunchKernel [t+70, t+75]; its kernel [t+78, t+88] on GPU 0 stream 7, no correlation. One copy
    that keeps its id: cudaMemcpyAsync [3005, 3008] corr 21 -> Memcpy DtoH [3009, 3011] (4 B)."""
    import json

    def host(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args}

    def on_gpu(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
        args = {"device": 0, "stream": 7, **args}
        return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": args}

    events = []
    for i in range(20):
        t = 1000 + 100 * i
        events += [
            host("cpu_op", "aten::mul", t, 80),
            host("cuda_runtime", "cudaLaunchKernel", t + 70, 5, correlation=i + 1),
            on_gpu("kernel", "mul_kernel", t + 78, 10, grid=[1024, 1, 1], block=[256, 1, 1]),
        ]
    events += [
        host("cuda_runtime", "cudaMemcpyAsync", 3005, 3, correlation=21),
        on_gpu("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 3009, 2, correlation=21, bytes=4),
    ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_kernels_without_launch_calls_are_not_ranked_by_a_replay_that_pins_them(tmp_path) -> None:
    # Before: the replay pinned the 20 unlaunched kernels at their recorded starts, "predicted" the launch remedy
    # to save 1.1%, and a 12.7% unexplained_idle was the primary cause of a GPU idle 77% of its span while its host
    # ran aten::mul.
    doc = _doc(str(_unlaunched_kernels_trace(tmp_path / "unlaunched.json")))
    assert doc["whatif"]["replay_error"]["unlaunched_gpu_ops"] == 20
    assert doc["whatif"]["replay_error"]["gpu_ops"] == 21
    diagnosis = doc["diagnosis"]
    assert diagnosis["span_ns"] == 1_933_000 >= ranking.MIN_REPLAY_SPAN_NS  # 1078 -> 3011 µs
    launch = {c["cause"]: c for c in diagnosis["causes"]}["host_launch_overhead"]
    # idle gaps between kernels: [t+88, t+178] for i = 0..18, 90 µs each; the next aten::mul [t+100, t+180]
    # covers 78 µs of each (cudaLaunchKernel [t+170, t+175] inside it: 5 µs launch, 73 µs cpu); the gap before the
    # copy, [2988, 3009], holds cudaMemcpyAsync [3005, 3008]: 3 µs launch
    assert launch["lost_ns"] == 19 * 78_000 + 3_000
    assert (launch["rank_basis"], launch["gain_reason"]) == ("estimated", "unlaunched")
    assert launch["rank_ns"] == launch["lost_ns"] and launch["predicted_gain_ns"] is None
    assert diagnosis["primary"]["cause"] == "host_launch_overhead"
    assert "the replay cannot tie most GPU ops to a launch call" in sentence(launch, diagnosis)
    # 1 of 21 GPU ops matched: no issue rate of the work from it (before: "the host issues GPU work at 3.21x")
    assert doc["launch"]["matched_ops"] == 1
    assert doc["launch"]["rates"]["issue_to_execution"] is None
    assert "the host issues GPU work" not in sentence(launch, diagnosis)
