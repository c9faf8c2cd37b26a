"""The JSON goldens again, with every optional C extension turned off: the Kineto scanner (then msgspec reads the
blocks), the SQLite page reader (then SQLite's own queries), the replay solver, the op tree, the kernels' moments, the merge search (and
the Nsight assembly's merge of sorted runs), the array-page cache and the Kineto table's start merge. The goldens are written by the full build, so
each fixture's document must come out the same through the numpy and msgspec paths an install without a C compiler
takes.

The fast-path tests compare each extension with its fallback on generated inputs; this compares whole documents
on the recorded and hand-built traces, the way a user without the extensions meets them. On 2026-11-27 the same
comparison held on ten fresh H100 recordings of the templates (fallbacks there, Python 3.12; extensions here).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import tracelens.analyses.kernels as kernels
import tracelens.analyses.ops.tree as op_tree
import tracelens.ingest.kineto as kineto
import tracelens.ingest.kineto.start_order as kineto_start_order
import tracelens.ingest.nsys.assembly as nsys_assembly
import tracelens.ingest.nsys.pages as nsys_pages
import tracelens.intervals as intervals
import tracelens.memory as memory
import tracelens.replay.engine as replay_engine
from tests.goldens import FIXTURE_TRACES, SHARED, SHARED_NAMES, check_json, document, fixture_name
from tracelens.ingest.kineto.reader import choose_engine

EXTENSION_SLOTS = (
    (kineto, "_kineto_scan"),
    (nsys_pages, "_native"),
    (replay_engine, "_replay_solve"),
    (op_tree, "_compiled"),
    (kernels, "_compiled"),
    (intervals, "_compiled"),
    (nsys_assembly, "_compiled"),
    (memory, "_ARRAY_PAGES"),
    (kineto_start_order, "_compiled"),
)


@pytest.fixture
def without_extensions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for module, name in EXTENSION_SLOTS:
        assert hasattr(module, name), f"{module.__name__}.{name}: the extension's slot was renamed"
        monkeypatch.setattr(module, name, None)
    yield


def test_the_switch_reaches_the_readers(without_extensions: None) -> None:
    """A check that the fallbacks are what runs: the Kineto reader's automatic choice becomes msgspec and the
    Nsight reader declines its page engine."""
    assert choose_engine("auto") == "msgspec"
    assert not nsys_pages.enabled()


@pytest.mark.parametrize("path", FIXTURE_TRACES, ids=[fixture_name(p) for p in FIXTURE_TRACES])
def test_fixture_document_without_extensions(path: Path, without_extensions: None) -> None:
    check_json(fixture_name(path), document(path))


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_NAMES)
def test_shared_document_without_extensions(name: str, without_extensions: None) -> None:
    path = SHARED / name
    if not path.exists():
        pytest.skip("../shared/traces is absent")
    check_json(name, document(path))
