"""The sections on two threads (tracelens.analyses.schedule): exclusive sections never overlap, the others do,
errors surface as on one thread, shared derived values are computed once, and the document is the same."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from conftest import shared_params

import tracelens
import tracelens.analyses
from tracelens.analyses import (
    BY_KEY,
    EXCLUSIVE_MIN_EVENTS,
    EXCLUSIVE_ORDER,
    EXCLUSIVE_PAIRS,
    SECTIONS,
    columns,
    exclusive_keys,
    run_order,
)
from tracelens.analyses.schedule import run_beside, run_sections, threads_limit, usable_threads

ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    """A compute function that sleeps and records which keys ran at the same time."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.overlaps: set[frozenset[str]] = set()
        self.started: list[str] = []
        self.threads: set[int] = set()

    def __call__(self, key: str) -> str:
        with self.lock:
            self.started.append(key)
            self.threads.add(threading.get_ident())
            self.overlaps.update(frozenset((key, other)) for other in self.running)
            self.running.add(key)
        time.sleep(self.seconds.get(key, 0.01))
        with self.lock:
            self.running.discard(key)
        return key.upper()


def test_one_thread_runs_in_order_on_the_calling_thread() -> None:
    rec = Recorder({})
    assert run_sections(["b", "a", "c"], rec, threads=1) == {"b": "B", "a": "A", "c": "C"}
    assert rec.started == ["b", "a", "c"]
    assert rec.threads == {threading.get_ident()} and not rec.overlaps


def test_exclusive_keys_never_overlap_and_the_others_do() -> None:
    order = ["x1", "x2", "x3", "a", "b", "c", "d"]
    exclusive = {"x1", "x2", "x3"}
    rec = Recorder({"x1": 0.15, "x2": 0.1, "x3": 0.05, "a": 0.05, "b": 0.05, "c": 0.05, "d": 0.05})
    result = run_sections(order, rec, threads=2, exclusive=exclusive)
    assert list(result) == order and result == {k: k.upper() for k in order}
    assert not any(pair <= exclusive for pair in rec.overlaps), rec.overlaps
    # x1 leads; the second thread cannot take x2 or x3 beside it, so it takes the small keys.
    assert rec.started[:2] == ["x1", "a"]
    assert frozenset(("x1", "a")) in rec.overlaps
    assert len(rec.threads) == 2


def test_exclusive_keys_named_as_a_pair_run_at_once_and_no_others() -> None:
    order = ["x1", "x2", "x3", "x4"]
    exclusive = set(order)
    pairs = {frozenset(("x1", "x2")), frozenset(("x1", "x3"))}
    rec = Recorder({"x1": 0.3, "x2": 0.05, "x3": 0.05, "x4": 0.05})
    result = run_sections(order, rec, threads=2, exclusive=exclusive, pairs=pairs)
    assert result == {k: k.upper() for k in order}
    # x2 and then x3 beside x1; x4 pairs with none, so it waits for x1 and runs alone
    assert rec.overlaps == pairs, rec.overlaps
    assert rec.started == ["x1", "x2", "x3", "x4"]


def test_analyze_pairs_only_exclusive_sections_in_its_order() -> None:
    exclusive = {key for key in SECTIONS if BY_KEY[key].exclusive}
    assert set(EXCLUSIVE_ORDER) == exclusive
    assert all(pair <= exclusive and len(pair) == 2 for pair in EXCLUSIVE_PAIRS)
    order = run_order(SECTIONS)
    assert order[: len(EXCLUSIVE_ORDER)] == list(EXCLUSIVE_ORDER)
    assert set(order) == {key for key in SECTIONS if not BY_KEY[key].needs}


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


def test_run_beside_outside_a_run_is_run_sections() -> None:
    rec = Recorder({})
    with threads_limit(1):
        assert run_beside(["b", "a", "c"], rec) == {"b": "B", "a": "A", "c": "C"}
    assert rec.started == ["b", "a", "c"] and rec.threads == {threading.get_ident()}
    meet = threading.Barrier(2, timeout=10)  # two threads where two are usable, as run_sections gives
    with threads_limit(2):
        assert run_beside(["a", "b"], lambda key: meet.wait() >= 0) == {"a": True, "b": True}


def test_run_beside_takes_the_other_worker_only_once_it_is_idle() -> None:
    tasks = [f"t{i}" for i in range(8)]
    ran: dict[str, int] = {}
    small_done = threading.Event()
    other_took_one = threading.Event()
    small_thread: list[int] = []
    big_thread: list[int] = []
    before_small_done: set[int] = set()

    def task(key: str) -> str:
        ran[key] = threading.get_ident()
        if not small_done.is_set():
            before_small_done.add(threading.get_ident())
        elif threading.get_ident() != big_thread[0]:
            other_took_one.set()
        else:  # idle now, the other worker must take a task: this one waits for that (not on timing)
            other_took_one.wait(5)
        time.sleep(0.03)
        return key.upper()

    def compute(key: str) -> object:
        if key == "small":
            small_thread.append(threading.get_ident())
            time.sleep(0.1)
            small_done.set()
            return None
        big_thread.append(threading.get_ident())
        return (run_beside(tasks, task), threading.get_ident())

    with threads_limit(2):
        result = run_sections(["big", "small"], compute, threads=2)
    values, ident = result["big"]  # type: ignore[misc]
    assert ident == big_thread[0]
    assert list(values) == tasks and values == {k: k.upper() for k in tasks}
    assert before_small_done == {ident}  # the other worker took none while busy with its own key
    assert other_took_one.is_set() and set(ran.values()) == {ident, small_thread[0]}  # and some once idle


def test_run_beside_raises_the_error_of_the_first_failing_task_in_order() -> None:
    def task(key: str) -> str:
        if key in ("b", "c"):
            raise ValueError(key)
        return key

    def compute(key: str) -> object:
        return run_beside(["a", "b", "c", "d"], task) if key == "big" else time.sleep(0.05)

    with pytest.raises(ValueError, match="^b$"):
        run_sections(["big", "small"], compute, threads=2)
    assert run_sections(["x"], lambda key: run_beside(["a"], str.upper), threads=2) == {"x": {"a": "A"}}


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


def test_exclusive_sections_are_the_big_ones_and_independent() -> None:
    exclusive = [key for key in SECTIONS if BY_KEY[key].exclusive]
    assert exclusive == [
        "attribution",
        "launch",
        "ranges",
        "memcpy",
        "occupancy",
        "communication",
        "ops",
        "whatif",
    ]
    assert all(not BY_KEY[key].needs for key in exclusive)


def test_exclusive_sections_are_kept_apart_only_on_big_traces() -> None:
    order = run_order(SECTIONS)
    assert exclusive_keys(order, EXCLUSIVE_MIN_EVENTS - 1) == []
    big = exclusive_keys(order, EXCLUSIVE_MIN_EVENTS)
    assert big == list(EXCLUSIVE_ORDER)  # all of them, in their priority
    assert exclusive_keys(["devices", "ranges", "gaps"], EXCLUSIVE_MIN_EVENTS) == ["ranges"]


def _exclusive_passed(monkeypatch: pytest.MonkeyPatch, path: Path) -> tuple[list[str], str]:
    """The exclusive keys analyze hands the scheduler for ``path``, and the document it makes (two threads)."""
    seen: list[list[str]] = []

    def spy(*args: object, exclusive: list[str], **kwargs: object) -> object:
        seen.append(list(exclusive))
        return run_sections(*args, exclusive=exclusive, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(tracelens.analyses, "run_sections", spy)
    document = _document(path, 2)
    return seen[0], document


def test_analyze_keeps_exclusive_sections_apart_from_the_threshold_on() -> None:
    path = ROOT / "fixtures" / "demo.pt.trace.json.gz"
    with pytest.MonkeyPatch.context() as patch:
        small, document = _exclusive_passed(patch, path)
    assert small == []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracelens.analyses, "EXCLUSIVE_MIN_EVENTS", 0)
        kept_apart, document_apart = _exclusive_passed(patch, path)
    # and the diagnosis's work found ahead, which runs only beside the sections after attribution (AHEAD_PAIRS)
    assert set(kept_apart) == set(EXCLUSIVE_ORDER) & set(SECTIONS) | {tracelens.analyses.DIAGNOSIS_AHEAD}
    assert document_apart == document == _document(path, 1)


def _releases_and_document(patch: pytest.MonkeyPatch, path: Path) -> tuple[int, str]:
    """How many times analyze handed freed memory back to the OS for ``path``, and the document it made."""
    calls = []
    patch.setattr(tracelens.analyses, "release_free_memory", lambda: calls.append(1))
    document = _document(path, 2)
    return len(calls), document


def test_freed_memory_goes_back_after_each_section_only_on_big_traces() -> None:
    path = ROOT / "fixtures" / "demo.pt.trace.json.gz"
    with pytest.MonkeyPatch.context() as patch:
        small, document = _releases_and_document(patch, path)
    assert small == 1  # below RELEASE_EACH_MIN_EVENTS: after no section; before them, the read's pages
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracelens.analyses, "RELEASE_EACH_MIN_EVENTS", 0)
        each, document_each = _releases_and_document(patch, path)
    assert each == 1 + len(SECTIONS)
    assert document_each == document
    # where the sections take the read's pages (MID_ARRAYS_MIN_ROWS to RELEASE_EACH_MIN_EVENTS events): no release
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tracelens.analyses, "MID_ARRAYS_MIN_ROWS", 0)
        kept, document_kept = _releases_and_document(patch, path)
    assert kept == 0
    assert document_kept == document


@pytest.mark.parametrize(
    ("events", "kept"),
    [
        (0, False),
        ((1 << 20) - 1, False),
        (1 << 20, True),
        (1_999_999, True),
        (2_000_000, False),
        (10**9, False),
    ],
)
def test_the_read_pages_are_kept_only_in_the_mid_range(events: int, kept: bool) -> None:
    assert tracelens.analyses.keeps_read_pages(events) is kept
