"""The run document: every rank analyzed, the cross-rank analyses, one representative rank's host and
diagnosis, and a ``summary`` like a one-trace document's (keys in ``docs/multirank.md``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ..document import RunDocument, load_document, summarize
from ..errors import InputError, UsageError, input_problem
from ..trace import TABLE_SCHEMA_VERSION, Trace
from .cache import (
    cache_entry_valid,
    default_cache_dir,
    parquet_name,
    read_manifest,
    source_stat,
    write_manifest,
)
from .crossrank import COMPARABLE_CLOCKS, collective_analysis, imbalance_analysis, step_analysis
from .executors import Task, run_dask, run_inline, run_local
from .inputs import capture_notes, expand_paths, resolve_ranks
from .queries import RunEvents, query_collectives, query_gpu_work, query_steps

RUN_SCHEMA_VERSION = "1.0"


def analyze_run(
    paths: Sequence[str | os.PathLike[str]],
    *,
    workers: int | None = None,
    engine: str = "local",
    cache_dir: str | os.PathLike[str] | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
) -> tuple[RunDocument, list[str]]:
    """Analyze every trace of a run and compare the ranks. Returns ``(run document, failures)``.

    ``paths``: trace files, run directories or globs. ``engine``: ``"local"`` (a process pool of
    ``workers``, default the CPU count) or ``"dask"`` (``scheduler`` address, ``$TRACELENS_DASK_SCHEDULER``,
    or a local cluster of ``workers`` processes). Traces that fail are listed in ``failures`` (one line each)
    and left out; when all fail, :class:`InputError` is raised.
    """
    from ..progress import progress_bar

    if engine not in ("local", "dask"):
        raise UsageError(f"unknown engine {engine!r} (choose local or dask)")
    twice: list[str] = []
    sources = expand_paths(paths, twice)
    if not sources:
        raise InputError("no trace given")
    # A trace that is not there or cannot be opened (missing, a link loop, a pipe, no read permission) is left out
    # and named, as a trace that fails to read is: the others are analyzed (exit 1), and only a run of which no
    # trace reads is refused whole (exit 2).
    problems = {source: input_problem(source) for source in sources}
    unopened = [str(problem) for problem in problems.values() if problem is not None]
    sources = [source for source, problem in problems.items() if problem is None]
    if not sources:
        raise InputError("no trace of the run could be read: " + "; ".join(unopened))
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
        size, mtime_ns = source_stat(source)
        stats.append((size, mtime_ns))
        entry = manifest["entries"].get(key)
        reuse = cache_entry_valid(entry, size, mtime_ns, cache)
        parquet = cache / (entry["parquet"] if reuse and entry else parquet_name(key))
        tasks.append((key, str(parquet), reuse))

    with progress_bar("analyzing", total=len(tasks), enabled=progress, unit="ranks") as bar:
        advance = lambda: bar.advance(1)  # noqa: E731
        if engine == "dask":
            results = run_dask(tasks, workers, scheduler, advance)
        elif workers == 1:
            results = run_inline(tasks, advance)
        else:
            results = run_local(tasks, workers, advance)

    failures = unopened + [r["error"] for r in results if not r["ok"]]
    good = [(r, s, src) for r, s, src in zip(results, stats, sources, strict=True) if r["ok"]]
    if not good:
        raise InputError("no trace of the run could be read: " + "; ".join(failures))
    ranks, rank_warnings = resolve_ranks(
        [r["metadata"]["rank"] for r, _, _ in good], [src for _, _, src in good]
    )
    for (result, (size, mtime_ns), _), rank in zip(good, ranks, strict=True):
        manifest["entries"][result["source"]] = {
            "source": result["source"],
            "size": size,
            "mtime_ns": mtime_ns,
            "rank": rank,
            "parquet": Path(result["parquet"]).name,
            "table_schema_version": TABLE_SCHEMA_VERSION,
            "event_count": result["event_count"],
        }
    write_manifest(cache, manifest)
    doc = build_run_document(
        [r for r, _, _ in good], ranks, capture_notes(paths) + twice + rank_warnings, cache
    )
    if failures:  # in the document too, so that the report (a PR comment) does not read as the whole run
        shown = "; ".join(" ".join(f.split()) for f in failures[:5])
        more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
        verb = "is" if len(failures) == 1 else "are"
        doc["source"]["warnings"] = [
            f"{len(failures)} of {len(unopened) + len(results)} traces could not be read and {verb} left out: "
            f"{shown}{more}",
            *doc["source"]["warnings"],
        ]
    return doc, failures


def build_run_document(
    results: list[dict[str, Any]], ranks: list[int], warnings: list[str], cache: Path
) -> RunDocument:
    """Cross-rank analyses over the workers' summaries and the cached Parquet files."""
    order = np.argsort(ranks, kind="stable")
    results = [results[i] for i in order]
    ranks = [ranks[i] for i in order]
    table = pd.DataFrame(
        {
            "parquet": [str(Path(r["parquet"]).resolve()) for r in results],
            "rank": np.asarray(ranks, dtype=np.int64),
            "origin_ns": np.asarray([r["metadata"]["time_origin_ns"] for r in results], dtype=np.int64),
        }
    )
    clocks = {r["metadata"]["clock"] for r in results}
    comparable = len(results) == 1 or (len(clocks) == 1 and clocks <= COMPARABLE_CLOCKS)
    if not comparable:
        warnings = [
            *warnings,
            f"trace clocks ({', '.join(sorted(map(str, clocks)))}) do not agree across "
            "ranks: lateness is measured from the first step/collective all ranks share",
        ]

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
        per_rank.append(
            {
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
                # the rank's trace cannot answer (its GPU side missing): diff's gate reads it per rank
                "blocking_problems": list(result.get("blocking_problems") or []),
                "cached": result["reused"],
                "worker_peak_rss_bytes": result.get("worker_peak_rss_bytes"),
                "parquet": result["parquet"],
            }
        )

    imbalance = imbalance_analysis(work, collectives, span_total)
    straggler = steps.get("straggler") or (collectives.get("straggler") or {}).get("straggler")
    imbalance["straggler_rank"] = straggler["rank"] if straggler else None
    whatif, whatif_warnings = _whatif(results, ranks, comparable)
    warnings = [*warnings, *whatif_warnings]
    warnings += [
        f"rank {rank}: its trace cannot say why the GPU idles ({', '.join(r['blocking_problems'])}): "
        "its GPU side is missing"
        for r, rank in zip(results, ranks, strict=True)
        if r.get("blocking_problems")
    ]
    frameworks = sorted({r["metadata"]["framework"] for r in results})
    world_sizes = {r["metadata"]["world_size"] for r in results} - {None}
    doc: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "source": {
            "path": os.path.commonpath([r["source"] for r in results])
            if len(results) > 1
            else results[0]["source"],
            "format": "run",
            "producer": ", ".join(
                sorted({r["metadata"]["producer"] for r in results if r["metadata"]["producer"]})
            ),
            "producer_version": "",
            "format_version": "",
            "framework": frameworks[0] if len(frameworks) == 1 else "mixed",
            "rank": None,
            "world_size": max(world_sizes) if world_sizes else len(results),
            "event_count": int(sum(r["event_count"] for r in results)),
            "traces": len(results),
            "cache_dir": str(cache),
            "warnings": warnings
            + [
                f"rank {rk}: {w}"
                for r, rk in zip(results, ranks, strict=True)
                for w in r["metadata"]["warnings"]
            ],
        },
        "devices": devices,
        "ranks": per_rank,
        "stragglers": {"steps": _without(steps, "step_times"), "collectives": collectives.get("straggler")},
        "collectives": {k: v for k, v in collectives.items() if k != "straggler"},
        "imbalance": imbalance,
        "whatif": whatif,
    }
    _attach_representative(doc, results, ranks)
    head = {
        "schema_version": doc.pop("schema_version"),
        "source": doc.pop("source"),
        "summary": summarize(doc),
    }
    return cast(RunDocument, {**head, **doc})


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


def _whatif(
    results: list[dict[str, Any]], ranks: list[int], comparable: bool
) -> tuple[dict[str, Any], list[str]]:
    """The run's ``whatif`` (run/whatif.py) from every rank's cached trace, read one at a time; (block, warnings).
    The workers' point counts say beforehand whether the run fits the replay's limit."""
    from ..ingest.parquet import read as read_parquet
    from .whatif import MAX_RUN_POINTS, run_whatif, skipped

    points = sum(int(r.get("replay_points") or 0) for r in results)
    if points > MAX_RUN_POINTS:
        return skipped(
            f"the run is too large to replay as one: {points:,} graph points (limit {MAX_RUN_POINTS:,})"
        ), []
    traces = (read_parquet(Path(r["parquet"])) for r in results)
    try:
        return run_whatif(traces, ranks, comparable), []
    except Exception as err:  # one replay's bug must not sink the run document: it says so instead
        reason = f"the run's replay failed ({type(err).__name__}: {err})"
        return skipped(reason), [reason]


def _attach_representative(doc: dict[str, Any], results: list[dict[str, Any]], ranks: list[int]) -> None:
    """``host`` and ``diagnosis`` of the run come from one rank: the one waiting longest in collectives
    (the victim of the imbalance) or else the least utilized. Its diagnosis is re-run with the run's
    ``imbalance`` so that ``multi_gpu_imbalance`` competes with the per-rank causes."""
    per_rank = doc["ranks"]
    if any(r["collective_wait_ns"] for r in per_rank):
        index = max(range(len(per_rank)), key=lambda i: per_rank[i]["collective_wait_ns"])
    else:
        index = min(
            range(len(per_rank)),
            key=lambda i: per_rank[i]["utilization"] if per_rank[i]["utilization"] is not None else 2.0,
        )
    result = results[index]
    doc["representative_rank"] = ranks[index]
    try:
        rank_doc = load_document(result["doc_path"])  # written by the worker as the --format json document
    except InputError:
        return
    if "host" in rank_doc:
        doc["host"] = {**rank_doc["host"], "rank": ranks[index]}
    if "diagnosis" not in rank_doc:
        return
    doc["diagnosis"] = rank_doc["diagnosis"]
    try:
        from ..analyses import diagnosis as diagnosis_module
        from ..ingest.parquet import read as read_parquet

        trace: Trace = read_parquet(Path(result["parquet"]))
        done: dict[str, Any] = {k: v for k, v in rank_doc.items() if k != "diagnosis"}
        run_whatif = doc.get("whatif") or {}
        if run_whatif.get("replay_error") is not None:
            # the causes ranked by the run's replay (multi_gpu_imbalance included); the rank's critical path stays
            done["whatif"] = {
                **(done.get("whatif") or {}),
                **{
                    k: run_whatif[k]
                    for k in ("replay_error", "remedies", "not_modeled", "not_modeled_reasons")
                },
            }
        doc["diagnosis"] = diagnosis_module.diagnose(trace, done, imbalance=doc["imbalance"])
    except Exception as err:  # keep the rank's own diagnosis rather than fail the run
        doc["source"]["warnings"].append(
            f"diagnosis not re-ranked for imbalance ({type(err).__name__}: {err})"
        )
