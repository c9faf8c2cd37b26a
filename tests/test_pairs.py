"""Before/after pairs recorded on one GPU by fixtures/gpu/record_pairs.py (torch 2.11): the same model work with
and without one cause, on an H200 (fixtures/gpu/pairs, what the replay's models were written against) and on an
H100 (fixtures/gpu/pairs_h100, recorded afterwards: held out), and on a second H200 in a VM with a slower host
(fixtures/gpu/pairs_h200_vm, held out; three known misses). The what-if replay of each "before" trace predicts
the "after" step time; the after-trace and the CUDA events recorded in the same runs (pairs.facts.json) are the
measurement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracelens
from tests.conftest import FIXTURES
from tracelens.analyses.whatif import whatif

RECORDINGS = {
    "h200": FIXTURES / "gpu" / "pairs",
    "h100": FIXTURES / "gpu" / "pairs_h100",
    "h200_vm": FIXTURES / "gpu" / "pairs_h200_vm",
}
CAUSE = {
    "input": "input_pipeline",
    "launch": "host_launch_overhead",
    "sync": "synchronization",
    "memcpy": "memcpy",
    "occupancy": "low_occupancy",
}
# Prediction error against the after-trace, within 15% for every pair. The occupancy pair's 64-block scan speeds
# up 5.7x when split into 512 blocks; the wave-quantized model (64 of 132 SMs x 4 blocks per SM = 528 slots, one
# wave) allows 8.25x for the scan, its floor (64 MiB read at 4.8 TB/s, 14 us) does not bind: the step is
# predicted 2.9% fast (the SM-fill model before it, 2.1x, was 17% slow).
TOLERANCE = {"input": 0.15, "launch": 0.15, "sync": 0.15, "memcpy": 0.15, "occupancy": 0.15}
# Held out on a second H200 (2026-11-27, a VM whose host ran the same script ~1.6x slower): predictions outside the
# tolerance, each a strict xfail (it fails the day the prediction comes within it). docs/analyses.md has the figures.
SYNC_MISS = (
    "+45%: the host ran every op ~30% slower while it synchronized after each product (under the profiler: without "
    "it, fixtures/gpu/probe_wake_up.py sees no slow-down after .item()); the replay keeps each recorded host time, so "
    "dropping the syncs leaves the step host-paced"
)
INPUT_MISS = (
    "+22%: the before-run's GPU work spans 3.7 ms per step against 3.3 ms in the after-run (the same kernels), and "
    "the replay keeps the before-run's times; why they spread out there is not established"
)
MEMCPY_MISS = (
    "+15.2%: the host ops right after each 10 ms blocking pageable copy ran 4-8x slower than the same ops in the "
    "after-run (aten::mm 265 against 31 us, aten::sum 107 against 28 us; the pinned bandwidth is 54-55 GB/s in both; "
    "fixtures/gpu/probe_wake_up.py sees the same without the profiler), and the replay keeps those host times"
)
KNOWN_MISSES = {
    ("sync", "h200_vm"): SYNC_MISS,
    ("input", "h200_vm"): INPUT_MISS,
    ("memcpy", "h200_vm"): MEMCPY_MISS,
}


def _prediction_cases() -> list:
    return [
        pytest.param(name, gpu, marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[name, gpu]))
        if (name, gpu) in KNOWN_MISSES
        else (name, gpu)
        for gpu in sorted(RECORDINGS)
        for name in sorted(CAUSE)
    ]


def _facts(pairs: Path) -> dict:
    return json.loads((pairs / "pairs.facts.json").read_text())["pairs"]


def _steady_ms(entry: dict) -> float:
    """Mean CUDA-event step time over steps 1.. (the first carries the profiler's start)."""
    steps = entry["step_ms_cuda_events"][1:]
    return sum(steps) / len(steps)


@pytest.mark.parametrize("gpu", sorted(RECORDINGS))
@pytest.mark.parametrize("name", sorted(CAUSE))
def test_step_time_matches_cuda_events(name: str, gpu: str) -> None:
    pairs = RECORDINGS[gpu]
    # tracelens's step time on each trace against the CUDA events the recording script took in the same run
    for variant in ("before", "after"):
        error = whatif(tracelens.load(pairs / f"{name}_{variant}.pt.trace.json.gz"))["replay_error"]
        assert error["recorded_step_ns"] / 1e6 == pytest.approx(
            _steady_ms(_facts(pairs)[name][variant]), rel=0.01
        )
        assert abs(error["span_error"]) < 0.001


@pytest.mark.parametrize(("name", "gpu"), _prediction_cases())
def test_prediction_within_tolerance(name: str, gpu: str) -> None:
    pairs = RECORDINGS[gpu]
    before = whatif(tracelens.load(pairs / f"{name}_before.pt.trace.json.gz"))
    after = whatif(tracelens.load(pairs / f"{name}_after.pt.trace.json.gz"))
    remedy = {r["cause"]: r for r in before["remedies"]}[CAUSE[name]]
    measured = after["replay_error"]["recorded_step_ns"]
    assert remedy["predicted_step_ns"] == pytest.approx(measured, rel=TOLERANCE[name])
    # and the remedy for the injected cause is the largest gain the replay finds in the before-trace (listed first)
    assert before["remedies"][0]["cause"] == CAUSE[name]
    assert remedy["predicted_step_ns"] == min(r["predicted_step_ns"] for r in before["remedies"])
