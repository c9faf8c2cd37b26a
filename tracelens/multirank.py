"""Many traces of one run: per-rank analysis in parallel, a Parquet cache, and cross-rank analyses.

Two layers (definitions in ``docs/multirank.md``):

1. Per trace, in a worker process (local pool or Dask): read the trace (or its cached Parquet), write the
   Parquet cache, run :func:`tracelens.analyze`, and hand back a *small* summary (never the table), so the
   parent's memory stays bounded by one trace, not the sum.
2. Across ranks, in the parent: DuckDB queries over the cached Parquet files (only the columns needed, rows
   filtered to steps and NCCL kernels), giving small rank x step and rank x collective tables; then
   straggler lateness, collective wait vs transfer, and an imbalance verdict with numpy.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import InputError, TracelensError, UsageError
from .trace import TABLE_SCHEMA_VERSION, Trace

CACHE_DIRNAME = ".tracelens-cache"
MANIFEST_NAME = "manifest.json"
MANIFEST_VERSION = 1
RUN_SCHEMA_VERSION = "1.0"

# Files a run directory may hold, one trace each (a TF logdir is one trace, read by the xplane reader).
RUN_FILE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".parquet")
TRACE_FILE_SUFFIXES = (*RUN_FILE_SUFFIXES, ".nsys-rep", ".qdrep", ".xplane.pb")

# A straggler is called significant when its mean lateness reaches this share of the reference interval
# (the median step time, or the median interval between collectives).
STRAGGLER_SIGNIFICANT_FRACTION = 0.05
# The run is called imbalanced when the time lost to imbalance reaches this share of the summed GPU spans.
IMBALANCE_SIGNIFICANT_FRACTION = 0.05

# Clocks that agree across processes and machines (NTP-synced wall clock): ranks on them align as recorded.
COMPARABLE_CLOCKS = frozenset({"unix"})

_RANK_PATTERNS = (
    re.compile(r"(?<![a-z])rank[-_]?(\d+)", re.IGNORECASE),
    re.compile(r"[-_](\d+)\.(?:pt\.)?(?:trace\.)?(?:json|sqlite|parquet|xplane|nsys)", re.IGNORECASE),
    re.compile(r"[-_](\d+)\."),
)


# ----------------------------------------------------------------------------------------------- inputs


def _is_trace_file(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(TRACE_FILE_SUFFIXES)


def _run_files(directory: Path) -> list[Path]:
    return [f for f in directory.iterdir()
            if f.is_file() and not f.name.startswith(".") and f.name.lower().endswith(RUN_FILE_SUFFIXES)]


def is_run_directory(path: str | os.PathLike[str]) -> bool:
    """A directory holding several trace files (Kineto json/json.gz, nsys sqlite, tracelens parquet) at its
    top level, one per rank; not a TF logdir (xplanes of one run, which the xplane reader takes)."""
    p = Path(path)
    if not p.is_dir():
        return False
    if any(p.rglob("*.xplane.pb")):
        return False
    return len(_run_files(p)) >= 2


def _natural_key(path: Path) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Traces named by ``paths``: files as given, run directories as their trace files, globs expanded
    (shells on some platforms do not). Sorted naturally (rank2 before rank10) within each argument."""
    found: list[Path] = []
    for raw in paths:
        text = str(raw)
        p = Path(text)
        if not p.exists() and glob.has_magic(text):
            matches = [Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True)]
            matches = [m for m in matches if _is_trace_file(m) or (m.is_dir() and not m.name.startswith("."))]
            if not matches:
                raise InputError("no trace file matches this pattern", path=text)
            for m in sorted(matches, key=_natural_key):
                found.extend(sorted(_run_files(m), key=_natural_key) if is_run_directory(m) else [m])
        elif p.is_dir() and is_run_directory(p):
            found.extend(sorted(_run_files(p), key=_natural_key))
        else:
            found.append(p)  # a file or a TF logdir; the reader says when it is neither
    unique: dict[str, Path] = {}
    for f in found:
        unique.setdefault(os.path.realpath(f), f)
    return list(unique.values())


def rank_from_name(path: str | os.PathLike[str]) -> int | None:
    """The rank a file name states: ``rank-3``, ``rank_3``, ``rank3`` or a trailing ``_3.``/``-3.``."""
    name = Path(path).name
    for pattern in _RANK_PATTERNS:
        match = pattern.search(name)
        if match:
            return int(match.group(1))
    return None


def resolve_ranks(metadata_ranks: Sequence[int | None], paths: Sequence[Path]) -> tuple[list[int], list[str]]:
    """One distinct rank per trace: the trace's own (``distributedInfo``), else its file name's, else order.

    When the stated ranks are missing or collide, every trace is numbered by its position instead (a
    partial numbering would risk two traces claiming one rank) and a warning says so.
    """
    candidates = [meta if meta is not None else rank_from_name(path) for meta, path in zip(metadata_ranks, paths, strict=True)]
    if all(c is not None for c in candidates) and len(set(candidates)) == len(candidates):
        return [int(c) for c in candidates], []  # type: ignore[arg-type]
    known = [c for c in candidates if c is not None]
    why = "collide" if len(set(known)) < len(known) else "are missing for some traces"
    warning = f"ranks stated by the traces or their names {why}; numbered by position instead"
    return list(range(len(paths))), [warning]


# ------------------------------------------------------------------------------------------------ cache


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


def _parquet_name(source: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(source).name)[:80]
    return f"{stem}-{hashlib.sha1(source.encode()).hexdigest()[:12]}.parquet"


def _source_stat(path: Path) -> tuple[int, int]:
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


def _write_manifest(cache_dir: Path, manifest: dict[str, Any]) -> None:
    tmp = cache_dir / f".{MANIFEST_NAME}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, cache_dir / MANIFEST_NAME)


def _cache_entry_valid(entry: dict[str, Any] | None, size: int, mtime_ns: int, cache_dir: Path) -> bool:
    return bool(
        entry
        and entry.get("size") == size
        and entry.get("mtime_ns") == mtime_ns
        and entry.get("table_schema_version") == TABLE_SCHEMA_VERSION
        and (cache_dir / str(entry.get("parquet"))).is_file()
    )


# --------------------------------------------------------------------------------------- per-trace work



def ingest_and_summarize(source: str, parquet_path: str, reuse: bool) -> dict[str, Any]:
    """Worker task: read ``source`` (or its cached Parquet when ``reuse``), cache it, analyze it.

    Returns a small JSON-able summary; the full analysis document goes to ``<parquet>.doc.json`` so the
    parent can read back the one it needs. Errors come back as ``{"ok": False, "error": one line}``.
    """
    try:
        if reuse:
            from .ingest.parquet import read as read_parquet

            trace = read_parquet(Path(parquet_path))
        else:
            from . import load

            trace = load(source)
            tmp = f"{parquet_path}.{os.getpid()}.tmp"
            trace.save(tmp, cache=True)
            os.replace(tmp, parquet_path)
        from .analyses import analyze

        doc = analyze(trace)
        doc_path = f"{parquet_path}.doc.json"
        Path(doc_path).write_text(json.dumps(doc, default=str), encoding="utf-8")
        meta = trace.metadata
        return {
            "ok": True,
            "source": source,
            "parquet": parquet_path,
            "doc_path": doc_path,
            "reused": reuse,
            "event_count": trace.events.num_rows,
            "metadata": {
                "rank": meta.rank, "world_size": meta.world_size, "clock": meta.clock,
                "time_origin_ns": int(meta.time_origin_ns), "source_format": meta.source_format,
                "framework": meta.framework, "producer": meta.producer,
                "producer_version": meta.producer_version, "warnings": list(meta.warnings),
            },
            # only what the run document shows per rank travels back (a few hundred bytes per GPU); the
            # full document, whose step and gap lists grow with the trace, stays on disk
            "devices": doc.get("devices") or [],
            "idle_by_cause": doc["summary"]["idle_by_cause"],
            "worker_peak_rss_bytes": _peak_rss_bytes(),
        }
    except TracelensError as err:
        return {"ok": False, "source": source, "error": str(err)}
    except MemoryError:
        return {"ok": False, "source": source, "error": f"{source}: out of memory while reading"}
    except Exception as err:  # one rank's bug must not sink the run; it is reported as that rank's failure
        return {"ok": False, "source": source, "error": f"{source}: internal error: {type(err).__name__}: {err}"}


def _peak_rss_bytes() -> int | None:
    """This process's resident-set high-water mark (Linux/macOS), for the memory-bound claim."""
    try:
        import resource
        import sys
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _one_thread() -> None:
    """Worker initializer: one compute thread per worker process. The pool already runs one worker per
    core; Arrow's own thread pool in each (sized to all cores) would oversubscribe the CPUs."""
    os.environ["OMP_NUM_THREADS"] = "1"
    import pyarrow

    pyarrow.set_cpu_count(1)


Task = tuple[str, str, bool]


def _run_inline(tasks: list[Task], on_done: Callable[[], None]) -> list[dict[str, Any]]:
    results = []
    for task in tasks:
        results.append(ingest_and_summarize(*task))
        on_done()
    return results


def _run_local(tasks: list[Task], workers: int, on_done: Callable[[], None]) -> list[dict[str, Any]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # forkserver: a child forked from the parent would inherit its threads (Arrow, DuckDB pools) in unknown
    # states; the server is a fresh process that imports the heavy modules once, then forks each worker.
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        from .analyses import SECTIONS
        from .ingest import READERS

        context.set_forkserver_preload(["tracelens.multirank", *(f"tracelens.analyses.{n}" for n in SECTIONS),
                                        *(f"tracelens.ingest.{m}" for m in set(READERS.values()))])
    else:
        context = multiprocessing.get_context("spawn")
    results: dict[int, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_one_thread) as pool:
        futures = {pool.submit(ingest_and_summarize, *task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except BrokenProcessPool:  # a worker was killed (out of memory): name the traces left
                results[i] = {"ok": False, "source": tasks[i][0],
                              "error": f"{tasks[i][0]}: worker process died (killed, or out of memory)"}
            on_done()
    return [results[i] for i in range(len(tasks))]


def _run_dask(tasks: list[Task], workers: int, scheduler: str | None,
              on_done: Callable[[], None]) -> list[dict[str, Any]]:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError("--engine dask needs dask.distributed: pip install 'tracelens[distributed]'") from None
    address = scheduler or os.environ.get("TRACELENS_DASK_SCHEDULER")
    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        futures = client.map(ingest_and_summarize, *zip(*tasks, strict=True), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: dict[int, dict[str, Any]] = {}
        for future in as_completed(futures):
            i = index[future.key]
            try:
                results[i] = future.result()
            except Exception as err:  # the worker died or the task could not run
                results[i] = {"ok": False, "source": tasks[i][0],
                              "error": f"{tasks[i][0]}: Dask task failed: {type(err).__name__}: {err}"}
            on_done()
        return [results[i] for i in range(len(tasks))]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# --------------------------------------------------------------------------------- cross-rank queries


class RunEvents:
    """One DuckDB connection with the view ``events``: every rank's cached events joined to its rank and
    clock origin. The cross-rank queries below run on it one after another (one connection, one view)."""

    def __init__(self, ranks: pd.DataFrame) -> None:
        import duckdb

        self.connection = duckdb.connect(":memory:")
        self.connection.execute("SET threads TO 2")
        self.connection.register("rank_map", ranks[["parquet", "rank", "origin_ns"]])
        # a view cannot take a bound parameter: the file list goes in as SQL string literals
        files = ", ".join("'" + f.replace("'", "''") + "'" for f in ranks["parquet"])
        self.connection.execute(
            "CREATE TEMP VIEW events AS SELECT e.*, m.rank, m.origin_ns FROM "
            f"read_parquet([{files}], filename = true) e JOIN rank_map m ON e.filename = m.parquet"
        )

    def __enter__(self) -> RunEvents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.connection.close()

    def query(self, sql: str) -> pd.DataFrame:
        return self.connection.execute(sql).df()


def query_steps(events: RunEvents) -> pd.DataFrame:
    """One row per (rank, step): first start and last end of the rank's ``step`` rows, on its own clock
    (``*_abs_ns`` = origin + table time) as integers."""
    return events.query("""
        SELECT rank, step, min(start_ns) + any_value(origin_ns) AS start_abs_ns,
               max(end_ns) + any_value(origin_ns) AS end_abs_ns
        FROM events WHERE kind = 'step' AND step IS NOT NULL
        GROUP BY rank, step ORDER BY rank, step""")


def query_collectives(events: RunEvents) -> pd.DataFrame:
    """One row per NCCL kernel (``nccl`` in the name, any case): rank, device (-1 when unknown), the
    collective it belongs to (``collective``: a dense id of (name, ordinal among same-named kernels on that
    rank's device)), absolute start and duration. Names stay in DuckDB: only integers come back."""
    return events.query("""
        WITH nccl AS (
            SELECT rank, coalesce(device, -1) AS device, name, start_ns + origin_ns AS start_abs_ns,
                   end_ns - start_ns AS dur_ns,
                   row_number() OVER (PARTITION BY rank, device, name ORDER BY start_ns, end_ns) AS ordinal
            FROM events WHERE kind = 'kernel' AND lower(name) LIKE '%nccl%')
        SELECT rank, device, dense_rank() OVER (ORDER BY name, ordinal) AS collective, start_abs_ns, dur_ns
        FROM nccl""")


def query_gpu_work(events: RunEvents) -> pd.DataFrame:
    """Per (rank, device): summed duration of kernels, copies and memsets other than NCCL kernels."""
    return events.query("""
        SELECT rank, device, sum(end_ns - start_ns) AS work_ns, count(*) AS ops
        FROM events
        WHERE kind IN ('kernel', 'memcpy', 'memset') AND device IS NOT NULL
          AND NOT (kind = 'kernel' AND lower(coalesce(name, '')) LIKE '%nccl%')
        GROUP BY rank, device ORDER BY rank, device""")


# ------------------------------------------------------------------------------------ cross-rank math


def leave_one_out_median(matrix: np.ndarray) -> np.ndarray:
    """For each cell, the median of the *other* non-NaN cells of its column (NaN when fewer than one other).

    Vectorized: each column is sorted once; removing the cell at sorted position p shifts the indices of
    the remaining values at or after p by one.
    """
    values = np.asarray(matrix, dtype=np.float64)
    n_rows, n_cols = values.shape
    if n_rows == 0 or n_cols == 0:
        return np.full(values.shape, np.nan)
    order = np.argsort(values, axis=0, kind="stable")  # NaN sorts last
    ordered = np.take_along_axis(values, order, axis=0)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.broadcast_to(np.arange(n_rows)[:, None], order.shape).copy(), axis=0)
    valid = ~np.isnan(values)
    remaining = valid.sum(axis=0) - 1  # values left once the cell itself is removed
    low = np.broadcast_to((remaining - 1) // 2, values.shape)
    high = np.broadcast_to(remaining // 2, values.shape)

    def remaining_value(j: np.ndarray) -> np.ndarray:
        index = np.clip(j + (j >= position), 0, n_rows - 1)
        return np.take_along_axis(ordered, index, axis=0)

    median = (remaining_value(low) + remaining_value(high)) / 2.0
    return np.where(valid & (remaining >= 1)[None, :], median, np.nan)


def lateness(starts: pd.DataFrame) -> pd.DataFrame:
    """``starts``: rows = participants, columns = aligned events (steps or collectives), cells = start ns
    (NaN when absent). Returns each cell's lateness = start - median start of the other participants."""
    values = starts.to_numpy(dtype=np.float64)
    return pd.DataFrame(values - leave_one_out_median(values), index=starts.index, columns=starts.columns)


def _straggler(late: pd.DataFrame, reference_ns: float | None, basis: str, alignment: str) -> dict[str, Any]:
    """Mean/max lateness per participant and the participant with the largest mean lateness."""
    compared = late.columns[late.notna().sum(axis=0) >= 2]
    late = late[compared]
    per = pd.DataFrame({
        "mean_lateness_ns": late.mean(axis=1, skipna=True),
        "max_lateness_ns": late.max(axis=1, skipna=True),
        "compared": late.notna().sum(axis=1),
    }).dropna(subset=["mean_lateness_ns"])
    result: dict[str, Any] = {"basis": basis, "alignment": alignment, "compared": int(len(compared)),
                              "reference_ns": _int_or_none(reference_ns), "per_rank": [], "straggler": None}
    if per.empty:
        return result
    for key, row in per.iterrows():
        rank, device = key if isinstance(key, tuple) else (key, None)
        result["per_rank"].append({"rank": int(rank), "device": _int_or_none(device),
                                   "mean_lateness_ns": int(round(row.mean_lateness_ns)),
                                   "max_lateness_ns": int(round(row.max_lateness_ns)),
                                   "compared": int(row.compared)})
    # ties go to the lowest rank: idxmax returns the first maximum and the index is sorted
    worst = per["mean_lateness_ns"].idxmax()
    rank, device = worst if isinstance(worst, tuple) else (worst, None)
    delay = float(per.loc[worst, "mean_lateness_ns"])
    result["straggler"] = {
        "rank": int(rank), "device": _int_or_none(device), "delay_ns": int(round(delay)),
        "max_lateness_ns": int(round(per.loc[worst, "max_lateness_ns"])),
        "significant": bool(reference_ns and delay >= STRAGGLER_SIGNIFICANT_FRACTION * reference_ns and delay > 0),
    }
    return result


def _int_or_none(value: Any) -> int | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    return int(round(float(value)))


def _align(starts: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, str]:
    """Starts relative to a common reference. On clocks that do not agree across ranks, each participant
    is re-based on the first column all share, so only lateness that grows after it is seen."""
    reference = np.nanmin(starts.to_numpy(dtype=np.float64)) if starts.size else 0.0
    shifted = starts - reference
    if comparable:
        return shifted, "clock"
    shared = starts.columns[starts.notna().all(axis=0)]
    if len(shared) == 0:
        return shifted.iloc[:, :0], "first_common"
    return shifted.sub(shifted[shared[0]], axis=0), "first_common"


def step_analysis(steps: pd.DataFrame, comparable: bool) -> dict[str, Any]:
    """Per-rank step times and step-start stragglers from the (rank, step, start, end) table."""
    if steps.empty:
        return {"per_rank": [], "straggler": None, "basis": "step", "compared": 0}
    # integer arithmetic first: absolute ns do not fit a float64 exactly
    base = int(steps["start_abs_ns"].min())
    frame = steps.assign(start=(steps["start_abs_ns"] - base).astype("int64"),
                         duration=(steps["end_abs_ns"] - steps["start_abs_ns"]).astype("int64"))
    starts = frame.pivot(index="rank", columns="step", values="start").astype("float64")
    aligned, alignment = _align(starts, comparable)
    median_step = float(frame["duration"].median())
    result = _straggler(lateness(aligned), median_step, "step", alignment)
    stats = frame.groupby("rank")["duration"].agg(["count", "mean", "median", "max"])
    result["step_times"] = [{"rank": int(r), "count": int(s["count"]), "mean_ns": int(round(s["mean"])),
                             "median_ns": int(round(s["median"])), "max_ns": int(s["max"])}
                            for r, s in stats.iterrows()]
    return result


def collective_analysis(kernels: pd.DataFrame, comparable: bool) -> dict[str, Any]:
    """Match NCCL kernels across participants (rank, device) by (name, ordinal); per collective the
    fastest participant's duration is data transfer, the rest of each participant's duration is waiting."""
    empty = {"participants": 0, "matched": 0, "unmatched_kernels": 0, "per_rank": [], "transfer_ns": 0,
             "wait_ns": 0, "collective_ns": 0, "straggler": None}
    if kernels.empty:
        return empty
    frame = kernels.astype({"rank": "int64", "device": "int64", "collective": "int64", "start_abs_ns": "int64",
                            "dur_ns": "int64"})
    participants = frame[["rank", "device"]].drop_duplicates()
    n_participants = len(participants)
    per_collective = frame.groupby("collective")["dur_ns"].agg(["count", "min"]).reset_index()
    frame = frame.merge(per_collective, on="collective")
    matched = (frame["count"] == n_participants) & (n_participants >= 2)
    frame["transfer"] = np.where(matched, frame["min"], 0)
    frame["wait"] = np.where(matched, frame["dur_ns"] - frame["min"], 0)
    frame["matched"] = matched
    grouped = frame.groupby(["rank", "device"]).agg(
        collectives=("dur_ns", "size"), collective_ns=("dur_ns", "sum"), transfer_ns=("transfer", "sum"),
        wait_ns=("wait", "sum"), matched=("matched", "sum")).reset_index()
    result = {
        "participants": n_participants,
        "matched": int(matched.sum() // max(n_participants, 1)),
        "unmatched_kernels": int((~matched).sum()),
        "per_rank": [{"rank": int(r.rank), "device": None if r.device < 0 else int(r.device),
                      "collectives": int(r.collectives), "collective_ns": int(r.collective_ns),
                      "transfer_ns": int(r.transfer_ns), "wait_ns": int(r.wait_ns),
                      "wait_fraction": float(r.wait_ns / r.collective_ns) if r.collective_ns else 0.0}
                     for r in grouped.itertuples()],
        "transfer_ns": int(grouped["transfer_ns"].sum()),
        "wait_ns": int(grouped["wait_ns"].sum()),
        "collective_ns": int(grouped["collective_ns"].sum()),
        "straggler": None,
    }
    if matched.any():
        base = int(frame["start_abs_ns"].min())
        rows = frame[matched].assign(start=lambda f: (f["start_abs_ns"] - base).astype("int64"))
        starts = rows.pivot_table(index=["rank", "device"], columns="collective", values="start", aggfunc="min")
        starts = starts.astype("float64")
        aligned, alignment = _align(starts, comparable)
        # reference: the typical interval between consecutive collectives on one participant
        ordered = np.sort(starts.to_numpy(), axis=1)
        steps = np.diff(ordered, axis=1)
        reference = float(np.nanmedian(steps)) if steps.size and not np.isnan(steps).all() else None
        strag = _straggler(lateness(aligned), reference, "collective", alignment)
        for row in strag["per_rank"]:
            if row["device"] is not None and row["device"] < 0:
                row["device"] = None
        if strag["straggler"] and strag["straggler"]["device"] is not None and strag["straggler"]["device"] < 0:
            strag["straggler"]["device"] = None
        result["straggler"] = strag
    return result


def imbalance_analysis(work: pd.DataFrame, collectives: dict[str, Any], span_total_ns: int) -> dict[str, Any]:
    """Time lost to imbalance, per GPU (the mean over participants, comparable with one GPU's span, as the
    diagnosis compares it): the collective wait when NCCL collectives matched across participants (ranks
    waiting for the slowest), else the spread of GPU work, (max work - work) per participant."""
    work_ns = work["work_ns"].astype("int64").to_numpy() if not work.empty else np.zeros(0, np.int64)
    spread = int((work_ns.max() - work_ns).sum()) if work_ns.size >= 2 else 0
    mean = float(work_ns.mean()) if work_ns.size else 0.0
    participants = max(int(collectives.get("participants") or 0), int(work_ns.size), 1)
    if collectives.get("matched"):
        total, basis = int(collectives["wait_ns"]), "collective_wait"
    elif work_ns.size >= 2:
        total, basis = spread, "work_spread"
    else:
        total, basis = 0, "single_participant"
    fraction = total / span_total_ns if span_total_ns > 0 else 0.0
    return {
        "lost_ns": int(round(total / participants)),
        "total_lost_ns": total,
        "basis": basis,
        "lost_fraction": fraction,
        "collective_wait_ns": int(collectives.get("wait_ns", 0)),
        "work_spread_ns": spread,
        "max_over_mean_work": float(work_ns.max() / mean) if mean > 0 else None,
        "participants": participants,
        "verdict": "imbalanced" if fraction >= IMBALANCE_SIGNIFICANT_FRACTION else "balanced",
    }


# ------------------------------------------------------------------------------------------ the run


def analyze_run(
    paths: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    engine: str = "local",
    cache_dir: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Analyze every trace of a run and compare the ranks. Returns ``(run document, failures)``.

    ``paths``: trace files, run directories or globs. ``engine``: ``"local"`` (a process pool of
    ``workers``, default the CPU count) or ``"dask"`` (``scheduler`` address, ``$TRACELENS_DASK_SCHEDULER``,
    or a local cluster of ``workers`` processes). Traces that fail are listed in ``failures`` (one line each)
    and left out; when all fail, :class:`InputError` is raised.
    """
    from .progress import progress_bar

    if engine not in ("local", "dask"):
        raise UsageError(f"unknown engine {engine!r} (choose local or dask)")
    sources = expand_paths(paths)
    if not sources:
        raise InputError("no trace given")
    for source in sources:
        if not source.exists():
            raise InputError("no such file or directory", path=source)
    workers = max(1, min(workers or os.cpu_count() or 1, len(sources)))
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir(sources)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"cannot create the cache directory ({err.strerror})", path=cache) from None
    manifest = read_manifest(cache)
    tasks: list[Task] = []
    stats: list[tuple[int, int]] = []
    for source in sources:
        key = os.path.realpath(source)
        size, mtime_ns = _source_stat(source)
        stats.append((size, mtime_ns))
        entry = manifest["entries"].get(key)
        reuse = _cache_entry_valid(entry, size, mtime_ns, cache)
        parquet = cache / (entry["parquet"] if reuse and entry else _parquet_name(key))
        tasks.append((key, str(parquet), reuse))

    with progress_bar("analyzing ranks", total=len(tasks), enabled=progress) as bar:
        advance = lambda: bar.advance(1)  # noqa: E731
        if engine == "dask":
            results = _run_dask(tasks, workers, scheduler, advance)
        elif workers == 1:
            results = _run_inline(tasks, advance)
        else:
            results = _run_local(tasks, workers, advance)

    failures = [r["error"] for r in results if not r["ok"]]
    good = [(r, s, src) for r, s, src in zip(results, stats, sources, strict=True) if r["ok"]]
    if not good:
        raise InputError("no trace of the run could be read: " + "; ".join(failures))
    ranks, rank_warnings = resolve_ranks([r["metadata"]["rank"] for r, _, _ in good], [src for _, _, src in good])
    for (result, (size, mtime_ns), _), rank in zip(good, ranks, strict=True):
        manifest["entries"][result["source"]] = {
            "source": result["source"], "size": size, "mtime_ns": mtime_ns, "rank": rank,
            "parquet": Path(result["parquet"]).name, "table_schema_version": TABLE_SCHEMA_VERSION,
            "event_count": result["event_count"],
        }
    _write_manifest(cache, manifest)
    doc = build_run_document([r for r, _, _ in good], ranks, rank_warnings, cache)
    return doc, failures


def build_run_document(results: list[dict[str, Any]], ranks: list[int], warnings: list[str],
                       cache: Path) -> dict[str, Any]:
    """Cross-rank analyses over the workers' summaries and the cached Parquet files."""
    order = np.argsort(ranks, kind="stable")
    results = [results[i] for i in order]
    ranks = [ranks[i] for i in order]
    table = pd.DataFrame({
        "parquet": [str(Path(r["parquet"]).resolve()) for r in results],
        "rank": np.asarray(ranks, dtype=np.int64),
        "origin_ns": np.asarray([r["metadata"]["time_origin_ns"] for r in results], dtype=np.int64),
    })
    clocks = {r["metadata"]["clock"] for r in results}
    comparable = len(results) == 1 or (len(clocks) == 1 and clocks <= COMPARABLE_CLOCKS)
    if not comparable:
        warnings = [*warnings, f"trace clocks ({', '.join(sorted(map(str, clocks)))}) do not agree across "
                               "ranks: lateness is measured from the first step/collective all ranks share"]

    with RunEvents(table) as events:
        steps = step_analysis(query_steps(events), comparable)
        collectives = collective_analysis(query_collectives(events), comparable)
        work = query_gpu_work(events)

    devices: list[dict[str, Any]] = []
    per_rank: list[dict[str, Any]] = []
    step_times = {s["rank"]: s for s in steps.get("step_times", [])}
    lateness_by_rank = {s["rank"]: s for s in steps.get("per_rank", [])}
    coll_by_rank: dict[int, list[dict[str, Any]]] = {}
    for row in collectives["per_rank"]:
        coll_by_rank.setdefault(row["rank"], []).append(row)
    span_total = 0
    for result, rank in zip(results, ranks, strict=True):
        rank_devices = result["devices"]
        for d in rank_devices:
            devices.append({"rank": rank, **d})
            span_total += int(d.get("span_ns") or 0)
        busy = sum(int(d.get("busy_ns") or 0) for d in rank_devices)
        span = sum(int(d.get("span_ns") or 0) for d in rank_devices)
        coll = coll_by_rank.get(rank, [])
        st = step_times.get(rank, {})
        late = lateness_by_rank.get(rank, {})
        per_rank.append({
            "rank": rank,
            "path": result["source"],
            "format": result["metadata"]["source_format"],
            "framework": result["metadata"]["framework"],
            "events": result["event_count"],
            "gpus": len(rank_devices),
            "busy_ns": busy,
            "span_ns": span,
            "utilization": busy / span if span > 0 else None,
            "step_count": st.get("count", 0),
            "mean_step_ns": st.get("mean_ns"),
            "median_step_ns": st.get("median_ns"),
            "mean_step_lateness_ns": late.get("mean_lateness_ns"),
            "collective_ns": sum(c["collective_ns"] for c in coll),
            "collective_transfer_ns": sum(c["transfer_ns"] for c in coll),
            "collective_wait_ns": sum(c["wait_ns"] for c in coll),
            "idle_by_cause": result["idle_by_cause"],
            "cached": result["reused"],
            "worker_peak_rss_bytes": result.get("worker_peak_rss_bytes"),
            "parquet": result["parquet"],
        })

    imbalance = imbalance_analysis(work, collectives, span_total)
    straggler = steps.get("straggler") or (collectives.get("straggler") or {}).get("straggler")
    imbalance["straggler_rank"] = straggler["rank"] if straggler else None
    frameworks = sorted({r["metadata"]["framework"] for r in results})
    world_sizes = {r["metadata"]["world_size"] for r in results} - {None}
    doc: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "source": {
            "path": os.path.commonpath([r["source"] for r in results]) if len(results) > 1 else results[0]["source"],
            "format": "run",
            "producer": ", ".join(sorted({r["metadata"]["producer"] for r in results if r["metadata"]["producer"]})),
            "producer_version": "",
            "format_version": "",
            "framework": frameworks[0] if len(frameworks) == 1 else "mixed",
            "rank": None,
            "world_size": max(world_sizes) if world_sizes else len(results),
            "event_count": int(sum(r["event_count"] for r in results)),
            "traces": len(results),
            "cache_dir": str(cache),
            "warnings": warnings + [f"rank {rk}: {w}" for r, rk in zip(results, ranks, strict=True)
                                    for w in r["metadata"]["warnings"]],
        },
        "devices": devices,
        "ranks": per_rank,
        "stragglers": {"steps": _without(steps, "step_times"), "collectives": collectives.get("straggler")},
        "collectives": {k: v for k, v in collectives.items() if k != "straggler"},
        "imbalance": imbalance,
    }
    _attach_representative(doc, results, ranks)
    from .document import summarize

    head = {"schema_version": doc.pop("schema_version"), "source": doc.pop("source"), "summary": summarize(doc)}
    return {**head, **doc}


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


def _attach_representative(doc: dict[str, Any], results: list[dict[str, Any]], ranks: list[int]) -> None:
    """``host`` and ``diagnosis`` of the run come from one rank: the one waiting longest in collectives
    (the victim of the imbalance) or else the least utilized. Its diagnosis is re-run with the run's
    ``imbalance`` so that ``multi_gpu_imbalance`` competes with the per-rank causes."""
    per_rank = doc["ranks"]
    if any(r["collective_wait_ns"] for r in per_rank):
        index = max(range(len(per_rank)), key=lambda i: per_rank[i]["collective_wait_ns"])
    else:
        index = min(range(len(per_rank)), key=lambda i: per_rank[i]["utilization"]
                    if per_rank[i]["utilization"] is not None else 2.0)
    result = results[index]
    doc["representative_rank"] = ranks[index]
    try:
        rank_doc = json.loads(Path(result["doc_path"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if "host" in rank_doc:
        doc["host"] = {**rank_doc["host"], "rank": ranks[index]} if isinstance(rank_doc["host"], dict) else rank_doc["host"]
    if "diagnosis" not in rank_doc:
        return
    doc["diagnosis"] = rank_doc["diagnosis"]
    try:
        from .analyses import diagnosis as diagnosis_module
        from .ingest.parquet import read as read_parquet

        trace: Trace = read_parquet(Path(result["parquet"]))
        done = {**rank_doc, "imbalance": doc["imbalance"]}
        done.pop("diagnosis", None)
        doc["diagnosis"] = diagnosis_module.section(trace, done)
    except Exception as err:  # keep the rank's own diagnosis rather than fail the run
        doc["source"]["warnings"].append(f"diagnosis not re-ranked for imbalance ({type(err).__name__}: {err})")
