"""The sections on two threads (tracelens.analyses.schedule): the sections running at once never weigh more than
the budget, every section runs once, errors surface as on one thread, shared derived values are computed once,
and the document is the same."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import shared_params
from hypothesis import given, settings
from hypothesis import strategies as st

import tracelens
from tracelens.analyses import BY_KEY, SECTIONS, columns
from tracelens.analyses.schedule import PAIR_BUDGET, run_sections, usable_threads

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    """A compute function that sleeps and records which keys ran at the same time, and the most the keys
    running at once weighed together."""

    def __init__(self, seconds: dict[str, float], weights: dict[str, float] | None = None) -> None:
        self.seconds = seconds
        self.weights = weights or {}
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()
        self.started: list[str] = []
        self.threads: set[int] = set()
        self.heaviest: list[tuple[float, frozenset[str]]] = []  # (weight, keys) of every set running at once

    def __call__(self, key: str) -> str:
        with self.lock:
            self.started.append(key)
            self.threads.add(threading.get_ident())
            self.overlaps.update(frozenset((key, other)) for other in self.running)
            self.running.add(key)
            self.heaviest.append(
                (sum(self.weights.get(k, 0.0) for k in self.running), frozenset(self.running))
            )
        time.sleep(self.seconds.get(key, 0.01))
        with self.lock:
            self.running.discard(key)
        return key.upper()


def test_one_thread_runs_in_order_on_the_calling_thread() -> None:
    rec = Recorder({})
    assert run_sections(["b", "a", "c"], rec, threads=1) == {"b": "B", "a": "A", "c": "C"}
    assert rec.started == ["b", "a", "c"]
    assert rec.threads == {threading.get_ident()} and not rec.overlaps


def test_heavy_keys_pair_only_within_the_budget_and_the_light_ones_fill_in() -> None:
    order = ["x1", "x2", "x3", "a", "b", "c", "d"]
    weights = {"x1": 40, "x2": 30, "x3": 15, "a": 10, "b": 10, "c": 10, "d": 10}
    rec = Recorder({"x1": 0.3, "x2": 0.1, "x3": 0.05, "a": 0.05, "b": 0.05, "c": 0.05, "d": 0.05}, weights)
    result = run_sections(order, rec, threads=2, weights=weights, budget=60)
    assert list(result) == order and result == {k: k.upper() for k in order}
    assert all(w <= 60 for w, _ in rec.heaviest), rec.heaviest
    # x1 leads; x2 does not fit beside it (70), x3 does (55): the second thread takes x3 first, then the light
    # keys, never x2 while x1 runs.
    assert rec.started[:2] == ["x1", "x3"]
    assert frozenset(("x1", "x3")) in rec.overlaps
    assert frozenset(("x1", "x2")) not in rec.overlaps
    assert len(rec.threads) == 2


def test_a_key_heavier_than_the_budget_runs_alone_and_still_runs() -> None:
    weights = {"big": 100, "a": 1, "b": 1}
    rec = Recorder({"big": 0.1, "a": 0.05, "b": 0.05}, weights)
    result = run_sections(["a", "big", "b"], rec, threads=2, weights=weights, budget=60)
    assert result == {"a": "A", "big": "BIG", "b": "B"}
    assert not any("big" in pair for pair in rec.overlaps), rec.overlaps


def test_keys_without_a_weight_weigh_nothing() -> None:
    meet = threading.Barrier(2, timeout=10)  # a and b must run at once beside the full budget's x
    weights = {"x": 60}
    got = run_sections(["x", "a"], lambda key: meet.wait() >= 0, threads=2, weights=weights, budget=60)
    assert got == {"x": True, "a": True}


@settings(max_examples=25, deadline=None)
@given(
    weights=st.lists(st.integers(0, 80), min_size=1, max_size=8),
    budget=st.integers(10, 100),
    threads=st.integers(1, 3),
)
def test_the_running_keys_never_weigh_more_than_the_budget(weights: list[int], budget: int, threads: int) -> None:
    order = [f"k{i}" for i in range(len(weights))]
    weight = dict(zip(order, map(float, weights), strict=True))
    rec = Recorder({key: 0.002 * (1 + i % 3) for i, key in enumerate(order)}, weight)
    result = run_sections(order, rec, threads=threads, weights=weight, budget=budget)
    assert result == {key: key.upper() for key in order}  # every key, its own value, in order
    assert sorted(rec.started) == sorted(order)  # each ran once
    for total, keys in rec.heaviest:
        assert total <= budget or len(keys) == 1, (total, keys)


def test_two_small_keys_run_at_once() -> None:
    # Each waits for the other: on one thread at a time this would time out.
    meet = threading.Barrier(2, timeout=10)
    assert run_sections(["a", "b"], lambda key: meet.wait() >= 0, threads=2) == {"a": True, "b": True}


def test_the_error_of_the_first_failing_key_in_order_is_raised() -> None:
    started: list[str] = []
    both_failing = threading.Barrier(2, timeout=10)

    def compute(key: str) -> None:
        started.append(key)
        if key in ("a", "b"):
            both_failing.wait()
            if key == "a":
                time.sleep(0.05)  # a fails last, but comes first in order
            raise ValueError(key)

    with pytest.raises(ValueError, match="^a$"):
        run_sections(["a", "b", "c", "d"], compute, threads=2)
    assert sorted(started) == ["a", "b"]  # nothing starts after a failure


def test_usable_threads_is_one_or_two() -> None:
    assert 1 <= usable_threads() <= 2


def test_memo_computes_a_key_once_when_two_threads_ask_at_once() -> None:
    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    calls: list[int] = []
    inside = threading.Event()

    def compute() -> list[int]:
        calls.append(threading.get_ident())
        inside.set()
        time.sleep(0.1)  # the second thread asks while this one computes
        return [1, 2, 3]

    got: list[object] = []

    def ask() -> None:
        got.append(columns.memo(trace, "test-schedule-key", compute))

    first = threading.Thread(target=ask)
    first.start()
    assert inside.wait(10)
    ask()
    first.join()
    assert len(calls) == 1
    assert got[0] is got[1] == [1, 2, 3]


def _document(path: Path, threads: int) -> str:
    return json.dumps(tracelens.analyze(tracelens.load(path), threads=threads), sort_keys=False)


FIXTURES = [ROOT / "fixtures" / "demo.pt.trace.json.gz", *sorted((ROOT / "fixtures").glob("nsys/*.sqlite"))]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_two_threads_give_the_document_of_one(path: Path) -> None:
    assert _document(path, 2) == _document(path, 1)


@pytest.mark.parametrize("path", shared_params("nsys") + shared_params("pytorch") + shared_params("tf"))
def test_two_threads_give_the_document_of_one_on_real_traces(path: Path) -> None:
    assert _document(path, 2) == _document(path, 1)


def test_the_weighted_sections_read_no_other_and_the_budget_keeps_the_biggest_apart() -> None:
    weighted = [key for key in SECTIONS if BY_KEY[key].weight > 0]
    assert all(not BY_KEY[key].needs for key in weighted)  # they run on the two threads
    # The two heaviest (attribution, and occupancy, which runs first) never run together nor beside ops;
    # the what-if replay (175 bytes a point where it runs) runs beside small sections only.
    fits = lambda a, b: BY_KEY[a].weight + BY_KEY[b].weight <= PAIR_BUDGET  # noqa: E731
    assert not fits("attribution", "occupancy") and not fits("occupancy", "ops")
    for big in ("launch", "ranges", "communication", "ops", "whatif"):
        assert not fits("attribution", big) and not fits("whatif", big)
    assert fits("launch", "ranges") and fits("ops", "memcpy")
