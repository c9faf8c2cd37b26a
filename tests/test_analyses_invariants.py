"""Invariants of the gap/step/attribution/launch/sync/range/diagnosis sections on every real trace.

Busy time is recomputed here with a plain sorted sweep over the event table (not tracelens.intervals).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from reference import union_length

import tracelens
from tests.conftest import shared_params
from tracelens.analyses import analyze

MY_SECTIONS = ("gaps", "steps", "attribution", "launch", "sync", "ranges", "diagnosis")
TRACES = (
    shared_params("pytorch", "*.json.gz")
    + shared_params("nsys", "*.sqlite")
    + shared_params("tf", "*.xplane.pb")
)


@cache
def _load(path: Path):
    trace = tracelens.load(path)
    return trace, analyze(trace)


def _sweep_busy(trace) -> dict[int, tuple[int, int, int]]:
    """device -> (busy, first start, last end) by sorting and merging in plain Python."""
    cols = trace.events.select(["kind", "device", "start_ns", "end_ns"]).to_pydict()
    per: dict[int, list[tuple[int, int]]] = {}
    for kind, dev, s, e in zip(cols["kind"], cols["device"], cols["start_ns"], cols["end_ns"], strict=True):
        if kind in ("kernel", "memcpy", "memset") and dev is not None:
            per.setdefault(dev, []).append((s, e))
    out = {}
    for dev, ivs in per.items():
        out[dev] = (union_length(ivs), min(s for s, _ in ivs), max(e for _, e in ivs))
    return out


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_idle_plus_busy_is_span(path):
    trace, doc = _load(path)
    expected = _sweep_busy(trace)
    gaps = {d["device"]: d for d in doc["gaps"]["devices"]}
    assert set(gaps) == set(expected)
    for dev, (busy, first, last) in expected.items():
        g = gaps[dev]
        assert g["busy_ns"] == busy
        assert g["span_ns"] == last - first
        assert g["idle_ns"] + g["busy_ns"] == g["span_ns"]
        assert sum(b["total_ns"] for b in g["histogram"]) == g["idle_ns"]
        assert sum(b["count"] for b in g["histogram"]) == g["gap_count"]
        assert all(0.0 <= u <= 1.0 for u in g["timeline"]["utilization"])


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_attribution_sums_to_idle(path):
    _, doc = _load(path)
    gaps = {d["device"]: d["idle_ns"] for d in doc["gaps"]["devices"]}
    for dev in doc["attribution"]["devices"]:
        assert sum(dev["by_cause"].values()) == dev["idle_ns"] == gaps[dev["device"]]
        assert dev["sync_copy_ns"] <= dev["by_cause"]["sync"]
        for gap in dev["largest"]:
            assert sum(gap["by_cause"].values()) == gap["duration_ns"]
    total = doc["attribution"]["total_by_cause"]
    assert sum(total.values()) == sum(gaps.values())


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_steps_and_ranges_are_consistent(path):
    _, doc = _load(path)
    for step in doc["steps"]["steps"]:
        assert sum(step["host"].values()) == step["duration_ns"]
        for g in step["gpu_busy"]:
            assert 0 <= g["busy_ns"] <= step["duration_ns"]
    for r in doc["ranges"]["ranges"]:
        assert 0 <= r["gpu_idle_ns"] <= r["projected_ns"]
        assert r["instances_with_gpu"] <= r["count"]


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_causes_within_span(path):
    trace, doc = _load(path)
    diag = doc["diagnosis"]
    span = diag["span_ns"]
    assert span >= 0
    for cause in diag["causes"]:
        assert 0 < cause["lost_ns"] <= span, cause["cause"]
        assert 0.0 < cause["share"] <= 1.0
    # ranked by rank_ns: lost time, or the replay's predicted gain of the fix where smaller (diagnosis/ranking.py)
    for cause in diag["causes"]:
        assert 0 <= cause["rank_ns"] <= cause["lost_ns"]
        assert cause["rank_share"] == pytest.approx(cause["rank_ns"] / span)
        assert (cause["rank_ns"] == cause["lost_ns"]) or cause["gain_reason"] is None
    assert [c["rank_ns"] for c in diag["causes"]] == sorted(
        (c["rank_ns"] for c in diag["causes"]), reverse=True
    )
    # The rule (docs/analyses.md): the first cause is primary when its rank_share is above the threshold, or when
    # the GPUs are starved (their busy share of their time, Σ busy / Σ span: GPU-time weighted, below
    # healthy_min_busy) whatever its share; else `none`; `incomplete_trace` (primary-only) overrides both when the
    # trace cannot answer.
    timed = [(busy, last - first) for busy, first, last in _sweep_busy(trace).values() if last > first]
    busy_share = sum(b for b, _ in timed) / sum(s for _, s in timed) if timed else None
    assert diag["busy_share"] == (None if busy_share is None else pytest.approx(busy_share))
    starved = busy_share is not None and busy_share < diag["healthy_min_busy"]
    largest = diag["causes"][0] if diag["causes"] else None
    if not diag["completeness"]["answerable"]:
        assert diag["primary"]["cause"] == "incomplete_trace"
    elif largest is not None and (largest["rank_share"] > diag["threshold"] or starved):
        assert diag["primary"] == largest
    else:
        assert diag["primary"]["cause"] == "none"


def _negatives(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            # stream ids are the producer's (-1 means unknown); a replayed remedy may cost more than it saves
            # (diagnosis.causes[].predicted_gain_ns < 0, docs/json.md)
            if k not in ("stream", "predicted_gain_ns"):
                yield from _negatives(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _negatives(v, f"{path}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        yield path


@pytest.mark.shared
@pytest.mark.parametrize("path", TRACES)
def test_nothing_negative_and_json_clean(path):
    _, doc = _load(path)
    mine = {k: doc[k] for k in MY_SECTIONS}
    assert list(_negatives(mine)) == []
    json.dumps(mine, allow_nan=False)
