"""Shared test fixtures: where the real traces live, and the bundled fixtures.

Some tests read the real traces in ../shared/traces (``TRACELENS_SHARED_TRACES`` names another folder) and
skip when it is absent. Their skips still count as skipped, but the ``-ra`` summary folds them into one line
(:func:`pytest_runtest_makereport`) instead of one line per test."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

# Property tests draw the same examples on every run, so a CI failure is reproducible and never a lucky draw;
# TRACELENS_HYPOTHESIS_RANDOM=1 draws new ones (how the examples pinned with @example were found).
hypothesis_settings.register_profile(
    "tracelens", derandomize=not os.environ.get("TRACELENS_HYPOTHESIS_RANDOM"), database=None
)
hypothesis_settings.load_profile("tracelens")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED_TRACES = Path(os.environ.get("TRACELENS_SHARED_TRACES") or ROOT.parent / "shared" / "traces").resolve()
# The reasons tests give for skipping without the real traces ("../shared/traces/nsys not present", ...).
_SHARED_ABSENT = re.compile(r"\.\./shared/traces(/[\w.\-/]+)? (not present|is absent)")
SHARED_ABSENT_REASON = (
    f"real traces not present in {SHARED_TRACES} (clone ../shared beside the repository or set "
    "TRACELENS_SHARED_TRACES): the tests that read them are skipped"
)


def fixture_path(name: str) -> Path:
    """The bundled fixture ``name`` (a path under fixtures/); the calling test is skipped where it is absent."""
    path = FIXTURES / name
    if not path.exists():
        pytest.skip(f"{name} absent")
    return path


def shared_traces(subdir: str, *patterns: str) -> list[Path]:
    """Real traces under ../shared/traces/<subdir> (empty when ../shared is absent)."""
    folder = SHARED_TRACES / subdir
    if not folder.is_dir():
        return []
    found: set[Path] = set()
    for pattern in patterns or ("*",):
        found.update(p for p in folder.glob(pattern) if p.is_file() and p.suffix != ".md")
    return sorted(found)


def shared_params(subdir: str, *patterns: str) -> list:
    """pytest params over the real traces, or one skipped param when ../shared is absent."""
    paths = shared_traces(subdir, *patterns)
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"../shared/traces/{subdir} not present"))]
    return [pytest.param(p, id=p.name) for p in paths]


def copy_shared_trace(tmp_path: Path, subdir: str, name: str) -> Path:
    """A writable copy of one real trace in tmp_path, for tests that damage or edit it (skips when absent)."""
    paths = shared_traces(subdir, name)
    if not paths:
        pytest.skip(f"../shared/traces/{subdir} not present")
    dst = tmp_path / name
    shutil.copyfile(paths[0], dst)
    os.chmod(dst, stat.S_IRUSR | stat.S_IWUSR)
    return dst


_OWN_CACHE: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # Multi-rank runs cache Parquet in the user's cache folder: the suite uses a folder of its own.
    if not os.environ.get("TRACELENS_CACHE_DIR"):
        _OWN_CACHE.append(tempfile.mkdtemp(prefix="tracelens-test-cache-"))
        os.environ["TRACELENS_CACHE_DIR"] = _OWN_CACHE[0]


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _OWN_CACHE:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A skip for want of the real traces gets one location and reason, so ``-ra`` shows them as one line
    (``SKIPPED [99] tests/conftest.py: real traces not present ...``); each still counts as skipped."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        if _SHARED_ABSENT.search(str(report.longrepr[2])):
            report.longrepr = (__file__, None, f"Skipped: {SHARED_ABSENT_REASON}")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
