"""The ``summary`` block of a document: the headline figures every renderer and ``diff`` need, computed once from
the sections (``analyze`` and the multi-rank run document both call :func:`summarize`)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import intervals

if TYPE_CHECKING:  # types only: tracelens.document imports without its TypedDicts (kimp17)
    from .types import Device, Document, Memcpy, Steps, StepStats, Summary, UtilizationByKind


def _device_sum(devices: list[Device], key: str) -> int | None:
    if not devices:
        return None
    return int(sum(int(d.get(key) or 0) for d in devices))  # type: ignore[call-overload]


# GPU-time weighting (docs/analyses.md, "GPU-time weighting"): each GPU with activity counts by the time the
# trace shows it, its span (first op's start to last op's end), not as one whole GPU. A per-GPU figure x_d is
# reported as Σ_d x_d / n_eff, n_eff = Σ_d span_d / union of the GPUs' windows (the diagnosis span), and a share
# of GPU time as Σ_d x_d / Σ_d span_d: a GPU touched once (a context's first memset, a stray copy to another
# device) weighs its few microseconds, not half the headline. One GPU: n_eff = 1.0 exactly; n GPUs over the
# same window: n_eff = n exactly (the plain mean over the GPUs).


def windows_union(windows: Iterable[tuple[int, int]]) -> int:
    """The length of the union of ``(start, end)`` windows (ns): :func:`intervals.union_length`, the union the
    diagnosis span is (so n_eff's divisor is that span exactly)."""
    pairs = np.array(list(windows), dtype=np.int64).reshape(-1, 2)
    return intervals.union_length(pairs[:, 0], pairs[:, 1]) if pairs.size else 0


def gpu_equivalents(spans: Sequence[int], union: int) -> float:
    """n_eff = Σ span_d / union: the GPUs with activity counted by the share of the window each spans (1.0 for
    one GPU; n for n GPUs over one window); the plain count where no GPU has a span (zero-length ops only)."""
    total = sum(spans)
    return total / union if total > 0 and union > 0 else float(len(spans))


def span_weighted(values: Sequence[int], spans: Sequence[int]) -> float:
    """The span-weighted mean of each GPU's share ``value / span`` (spans > 0): Σ values / Σ spans, computed as the
    plain mean of the shares where every span is the same (the same value, and the same float as before the
    weighting)."""
    if len(set(spans)) == 1:
        return sum(v / s for v, s in zip(values, spans, strict=True)) / len(spans)
    return sum(values) / sum(spans)


def device_gpu_equivalents(devices: Sequence[Mapping[str, Any]]) -> float:
    """n_eff of a document's ``devices``: Σ span_ns / the union of the devices' windows, per rank in a run
    document (its ranks' clocks are their own: n_eff adds up over ranks); the device count for devices saved
    without their windows (an older version)."""
    groups: dict[Any, list[Mapping[str, Any]]] = {}
    for d in devices:
        groups.setdefault(d.get("rank"), []).append(d)
    total = 0.0
    for group in groups.values():
        keys = ("span_ns", "first_start_ns", "last_end_ns")
        if any(not isinstance(d.get(k), int) for d in group for k in keys):
            total += len(group)
            continue
        union = windows_union((int(d["first_start_ns"]), int(d["last_end_ns"])) for d in group)
        total += gpu_equivalents([int(d["span_ns"]) for d in group], union)
    return total


def _memcpy_bytes(memcpy: Memcpy | None) -> int | None:
    """Σ of the copies' bytes; None where there are copies and none has a known size (ROCm's Kineto writes its
    copies without bytes: "copied 0 B" then)."""
    if not memcpy:
        return None
    kinds = memcpy.get("by_kind") or []
    if kinds and all(k.get("unknown_bytes_count") == k.get("count") for k in kinds):
        return None
    return int(sum(int(k.get("bytes") or 0) for k in kinds))


def _device_mean(devices: list[Device], key: str, gpus: float) -> float | None:
    """One per-device figure per GPU, GPU-time weighted: Σ over the devices / ``gpus`` (n_eff; the plain mean
    where the GPUs share one window). Null without devices, or when a device lacks it (a document saved by an
    older version)."""
    values = [d.get(key) for d in devices]
    if not values or any(not isinstance(v, (int, float)) for v in values):
        return None
    return float(sum(values)) / gpus  # type: ignore[arg-type]


def _utilization(devices: list[Device]) -> tuple[float | None, UtilizationByKind | None]:
    """(gpu_utilization, utilization_by_kind): the span-weighted means of each GPU's busy share of its span and of
    its parts (Σ busy_ns / Σ span_ns), over the GPUs with a span (a device whose activity is one instant has no
    share to give, and weighs nothing). The parts add up to busy_ns on each device, so their shares add up to the
    utilization (to rounding)."""
    timed = [d for d in cast(list[Mapping[str, Any]], devices) if (d.get("span_ns") or 0) > 0]
    if not timed:
        return None, None
    spans = [int(d["span_ns"]) for d in timed]
    utilization = span_weighted([int(d["busy_ns"]) for d in timed], spans)
    parts = ("kernel_union_ns", "copies_only_ns", "memsets_only_ns")
    if any(not isinstance(d.get(p), int) for d in timed for p in parts):
        return utilization, None  # saved by a version without the split
    kernels, copies, memsets = (span_weighted([int(d[p]) for d in timed], spans) for p in parts)
    return utilization, {"kernels": kernels, "copies_only": copies, "memsets_only": memsets}


def _memcpy_exposed(memcpy: Memcpy | None, devices: list[Device], gpus: float) -> float | None:
    """Exposed copy time per GPU, GPU-time weighted: Σ of each GPU's own (``memcpy.per_device[].exposed_ns``, 0 on a
    GPU without copies) / n_eff over the GPUs with activity."""
    if not memcpy or not devices:
        return None
    return sum(int(d.get("exposed_ns") or 0) for d in memcpy.get("per_device") or []) / gpus


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
    gpus = device_gpu_equivalents(cast(list[Mapping[str, Any]], devices)) if n else 0.0
    idle = attribution.get("total_by_cause") if attribution else None
    return {
        "device_count": n,
        "gpu_utilization": utilization,
        "utilization_by_kind": by_kind,
        "device_mean_busy_ns": _device_mean(devices, "busy_ns", gpus),
        "device_mean_span_ns": _device_mean(devices, "span_ns", gpus),
        "kernel_count": _device_sum(devices, "kernel_count"),
        "device_mean_kernel_ns": _device_mean(devices, "kernel_ns", gpus),
        "kernel_names": kernels["distinct_names"] if kernels else None,
        "memcpy_count": _device_sum(devices, "memcpy_count"),
        "device_mean_memcpy_ns": _device_mean(devices, "memcpy_ns", gpus),
        "memcpy_bytes": _memcpy_bytes(memcpy),
        "device_mean_memcpy_exposed_ns": _memcpy_exposed(memcpy, devices, gpus),
        "device_mean_memset_ns": _device_mean(devices, "memset_ns", gpus),
        "steps": stats,
        "step_host_ns": {k: v / stats["count"] for k, v in host_ns.items()} if stats and host_ns else None,
        "primary_cause": primary["cause"] if primary else None,
        "device_mean_primary_lost_ns": (
            int(primary["lost_ns"]) if primary and primary.get("lost_ns") is not None else None
        ),
        "device_mean_idle_by_cause": {k: v / gpus for k, v in idle.items()}
        if idle is not None and n
        else None,
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
