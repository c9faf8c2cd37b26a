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

CACHE_DIRNAME = ".tracelens-cache"  # older versions cached beside the traces; still not counted as a rank
CACHE_ENV = "TRACELENS_CACHE_DIR"
MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1


def user_cache_root() -> Path:
    """Where tracelens keeps its caches: ``$TRACELENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/tracelens``, else
    ``~/.cache/tracelens``. Never the traces' own folder: a user's trace folder gets no files it did not ask for."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracelens"


def default_cache_dir(paths: Sequence[Path]) -> Path:
    """The run's cache folder: ``<user cache>/runs/<hash of the traces' real paths>`` (``user_cache_root``)."""
    real = sorted(os.path.realpath(p) for p in paths)
    # os.fsencode: a path named with bytes that are not UTF-8 hashes as those bytes (str.encode cannot encode it)
    digest = hashlib.sha1(b"\n".join(os.fsencode(p) for p in real)).hexdigest()[:16]
    return user_cache_root() / "runs" / digest


def parquet_name(source: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(source).name)[:80]
    return f"{stem}-{hashlib.sha1(os.fsencode(source)).hexdigest()[:12]}.parquet"


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
    if (
        not isinstance(data, dict)
        or data.get("version") != MANIFEST_VERSION
        or not isinstance(data.get("entries"), dict)
    ):
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
