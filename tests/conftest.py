"""Shared test fixtures: where the real traces live, and the bundled fixtures."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED_TRACES = (ROOT.parent / "shared" / "traces").resolve()


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


def pytest_configure(config: pytest.Config) -> None:
    # Multi-rank runs cache Parquet in the user's cache folder: the suite uses a folder of its own.
    if not os.environ.get("TRACELENS_CACHE_DIR"):
        os.environ["TRACELENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="tracelens-test-cache-")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
