"""Per-trace work in parallel: read (or reuse the cached Parquet), cache, analyze, hand back a small summary.

Runs inline, in a local process pool, or on Dask. The parent's memory stays bounded by one trace.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ..document import dumps
from ..errors import TracelensError, UsageError


def ingest_and_summarize(source: str, parquet_path: str, reuse: bool) -> dict[str, Any]:
    """Worker task: read ``source`` (or its cached Parquet when ``reuse``), cache it, analyze it.

    Returns a small JSON-able summary; the full analysis document goes to ``<parquet>.doc.json`` so the
    parent can read back the one it needs. Errors come back as ``{"ok": False, "error": one line}``.
    """
    try:
        if reuse:
            from ..ingest.parquet import read as read_parquet

            trace = read_parquet(Path(parquet_path))
        else:
            from ..ingest import load

            trace = load(source)
            tmp = f"{parquet_path}.{os.getpid()}.tmp"
            trace.save(tmp, cache=True)
            os.replace(tmp, parquet_path)
        from ..analyses import analyze

        doc = analyze(trace)
        attribution = doc.get("attribution")
        doc_path = f"{parquet_path}.doc.json"
        Path(doc_path).write_text(dumps(doc), encoding="utf-8")  # the --format json document
        meta = trace.metadata
        from ..analyses.whatif import graph_points

        return {
            "ok": True,
            "source": source,
            "parquet": parquet_path,
            "doc_path": doc_path,
            "reused": reuse,
            "event_count": trace.num_events,
            "metadata": {
                "rank": meta.rank,
                "world_size": meta.world_size,
                "clock": meta.clock,
                "time_origin_ns": int(meta.time_origin_ns),
                "source_format": meta.source_format,
                "framework": meta.framework,
                "producer": meta.producer,
                "producer_version": meta.producer_version,
                "warnings": list(meta.warnings),
            },
            # only what the run document shows per rank travels back (a few hundred bytes per GPU); the
            # full document, whose step and gap lists grow with the trace, stays on disk
            "devices": doc.get("devices") or [],
            "idle_by_cause": attribution.get("total_by_cause")
            if attribution
            else None,  # summed over the rank's GPUs
            # the completeness problems that leave the rank's trace unable to answer (its GPU side missing)
            "blocking_problems": _blocking_problems(cast(dict[str, Any], doc)),
            "worker_peak_rss_bytes": _peak_rss_bytes(),
            "replay_points": graph_points(trace),  # the run's replay checks its size before reading any rank
        }
    except TracelensError as err:
        return {"ok": False, "source": source, "error": str(err)}
    except MemoryError:
        return {"ok": False, "source": source, "error": f"{source}: out of memory while reading"}
    except Exception as err:  # one rank's bug must not sink the run; it is reported as that rank's failure
        return {
            "ok": False,
            "source": source,
            "error": f"{source}: internal error: {type(err).__name__}: {err}",
        }


def _blocking_problems(doc: dict[str, Any]) -> list[str]:
    """The kinds of the document's blocking completeness problems (the trace cannot answer: GPU side missing)."""
    completeness = (doc.get("diagnosis") or {}).get("completeness") or {}
    return [str(p.get("kind")) for p in completeness.get("problems") or [] if p.get("blocking")]


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


def run_inline(tasks: list[Task], on_done: Callable[[], None]) -> list[dict[str, Any]]:
    results = []
    for task in tasks:
        results.append(ingest_and_summarize(*task))
        on_done()
    return results


def run_local(tasks: list[Task], workers: int, on_done: Callable[[], None]) -> list[dict[str, Any]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # forkserver: a child forked from the parent would inherit its threads (Arrow, DuckDB pools) in unknown
    # states; the server is a fresh process that imports the heavy modules once, then forks each worker.
    if "forkserver" in multiprocessing.get_all_start_methods():
        context: multiprocessing.context.BaseContext = multiprocessing.get_context("forkserver")
        from ..analyses import SECTIONS
        from ..ingest import READERS

        context.set_forkserver_preload(
            [
                "tracelens.run.executors",
                *(f"tracelens.analyses.{n}" for n in SECTIONS),
                *(f"tracelens.ingest.{m}" for m in set(READERS.values())),
            ]
        )
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
                results[i] = {
                    "ok": False,
                    "source": tasks[i][0],
                    "error": f"{tasks[i][0]}: worker process died (killed, or out of memory)",
                }
            on_done()
    return [results[i] for i in range(len(tasks))]


def run_dask(
    tasks: list[Task], workers: int, scheduler: str | None, on_done: Callable[[], None]
) -> list[dict[str, Any]]:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise UsageError(
            "--engine dask needs dask.distributed: pip install 'tracelens[distributed]'"
        ) from None
    address = scheduler or os.environ.get("TRACELENS_DASK_SCHEDULER")
    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
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
                results[i] = {
                    "ok": False,
                    "source": tasks[i][0],
                    "error": f"{tasks[i][0]}: Dask task failed: {type(err).__name__}: {err}",
                }
            on_done()
        return [results[i] for i in range(len(tasks))]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
