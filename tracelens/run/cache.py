"""The run's Parquet cache: where it lies, the manifest of cached traces, and when an entry is reused."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..trace import TABLE_SCHEMA_VERSION

CACHE_DIRNAME = ".tracelens-cache"
MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1


def default_cache_dir(paths: Sequence[Path]) -> Path:
    """``<folder>/.tracelens-cache`` when every trace lies in that one folder and it is writable, else a
    per-run folder in the user's cache (traces scattered over folders, or a read-only folder)."""
    real = sorted(os.path.realpath(p) for p in paths)
    parents = {os.path.dirname(p) for p in real}
    if len(parents) == 1:
        folder = Path(parents.pop())
        # a folder marked read-only is left alone even by root (for whom os.access says yes to everything)
        if os.access(folder, os.W_OK) and folder.stat().st_mode & 0o222:
            return folder / CACHE_DIRNAME
    user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha1("\n".join(real).encode()).hexdigest()[:16]
    return user_cache / "tracelens" / "runs" / digest


def parquet_name(source: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(source).name)[:80]
    return f"{stem}-{hashlib.sha1(source.encode()).hexdigest()[:12]}.parquet"


def source_stat(path: Path) -> tuple[int, int]:
    """(size, mtime_ns) of a trace file; for a directory (TF logdir) the sum/max over its files."""
    if path.is_dir():
        stats = [f.stat() for f in path.rglob("*") if f.is_file()]
        return sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats), default=0)
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def read_manifest(cache_dir: Path) -> dict[str, Any]:
    """The cache manifest (``{"version", "entries": {source: entry}}``); empty when absent or unreadable."""
    try:
        data = json.loads((cache_dir / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": MANIFEST_VERSION, "entries": {}}
    if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION or not isinstance(data.get("entries"), dict):
        return {"version": MANIFEST_VERSION, "entries": {}}
    return data


def write_manifest(cache_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = cache_dir / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, cache_dir / MANIFEST_NAME)


def cache_entry_valid(entry: dict[str, Any] | None, size: int, mtime_ns: int, cache_dir: Path) -> bool:
    return bool(
        entry
        and entry.get("size") == size
        and entry.get("mtime_ns") == mtime_ns
        and entry.get("table_schema_version") == TABLE_SCHEMA_VERSION
        and (cache_dir / str(entry.get("parquet"))).is_file()
    )
