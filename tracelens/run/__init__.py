"""Many traces of one run: per-rank analysis in parallel, a Parquet cache, and cross-rank analyses.

Two layers (definitions in ``docs/multirank.md``):

1. Per trace, in a worker process (local pool or Dask): read the trace (or its cached Parquet), write the
   Parquet cache, run :func:`tracelens.analyze`, and hand back a *small* summary (never the table), so the
   parent's memory stays bounded by one trace, not the sum.
2. Across ranks, in the parent: DuckDB queries over the cached Parquet files (only the columns needed, rows
   filtered to steps and NCCL kernels), giving small rank x step and rank x collective tables; then
   straggler lateness, collective wait vs transfer, and an imbalance verdict with numpy; and the run's replay,
   which reads the ranks' cached traces one at a time and keeps every rank's dependency graph.

Modules, in the order the data flows: :mod:`.inputs` (which traces, which rank each), :mod:`.cache` (the
Parquet cache and its manifest), :mod:`.executors` (the per-trace work, inline, in processes or on Dask),
:mod:`.queries` (DuckDB over the cached files), :mod:`.crossrank` (lateness, stragglers, collectives,
imbalance, and the collective matching the run's replay joins ranks with), :mod:`.whatif` (the run's replay: every
rank's graph joined at its collectives, ``tracelens/replay/run_join.py``) and :mod:`.document` (:func:`analyze_run`,
the run document). The run document is drawn by
``tracelens.report`` (``report/ranks.py``, ``report/plots.py``); nothing here imports ``report``.
"""

from __future__ import annotations

from .cache import CACHE_DIRNAME, MANIFEST_NAME, default_cache_dir, read_manifest
from .crossrank import lateness, leave_one_out_median
from .document import RUN_SCHEMA_VERSION, analyze_run, build_run_document
from .executors import ingest_and_summarize
from .inputs import expand_paths, is_run_directory, rank_from_name, read_ranks, resolve_ranks

__all__ = [
    "CACHE_DIRNAME",
    "MANIFEST_NAME",
    "RUN_SCHEMA_VERSION",
    "analyze_run",
    "build_run_document",
    "default_cache_dir",
    "expand_paths",
    "ingest_and_summarize",
    "is_run_directory",
    "lateness",
    "leave_one_out_median",
    "rank_from_name",
    "read_manifest",
    "read_ranks",
    "resolve_ranks",
]
