"""The analysis document as a typed value: what ``tracelens.analyze`` returns and ``--format json`` writes.

The document is a plain dict (JSON-ready) whose shape is given here as :class:`~typing.TypedDict` s, one per
section, so code that reads it (renderers, ``diff``, the multi-rank run) names keys the type checker knows
instead of guessing at spellings. Keys are documented in ``docs/json.md``; a section's deeper structure
that only its own renderer reads is typed ``dict[str, Any]``.

:func:`summarize` computes the ``summary`` block (the headline figures every renderer and ``diff`` need)
once, from the sections; ``analyze`` and the multi-rank run document both call it. :func:`dumps` writes a
document as ``tracelens analyze --format json`` does; :func:`load_document` reads one back.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any, TypedDict, cast, get_type_hints

from .analyses.devices import DeviceUtilization
from .errors import InputError

# ----------------------------------------------------------------------------------------------- types


class Source(TypedDict):
    path: str | None
    format: str | None
    producer: str | None
    producer_version: str | None
    format_version: str | None
    framework: str | None
    rank: int | None
    world_size: int | None
    event_count: int
    warnings: list[str]


# One GPU: the devices section's DeviceUtilization as a dict (one definition of its fields, there), plus
# ``rank`` in a multi-rank run document.
Device = TypedDict("Device", {**get_type_hints(DeviceUtilization), "rank": int}, total=False)  # type: ignore[misc]


class KernelRow(TypedDict):
    name: str
    count: int
    total_ns: int
    avg_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    stdev_ns: float
    time_fraction: float


class Kernels(TypedDict):
    count: int
    distinct_names: int
    total_ns: int
    by_name: list[KernelRow]


class GapTimeline(TypedDict):
    start_ns: int
    edges_ns: list[int]  # bucket edges, one more than utilization
    utilization: list[float]  # busy fraction per bucket


class GapDevice(TypedDict, total=False):
    """One GPU's gaps; ``gap_count``, ``histogram`` and ``largest`` are read by the gaps renderers only."""

    device: int
    span_ns: int
    idle_ns: int
    timeline: GapTimeline | None


class Gaps(TypedDict, total=False):
    bucket_edges_ns: list[int]
    devices: list[GapDevice]


class StepSummary(TypedDict, total=False):
    total_ns: int
    mean_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    host_ns: dict[str, int]
    host_share: dict[str, float]
    gpu_busy: list[dict[str, Any]]


class Steps(TypedDict, total=False):
    count: int
    listed: int
    summary: StepSummary | None
    steps: list[dict[str, Any]]


class Attribution(TypedDict):
    priority: list[str]
    devices: list[dict[str, Any]]
    total_by_cause: dict[str, int]
    mean_by_cause: dict[str, float]
    sync_copy_ns: int


class Memcpy(TypedDict, total=False):
    count: int
    bytes: int
    duration_ns: int
    exposed_ns: int
    union_ns: int
    by_kind: list[dict[str, Any]]
    per_device: list[dict[str, Any]]
    findings: list[dict[str, Any]]


class Cause(TypedDict, total=False):
    cause: str
    lost_ns: int
    share: float
    fix: str | list[str]
    evidence: dict[str, Any]


class Diagnosis(TypedDict, total=False):
    primary: Cause | None
    causes: list[Cause]
    has_gpu_activity: bool
    span_ns: int
    busy_share: float | None
    framework: str
    threshold: float
    healthy_min_busy: float
    unexplained_idle_ns: int


class StepStats(TypedDict):
    count: int
    mean_ns: float
    min_ns: int
    max_ns: int


class Summary(TypedDict):
    """Headline figures, computed once from the sections (``docs/json.md``, "summary")."""

    device_count: int
    gpu_utilization: float | None  # Σ busy_ns / Σ span_ns over devices; null without GPU activity
    gpu_busy_ns: int | None
    gpu_span_ns: int | None
    kernel_count: int | None
    kernel_ns: int | None
    kernel_names: int | None
    memcpy_count: int | None
    memcpy_ns: int | None
    memcpy_bytes: int | None
    memcpy_exposed_ns: int | None
    memset_ns: int | None
    steps: StepStats | None  # count, mean, min and max step time; null without steps
    step_host_ns: dict[str, float] | None  # mean host time per step by category
    primary_cause: str | None
    primary_lost_ns: int | None
    idle_by_cause: dict[str, int] | None  # GPU idle ns by host activity, summed over devices


class Document(TypedDict, total=False):
    """The analyze document. ``schema_version`` and ``source`` are always there; a section is there when it
    was computed (``analyze(trace, sections=[...])`` may leave some out)."""

    schema_version: str
    source: Source
    summary: Summary
    devices: list[Device]
    kernels: Kernels
    host: dict[str, Any]
    gaps: Gaps
    steps: Steps
    attribution: Attribution
    launch: dict[str, Any]
    sync: dict[str, Any]
    ranges: dict[str, Any]
    memcpy: Memcpy
    occupancy: dict[str, Any]
    diagnosis: Diagnosis


class RankRow(TypedDict):
    """One rank of a run document (``ranks[]``, ``docs/multirank.md``)."""

    rank: int
    path: str
    format: str
    framework: str
    events: int
    gpus: int
    busy_ns: int
    span_ns: int
    utilization: float | None
    step_count: int
    mean_step_ns: int | None
    median_step_ns: int | None
    mean_step_lateness_ns: int | None
    collective_ns: int
    collective_transfer_ns: int
    collective_wait_ns: int
    idle_by_cause: dict[str, int] | None
    cached: bool
    worker_peak_rss_bytes: int | None
    parquet: str


class RunDocument(Document, total=False):
    """A multi-rank run document (``tracelens.run.analyze_run``): a document whose ``devices`` carry their
    ``rank``, whose ``host`` and ``diagnosis`` come from the representative rank, plus the cross-rank keys."""

    ranks: list[RankRow]
    stragglers: dict[str, Any]  # steps / collectives: basis, per_rank lateness, straggler
    collectives: dict[str, Any]
    imbalance: dict[str, Any]
    representative_rank: int


# --------------------------------------------------------------------------------------------- summary


def _device_sum(devices: list[Device], key: str) -> int | None:
    if not devices:
        return None
    return int(sum(int(d.get(key) or 0) for d in devices))  # type: ignore[call-overload]


def _step_stats(steps: Steps | None) -> StepStats | None:
    if not steps or not steps.get("count"):
        return None
    summary = steps.get("summary") or {}
    if not all(isinstance(summary.get(k), (int, float)) for k in ("mean_ns", "min_ns", "max_ns")):
        return None
    return {"count": int(steps["count"]), "mean_ns": summary["mean_ns"], "min_ns": summary["min_ns"],
            "max_ns": summary["max_ns"]}


def summarize(doc: Document | dict[str, Any]) -> Summary:
    """The ``summary`` block of a document, from its sections (absent sections give nulls)."""
    doc = cast(Document, doc)
    devices = list(doc.get("devices") or [])
    span = _device_sum(devices, "span_ns")
    busy = _device_sum(devices, "busy_ns")
    kernels = doc.get("kernels")
    memcpy = doc.get("memcpy")
    steps = doc.get("steps")
    stats = _step_stats(steps)
    host_ns = ((steps or {}).get("summary") or {}).get("host_ns") if stats else None
    primary = (doc.get("diagnosis") or {}).get("primary")
    attribution = doc.get("attribution")
    return {
        "device_count": len(devices),
        "gpu_utilization": (busy or 0) / span if span else None,
        "gpu_busy_ns": busy,
        "gpu_span_ns": span,
        "kernel_count": _device_sum(devices, "kernel_count"),
        "kernel_ns": _device_sum(devices, "kernel_ns"),
        "kernel_names": kernels["distinct_names"] if kernels else None,
        "memcpy_count": _device_sum(devices, "memcpy_count"),
        "memcpy_ns": _device_sum(devices, "memcpy_ns"),
        "memcpy_bytes": int(sum(int(k.get("bytes") or 0) for k in memcpy.get("by_kind") or [])) if memcpy else None,
        "memcpy_exposed_ns": int(memcpy["exposed_ns"]) if memcpy and memcpy.get("exposed_ns") is not None else None,
        "memset_ns": _device_sum(devices, "memset_ns"),
        "steps": stats,
        "step_host_ns": {k: v / stats["count"] for k, v in host_ns.items()} if stats and host_ns else None,
        "primary_cause": primary["cause"] if primary else None,
        "primary_lost_ns": int(primary["lost_ns"]) if primary and primary.get("lost_ns") is not None else None,
        "idle_by_cause": dict(attribution["total_by_cause"]) if attribution else None,
    }


def summary_of(doc: Document | dict[str, Any]) -> Summary:
    """The document's ``summary`` (computed when a document built without one, e.g. by ``analyze(trace,
    sections=[...])`` callers that add sections by hand, lacks it)."""
    summary = doc.get("summary")
    return cast(Summary, summary) if isinstance(summary, dict) else summarize(doc)


# ------------------------------------------------------------------------------------------ save, load


def _finite(value: Any) -> Any:
    # JSON has no NaN/inf: an undefined ratio is null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _numpy(value: Any) -> Any:
    # numpy scalars and arrays (np.float64 is a float already): their Python equivalents.
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise NotImplementedError(f"cannot write {type(value).__name__} as JSON")


@functools.cache
def _encoder() -> Any:
    import msgspec

    return msgspec.json.Encoder(enc_hook=_numpy)


def dumps(doc: Document | dict[str, Any]) -> str:
    """The document as stable JSON (what ``--format json`` writes): integers raw (ns, bytes), keys in
    document order, NaN and infinities as null, indented by 2. :func:`load_document` reads it back."""
    import msgspec

    return msgspec.json.format(_encoder().encode(_finite(doc)), indent=2).decode() + "\n"



def is_document(value: Any) -> bool:
    """A saved analysis document: a JSON object with ``schema_version`` and ``source`` and no
    ``traceEvents`` (which would make it a Chrome/PyTorch trace)."""
    return (isinstance(value, dict) and "schema_version" in value and isinstance(value.get("source"), dict)
            and "traceEvents" not in value)


def looks_like_document(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file holding an analysis document, by content whatever its name (``analyze
    --format json > doc`` too): its first 4 KiB open a JSON object naming ``schema_version`` and no
    ``traceEvents``. Trace files never pass (gzip, SQLite, Parquet and protobuf do not start with ``{``;
    a Chrome/Kineto trace has ``traceEvents`` and ``schemaVersion``). :func:`load_document` checks fully."""
    p = Path(path)
    if not p.is_file():
        return False
    try:
        with p.open("rb") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"schema_version"' in head and b'"traceEvents"' not in head


def load_document(path: str | os.PathLike[str]) -> Document:
    """Read an analysis document saved with ``tracelens analyze --format json``; its ``summary`` is computed
    when the file has none. Raises :class:`~tracelens.errors.InputError` when the file is not one."""
    import msgspec

    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file or directory", path=p) from None
    except OSError as err:
        raise InputError(f"cannot read ({err.strerror})", path=p) from None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as err:
        raise InputError(f"not a valid JSON analysis document ({err})", path=p) from None
    if not is_document(value):
        raise InputError("not a tracelens analysis document (no schema_version and source)", path=p)
    if not isinstance(value.get("summary"), dict):
        value["summary"] = summarize(value)
    return cast(Document, value)
