"""The ``summary`` block of a document: the headline figures every renderer and ``diff`` need, computed once from
the sections (``analyze`` and the multi-rank run document both call :func:`summarize`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # types only: tracelens.document imports without its TypedDicts (kimp17)
    from .types import Device, Document, Memcpy, Steps, StepStats, Summary, UtilizationByKind


def _device_sum(devices: list[Device], key: str) -> int | None:
    if not devices:
        return None
    return int(sum(int(d.get(key) or 0) for d in devices))  # type: ignore[call-overload]


def _device_mean(devices: list[Device], key: str) -> float | None:
    """The mean over the devices of one per-device figure (null without devices, or when a device lacks it:
    a document saved by an older version)."""
    values = [d.get(key) for d in devices]
    if not values or any(not isinstance(v, (int, float)) for v in values):
        return None
    return float(sum(values)) / len(values)  # type: ignore[arg-type]


def _utilization(devices: list[Device]) -> tuple[float | None, UtilizationByKind | None]:
    """(gpu_utilization, utilization_by_kind): device-means of each GPU's busy share of its span and of its
    parts, over the GPUs with a span (a device whose activity is one instant has no share to give). The parts
    add up to busy_ns on each device, so their means add up to the utilization (to rounding)."""
    timed = [d for d in cast(list[Mapping[str, Any]], devices) if (d.get("span_ns") or 0) > 0]
    if not timed:
        return None, None
    n = len(timed)
    utilization = sum(int(d["busy_ns"]) / int(d["span_ns"]) for d in timed) / n
    parts = ("kernel_union_ns", "copies_only_ns", "memsets_only_ns")
    if any(not isinstance(d.get(p), int) for d in timed for p in parts):
        return utilization, None  # saved by a version without the split
    kernels, copies, memsets = (sum(int(d[p]) / int(d["span_ns"]) for d in timed) / n for p in parts)
    return utilization, {"kernels": kernels, "copies_only": copies, "memsets_only": memsets}


def _memcpy_exposed(memcpy: Memcpy | None, devices: list[Device]) -> float | None:
    """Device-mean exposed copy time: each GPU's own (``memcpy.per_device[].exposed_ns``, 0 on a GPU without
    copies) over the GPUs with activity."""
    if not memcpy or not devices:
        return None
    return sum(int(d.get("exposed_ns") or 0) for d in memcpy.get("per_device") or []) / len(devices)


def _step_stats(steps: Steps | None) -> StepStats | None:
    if not steps or not steps.get("count"):
        return None
    summary: Mapping[str, Any] = steps.get("summary") or {}
    if not all(isinstance(summary.get(k), (int, float)) for k in ("mean_ns", "min_ns", "max_ns")):
        return None
    return {
        "count": int(steps["count"]),
        "mean_ns": summary["mean_ns"],
        "min_ns": summary["min_ns"],
        "max_ns": summary["max_ns"],
    }


def summarize(doc: Document | dict[str, Any]) -> Summary:
    """The ``summary`` block of a document, from its sections (absent sections give nulls)."""
    doc = cast("Document", doc)
    devices = list(doc.get("devices") or [])
    kernels = doc.get("kernels")
    memcpy = doc.get("memcpy")
    steps = doc.get("steps")
    stats = _step_stats(steps)
    step_summary = steps.get("summary") if steps and stats else None
    host_ns = step_summary.get("host_ns") if step_summary else None
    diagnosis = doc.get("diagnosis")
    primary = diagnosis.get("primary") if diagnosis else None
    attribution = doc.get("attribution")
    ops = doc.get("ops")
    compute: Mapping[str, Any] = (ops.get("compute") if ops else None) or {}
    utilization, by_kind = _utilization(devices)
    n = len(devices)
    idle = attribution.get("total_by_cause") if attribution else None
    return {
        "device_count": n,
        "gpu_utilization": utilization,
        "utilization_by_kind": by_kind,
        "device_mean_busy_ns": _device_mean(devices, "busy_ns"),
        "device_mean_span_ns": _device_mean(devices, "span_ns"),
        "kernel_count": _device_sum(devices, "kernel_count"),
        "device_mean_kernel_ns": _device_mean(devices, "kernel_ns"),
        "kernel_names": kernels["distinct_names"] if kernels else None,
        "memcpy_count": _device_sum(devices, "memcpy_count"),
        "device_mean_memcpy_ns": _device_mean(devices, "memcpy_ns"),
        "memcpy_bytes": int(sum(int(k.get("bytes") or 0) for k in memcpy.get("by_kind") or []))
        if memcpy
        else None,
        "device_mean_memcpy_exposed_ns": _memcpy_exposed(memcpy, devices),
        "device_mean_memset_ns": _device_mean(devices, "memset_ns"),
        "steps": stats,
        "step_host_ns": {k: v / stats["count"] for k, v in host_ns.items()} if stats and host_ns else None,
        "primary_cause": primary["cause"] if primary else None,
        "device_mean_primary_lost_ns": (
            int(primary["lost_ns"]) if primary and primary.get("lost_ns") is not None else None
        ),
        "device_mean_idle_by_cause": {k: v / n for k, v in idle.items()} if idle is not None and n else None,
        "flops": compute.get("flops"),
        "mfu": compute.get("mfu"),
    }


def summary_of(doc: Document | dict[str, Any]) -> Summary:
    """The document's ``summary`` (computed when a document built without one, e.g. by ``analyze(trace,
    sections=[...])`` callers that add sections by hand, lacks it)."""
    summary = doc.get("summary")
    return cast("Summary", summary) if is_current_summary(summary) else summarize(doc)


def is_current_summary(summary: Any) -> bool:
    """Whether a document's ``summary`` has this version's keys (one saved by an older version has other
    names, e.g. the sums over devices that became device-means in schema 1.1)."""
    return isinstance(summary, dict) and _summary_keys() <= summary.keys()


@functools.cache
def _summary_keys() -> frozenset[str]:
    # Summary's keys, read when a saved or given summary is checked (renderers, load_document), not at import:
    # analyze writes a document without importing the TypedDicts (kimp17).
    from .types import Summary

    return frozenset(Summary.__annotations__)
