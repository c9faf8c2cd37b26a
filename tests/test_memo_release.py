"""Shared derived values (``derived.memo``) dropped after the last section that reads them: the table of readers
(``analyses.MEMO_READERS``) against the reads analyze makes, a dropped value computed again (and equal), values
released (collected) once dropped, and the document unchanged."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_traces

import tracelens
import tracelens.analyses as analyses
from tracelens.analyses import MEMO_READERS, RECOMPUTED, SECTIONS, derived
from tracelens.analyses.launch import launch_pairs
from tracelens.analyses.schedule import LastReaders

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = [
    ROOT / "fixtures" / "demo.pt.trace.json.gz",
    ROOT / "fixtures" / "pytorch_cpu_train.pt.trace.json.gz",
    *sorted((ROOT / "fixtures").glob("nsys/*.sqlite")),
    *sorted((ROOT / "fixtures").glob("gpu/*.pt.trace.json.gz"))[:3],
    *sorted((ROOT / "fixtures").glob("completeness/*.json"))[:3],
    *sorted((ROOT / "fixtures").glob("templates/*.xplane.pb"))[:1],
    *shared_traces("nsys", "*.sqlite")[:2],
    *shared_traces("pytorch", "*.json.gz")[:3],
]


def test_last_readers_returns_each_value_once_after_its_last_reader() -> None:
    readers = {"pairs": ["a", "b", "z"], "rows": ["a"], "tree": ["c", "d"], "elsewhere": ["x"]}
    last = LastReaders(readers, ["a", "b", "c", "d"])  # z and x are not in this run
    assert last.finished("b") == []
    assert sorted(last.finished("a")) == ["pairs", "rows"]
    assert last.finished("c") == []
    # d is the run's last section: what it was the last reader of stays (nothing is left to run)
    assert last.finished("d") == []


def test_forget_drops_a_value_and_the_next_ask_computes_it_again() -> None:
    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    calls: list[int] = []

    def compute() -> list[int]:
        calls.append(1)
        return [len(calls)]

    assert derived.memo(trace, "test-forget/0", compute) == [1]
    assert derived.memo(trace, "test-forget/0", compute) == [1]  # held: not computed again
    derived.forget(trace, ["test-forget"])  # the family: every key up to "/"
    assert "test-forget/0" not in derived.memo_keys(trace)
    assert derived.memo(trace, "test-forget/0", compute) == [2]
    assert len(calls) == 2


def test_a_value_stored_while_being_forgotten_is_kept_and_right() -> None:
    trace = tracelens.load(ROOT / "fixtures" / "demo.pt.trace.json.gz")
    inside, release = threading.Event(), threading.Event()

    def compute() -> str:
        inside.set()
        assert release.wait(10)
        return "value"

    got: list[str] = []
    asker = threading.Thread(target=lambda: got.append(derived.memo(trace, "test-race", compute)))
    asker.start()
    assert inside.wait(10)
    derived.forget(trace, ["test-race"])  # while it is computed: nothing to drop yet
    release.set()
    asker.join()
    assert got == ["value"]
    assert derived.memo(trace, "test-race", lambda: "other") == "value"


def test_launch_pairs_dropped_after_its_last_reader_are_released_and_recomputed_equal() -> None:
    path = ROOT / "fixtures" / "nsys" / "handmade_nsys2022.sqlite"
    trace = tracelens.load(path)
    held = weakref.ref(launch_pairs(trace))
    # launch reads the pairs, kernels does not and runs after it: the pairs go when launch ends
    doc = tracelens.analyze(trace, sections=["launch", "kernels"], threads=1)
    gc.collect()
    assert held() is None
    assert "launch_pairs" not in derived.memo_keys(trace)
    again = launch_pairs(trace)  # computed again, the same as on a fresh trace
    fresh = launch_pairs(tracelens.load(path))
    for name in ("start", "end", "device", "launch_start", "launch_row", "matched", "correlation_id"):
        assert np.array_equal(again[name], fresh[name]), name
    assert doc["launch"] == tracelens.analyze(tracelens.load(path), sections=["launch"])["launch"]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_the_readers_table_names_every_reader(path: Path, threads: int) -> None:
    """Every section that asks for a listed value is named as its reader (so no value is dropped before a section
    that reads it: none is computed twice), and every listed value computed is dropped once its readers are done,
    except those the last section (diagnosis) reads."""
    trace = tracelens.load(path)
    with derived.recording_reads() as log:
        tracelens.analyze(trace, threads=threads)
    computed = [(section, key) for section, key, new in log if new]
    first = {key: section for section, key in reversed(computed)}
    again = [(s, k) for s, k in computed if first[k] != s or computed.count((s, k)) > 1]
    # computed again only by a section that chose to (RECOMPUTED), once
    assert all(s in RECOMPUTED.get(derived.memo_family(k), ()) for s, k in again), again
    assert len(again) == len(set(again)), again
    for section, key, _ in log:
        family = derived.memo_family(key)
        if family in MEMO_READERS and not key.startswith("test-"):
            assert section in MEMO_READERS[family] | RECOMPUTED.get(family, frozenset()), (section, key)
    held = {derived.memo_family(key) for key in derived.memo_keys(trace)}
    for family in held & set(MEMO_READERS):
        assert "diagnosis" in MEMO_READERS[family] | RECOMPUTED.get(family, frozenset()), family


def test_every_reader_is_a_section() -> None:
    assert all(readers <= set(SECTIONS) for readers in [*MEMO_READERS.values(), *RECOMPUTED.values()])
    assert all(not (RECOMPUTED[family] & MEMO_READERS[family]) for family in RECOMPUTED)


@pytest.mark.parametrize("path", FIXTURES[:4], ids=lambda p: p.name)
def test_dropping_values_leaves_the_document_unchanged(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dropping = json.dumps(tracelens.analyze(tracelens.load(path)))
    monkeypatch.setattr(analyses, "MEMO_READERS", {})
    assert json.dumps(tracelens.analyze(tracelens.load(path))) == dropping
