"""tracelens.preload and the CLI's use of it: the imports done ahead change no document, leave the garbage
collector as they found it, and a failing import is raised where it was before; ``python -m tracelens`` (whose
exit freezes the objects left) writes the same document as the library."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tracelens
from tracelens.cli import main
from tracelens.document import dumps
from tracelens.preload import frozen_imports, imported_ahead

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "demo.pt.trace.json.gz"


@pytest.fixture(autouse=True)
def _collector_restored():
    """Each test leaves the collector as it found it (enabled, nothing frozen), even where it fails."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_imports_then_freezes_within_the_block_only():
    gc.enable()
    with imported_ahead(["json", "tracelens.analyses.gaps"]):
        assert "tracelens.analyses.gaps" in sys.modules
        assert gc.get_freeze_count() > 0  # what was alive on entering is out of the collections
        assert gc.isenabled()  # paused for the imports only
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_a_paused_collector_stays_paused():
    gc.disable()
    with imported_ahead(["json"]):
        assert not gc.isenabled()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_a_failing_import_is_left_to_its_importer():
    gc.enable()
    with imported_ahead(["tracelens.no_such_module_here", "tracelens.analyses.kernels"]):
        assert gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with pytest.raises(ModuleNotFoundError):  # the importer that needs it still gets the error
        __import__("tracelens.no_such_module_here")


def test_an_error_in_the_block_unfreezes():
    gc.enable()
    with pytest.raises(RuntimeError), imported_ahead([]):
        raise RuntimeError("section failed")
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_someone_elses_freeze_is_not_undone():
    gc.freeze()
    before = gc.get_freeze_count()
    with imported_ahead(["json"]):
        pass
    assert gc.get_freeze_count() >= before > 0


def test_each_import_ahead_freezes_what_it_imported_until_the_block_ends():
    gc.enable()
    with frozen_imports() as import_ahead:
        import_ahead(["json"])
        first = gc.get_freeze_count()
        assert first > 0 and gc.isenabled()
        held = [[] for _ in range(100)]  # objects made between the calls are frozen by the next one
        import_ahead([])
        assert gc.get_freeze_count() >= first + len(held)
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_frozen_imports_leave_someone_elses_freeze_and_a_paused_collector():
    gc.freeze()
    before = gc.get_freeze_count()
    gc.disable()
    with frozen_imports() as import_ahead:
        import_ahead(["json"])
        assert not gc.isenabled()
    assert gc.get_freeze_count() >= before > 0 and not gc.isenabled()


def test_an_error_in_a_frozen_imports_block_unfreezes():
    gc.enable()
    with pytest.raises(RuntimeError), frozen_imports() as import_ahead:
        import_ahead(["tracelens.no_such_module_here"])
        raise RuntimeError("read failed")
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_cli_document_is_the_librarys(tmp_path):
    """The CLI (imports ahead, objects frozen while the sections run) writes the library's document, in process
    and as ``python -m tracelens`` to stdout (flushed at the exit, after the exit's freeze)."""
    expected = dumps(tracelens.analyze(tracelens.load(FIXTURE)))
    out = tmp_path / "doc.json"
    assert main(["analyze", "--format", "json", str(FIXTURE), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == expected
    assert gc.get_freeze_count() == 0
    child = subprocess.run(
        [sys.executable, "-m", "tracelens", "analyze", "--format", "json", str(FIXTURE)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(tracelens.__file__).resolve().parent.parent,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout == expected and json.loads(child.stdout)["schema_version"]
