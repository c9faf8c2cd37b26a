"""Compare two analysis documents (``tracelens diff BASE HEAD``): metrics side by side, deltas, a verdict.

Works on the documents ``tracelens.analyze`` returns (or ``tracelens.load_document`` reads back), so the two
traces may come from different formats. Every headline figure comes from the document's ``summary`` block.
Definitions (also in ``docs/json.md``, section "diff"):

* GPU utilization of a trace = Σ busy_ns / Σ span_ns over its GPUs, the GPU-time weighted device-mean of
  busy_ns / span_ns (``summary.gpu_utilization``); null when the trace has no GPU activity. Durations are
  device-means (``summary.device_mean_*``: Σ over the GPUs / n_eff, docs/analyses.md "GPU-time weighting").
* Mean step time = mean duration of the steps in the ``steps`` section; null when the trace has no steps.
* delta = head - base; relative = delta / base (null when base is 0 or either side is null).
* A metric's change is "improved"/"regressed" when it moves beyond the noise floor in its better/worse
  direction, else "unchanged". Noise floor: :data:`NOISE_FLOOR` = 2% relative, or 2 points for fractions.
* Verdict, from the two headline metrics (GPU utilization, mean step time): "regressed" when either
  regressed beyond the floor, else "improved" when either improved, else "unchanged"; "inconclusive"
  when neither metric exists on both sides (no GPU and no steps), or when either trace cannot answer (its
  ``diagnosis.completeness.answerable`` is false: the GPU side is missing); the reasons then say which side
  and why first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from .document import Document, KernelRow, StepStats, summary_of
from .units import fmt_ns, signed

DIFF_SCHEMA_VERSION = "1.1"
NOISE_FLOOR = 0.02  # relative change (2%), or 0.02 = 2 points for fraction metrics
TOP_KERNELS = 15  # entries per kernels added / removed / slower / faster list
_EPSILON = 1e-9  # 100 * (0.8 - 0.5) is 30.000000000000004: exactly PCT is not "more than" PCT

Doc = Document


def gpu_utilization(doc: Doc) -> float | None:
    """Device-mean utilization: Σ busy_ns / Σ span_ns over the devices (GPU-time weighted); null without GPU time."""
    return summary_of(doc)["gpu_utilization"]


def mean_step_ns(doc: Doc) -> float | None:
    """Mean step duration in ns (``steps.summary.mean_ns``, over every step), null when there are no steps; a run's
    document (no steps section) over every rank's steps (:func:`_run_mean_step_ns`)."""
    stats = summary_of(doc)["steps"]
    return float(stats["mean_ns"]) if stats else _run_mean_step_ns(doc)


def _run_mean_step_ns(doc: Doc) -> float | None:
    """Σ ranks[].step_count x ranks[].mean_step_ns / Σ step_count: the mean of every rank's steps, so that two runs'
    step times are compared (and gated) as two traces' are; null where no rank has a step."""
    ranks = cast("dict[str, Any]", doc).get("ranks") or []
    pairs = [(int(r.get("step_count") or 0), r.get("mean_step_ns")) for r in ranks]
    known = [(n, float(m)) for n, m in pairs if n > 0 and isinstance(m, (int, float))]
    count = sum(n for n, _ in known)
    return sum(n * m for n, m in known) / count if count else None


def step_stats(doc: Doc) -> StepStats | None:
    """count, mean_ns, min_ns, max_ns over every step (``summary.steps``), or None without steps."""
    return summary_of(doc)["steps"]


def _summary(key: str) -> Callable[[Doc], float | int | None]:
    def get(doc: Doc) -> float | int | None:
        return summary_of(doc)[key]  # type: ignore[literal-required]

    return get


def _by_kind(doc: Doc, part: str) -> float | None:
    split = summary_of(doc)["utilization_by_kind"]
    return split[part] if split else None  # type: ignore[literal-required]


def _step_count(doc: Doc) -> int | None:
    stats = summary_of(doc)["steps"]
    return stats["count"] if stats else None


def _launch(key: str) -> Callable[[Doc], float | None]:
    def get(doc: Doc) -> float | None:
        value: Any = doc.get("launch")
        for part in key.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    return get


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str  # "fraction" | "ns" | "count" | "bytes" | "per_s" | "ratio"
    better: str | None  # "higher" | "lower" | None (informational)
    get: Callable[[Doc], float | int | None]


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpu_utilization", "GPU utilization (device-mean busy/span)", "fraction", "higher", gpu_utilization
    ),
    Metric(
        "kernel_utilization",
        "GPU share with a kernel running (device-mean)",
        "fraction",
        "higher",
        lambda d: _by_kind(d, "kernels"),
    ),
    Metric(
        "copies_only_utilization",
        "GPU share with only copies running (device-mean)",
        "fraction",
        None,
        lambda d: _by_kind(d, "copies_only"),
    ),
    Metric("mean_step_ns", "mean step time", "ns", "lower", mean_step_ns),
    Metric("step_count", "steps", "count", None, _step_count),
    Metric(
        "device_count", "GPUs with activity", "count", None, lambda d: summary_of(d)["device_count"] or None
    ),
    Metric("device_mean_busy_ns", "GPU busy (device-mean)", "ns", None, _summary("device_mean_busy_ns")),
    Metric("device_mean_span_ns", "GPU span (device-mean)", "ns", "lower", _summary("device_mean_span_ns")),
    Metric("kernel_count", "kernels launched", "count", None, _summary("kernel_count")),
    Metric(
        "device_mean_kernel_ns",
        "kernel time (summed per GPU, device-mean)",
        "ns",
        None,
        _summary("device_mean_kernel_ns"),
    ),
    Metric("kernel_names", "distinct kernel names", "count", None, _summary("kernel_names")),
    Metric("memcpy_count", "memcpy count", "count", "lower", _summary("memcpy_count")),
    Metric(
        "device_mean_memcpy_ns",
        "memcpy time (summed per GPU, device-mean)",
        "ns",
        "lower",
        _summary("device_mean_memcpy_ns"),
    ),
    Metric("memcpy_bytes", "memcpy bytes", "bytes", None, _summary("memcpy_bytes")),
    Metric(
        "device_mean_memcpy_exposed_ns",
        "memcpy not overlapped by compute (device-mean)",
        "ns",
        "lower",
        _summary("device_mean_memcpy_exposed_ns"),
    ),
    Metric(
        "device_mean_memset_ns",
        "memset time (summed per GPU, device-mean)",
        "ns",
        None,
        _summary("device_mean_memset_ns"),
    ),
    Metric(
        "device_mean_primary_lost_ns",
        "lost time of the primary cause (device-mean)",
        "ns",
        "lower",
        _summary("device_mean_primary_lost_ns"),
    ),
    Metric("flops", "FLOPs counted (recorded shapes)", "count", None, _summary("flops")),
    Metric("mfu", "MFU (FLOPs / span x peak)", "ratio", "higher", _summary("mfu")),
)

HEADLINE = ("gpu_utilization", "mean_step_ns")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _classify(unit: str, better: str | None, base: float | None, head: float | None) -> str:
    if better is None:
        return "info"
    if base is None or head is None:
        return "n/a"
    if unit == "fraction":
        moved = head - base
        if abs(moved) <= NOISE_FLOOR:
            return "unchanged"
    else:
        if base == 0:
            if head == 0:
                return "unchanged"
            moved = head
        else:
            moved = (head - base) / abs(base)
            if abs(moved) <= NOISE_FLOOR:
                return "unchanged"
    up_is_good = better == "higher"
    return "improved" if (moved > 0) == up_is_good else "regressed"


def _row(metric_key: str, label: str, unit: str, better: str | None, base: Any, head: Any) -> dict[str, Any]:
    base, head = _number(base), _number(head)
    delta = (head - base) if base is not None and head is not None else None
    relative = (delta / abs(base)) if delta is not None and base else None
    return {
        "key": metric_key,
        "label": label,
        "unit": unit,
        "better": better,
        "base": base,
        "head": head,
        "delta": delta,
        "relative": relative,
        "change": _classify(unit, better, base, head),
    }


def _launch_rows(base: Doc, head: Doc) -> list[dict[str, Any]]:
    """Scalar launch statistics present in either document (the launch section's own keys)."""
    rows = []
    candidates = [
        ("launch_latency_p50_ns", "launch latency p50", "ns", "lower", "latency.p50_ns"),
        ("launch_latency_p90_ns", "launch latency p90", "ns", "lower", "latency.p90_ns"),
        ("launch_latency_p99_ns", "launch latency p99", "ns", "lower", "latency.p99_ns"),
        ("launch_latency_mean_ns", "launch latency mean", "ns", "lower", "latency.mean_ns"),
        ("small_kernel_share", "kernel time in kernels < 10 µs", "fraction", "lower", "small_kernels.share"),
        (
            "short_kernel_count",
            "kernels shorter than their launch call",
            "count",
            "lower",
            "short_kernels.count",
        ),
        ("launch_issue_per_s", "launch calls per second", "per_s", None, "rates.issue_per_s"),
        ("issue_to_execution", "issue rate / execution rate", "ratio", None, "rates.issue_to_execution"),
    ]
    for key, label, unit, better, path in candidates:
        get = _launch(path)
        b, h = get(base), get(head)
        if b is not None or h is not None:
            rows.append(_row(key, label, unit, better, b, h))
    return rows


STEP_CATEGORY_BETTER = {"input": "lower", "sync": "lower", "launch": "lower"}


def _step_host_rows(base: Doc, head: Doc) -> list[dict[str, Any]]:
    """Mean host time per step by category (``summary.step_host_ns``) for both traces."""

    def per_step(doc: Doc) -> dict[str, float]:
        return summary_of(doc)["step_host_ns"] or {}

    b, h = per_step(base), per_step(head)
    return [
        _row(
            f"step_{cat}_ns",
            f"per step: host {cat}",
            "ns",
            STEP_CATEGORY_BETTER.get(cat),
            b.get(cat),
            h.get(cat),
        )
        for cat in [*b, *(k for k in h if k not in b)]
    ]


def _path(doc: Doc) -> str | None:
    source = doc.get("source")
    return source.get("path") if source else None


def _kernel_changes(base: Doc, head: Doc) -> dict[str, Any]:
    base_kernels, head_kernels = base.get("kernels"), head.get("kernels")
    base_k = {k["name"]: k for k in (base_kernels.get("by_name", []) if base_kernels else [])}
    head_k = {k["name"]: k for k in (head_kernels.get("by_name", []) if head_kernels else [])}
    # A side without a kernels section (a run's document) was not measured per kernel: against it every kernel of
    # the other side would read as added or removed.
    unmeasured = [
        f"{label} ({_path(side)}) has no kernel table"
        for label, side, section in (("BASE", base, base_kernels), ("HEAD", head, head_kernels))
        if section is None
    ]
    if (unmeasured and (base_k or head_k)) or (not base_k and not head_k):
        reason = "; ".join(unmeasured) or "neither trace ran a kernel"
        return {
            "available": False,
            "unavailable_reason": f"{reason} (a run's document lists none)" if unmeasured else reason,
            "added": [],
            "removed": [],
            "slower": [],
            "faster": [],
        }

    def brief(k: KernelRow) -> dict[str, Any]:
        return {"name": k["name"], "count": k["count"], "total_ns": k["total_ns"], "avg_ns": k["avg_ns"]}

    added = sorted(
        (brief(head_k[n]) for n in head_k.keys() - base_k.keys()), key=lambda k: (-k["total_ns"], k["name"])
    )
    removed = sorted(
        (brief(base_k[n]) for n in base_k.keys() - head_k.keys()), key=lambda k: (-k["total_ns"], k["name"])
    )
    changed: list[dict[str, Any]] = []
    for name in base_k.keys() & head_k.keys():
        b, h = base_k[name], head_k[name]
        if not b["avg_ns"]:
            continue
        relative = (h["avg_ns"] - b["avg_ns"]) / b["avg_ns"]
        if abs(relative) > NOISE_FLOOR:
            changed.append(
                {
                    "name": name,
                    "base_count": b["count"],
                    "head_count": h["count"],
                    "base_avg_ns": b["avg_ns"],
                    "head_avg_ns": h["avg_ns"],
                    "avg_relative": relative,
                    "base_total_ns": b["total_ns"],
                    "head_total_ns": h["total_ns"],
                    "total_delta_ns": h["total_ns"] - b["total_ns"],
                }
            )
    slower = sorted(
        (c for c in changed if c["avg_relative"] > 0), key=lambda c: (-c["total_delta_ns"], c["name"])
    )
    faster = sorted(
        (c for c in changed if c["avg_relative"] < 0), key=lambda c: (c["total_delta_ns"], c["name"])
    )
    return {
        "available": True,
        "unavailable_reason": None,
        "added_count": len(added),
        "removed_count": len(removed),
        "slower_count": len(slower),
        "faster_count": len(faster),
        "added": added[:TOP_KERNELS],
        "removed": removed[:TOP_KERNELS],
        "slower": slower[:TOP_KERNELS],
        "faster": faster[:TOP_KERNELS],
    }


def incomplete_reason(doc: Doc) -> str | None:
    """Why a trace cannot answer (its blocking completeness problems, with their counts), or None when it can.

    A document without ``diagnosis.completeness`` (an older saved one) can answer unless its primary cause is
    ``incomplete_trace``."""
    diagnosis: Any = doc.get("diagnosis") or {}
    completeness = diagnosis.get("completeness") if isinstance(diagnosis, dict) else None
    if not isinstance(completeness, dict):
        primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
        return (
            "incomplete trace"
            if isinstance(primary, dict) and primary.get("cause") == "incomplete_trace"
            else None
        )
    if completeness.get("answerable", True):
        return None
    parts = []
    for problem in completeness.get("problems") or []:
        if not isinstance(problem, dict) or not problem.get("blocking"):
            continue
        ev = problem.get("evidence") or {}
        if problem.get("kind") == "launches_without_gpu_activity" and ev.get("gpu_ops"):
            parts.append(
                f"{ev.get('after_last_gpu_op') or 0:,} of {ev.get('launch_calls') or 0:,} launch calls start after the "
                "last recorded GPU op (the GPU side stops early)"
            )
        elif problem.get("kind") == "launches_without_gpu_activity":
            parts.append(
                f"{ev.get('launch_calls') or 0:,} launch calls and no GPU activity recorded (the profiler lost "
                "the GPU side)"
            )
        elif problem.get("kind") == "launches_before_gpu_activity":
            parts.append(
                f"{ev.get('before_first_gpu_op') or 0:,} of {ev.get('launch_calls') or 0:,} launch calls start before "
                "the first recorded GPU op (the GPU side starts late)"
            )
        elif problem.get("kind") == "kernel_launches_without_kernels":
            n = ev.get("kernel_launch_calls") or 0
            parts.append(
                f"{n:,} kernel launch call{'' if n == 1 else 's'} and no kernel recorded (the profiler lost the "
                "kernels)"
            )
        elif problem.get("kind") == "no_gpu_activity":
            parts.append(f"no GPU activity recorded ({ev.get('host_events') or 0:,} host events only)")
        elif problem.get("kind") == "gpu_ops_without_device":
            parts.append(
                f"{ev.get('without_device') or 0:,} of {ev.get('gpu_ops') or 0:,} GPU ops name no GPU (device id "
                "missing or invalid)"
            )
        elif problem.get("kind") == "gpu_ops_without_duration":
            parts.append(
                f"{ev.get('zero_length') or 0:,} of {ev.get('gpu_ops') or 0:,} GPU ops have no duration (a missing "
                "or negative dur: their busy time is lost)"
            )
        elif problem.get("kind") == "gpu_clock_skew":
            parts.append(
                f"{ev.get('before_their_call') or 0:,} of {ev.get('matched_gpu_ops') or 0:,} GPU ops start before "
                f"the call that launched them began, by {fmt_ns(ev.get('median_ahead_ns'))} at the median (the "
                "GPU's clock is not the host's)"
            )
        else:  # a kind of a newer tracelens: its fix says what is missing
            parts.append(f"the trace's {str(problem.get('kind')).replace('_', ' ')}")
    return "; ".join(parts) or "incomplete trace"


def _side(doc: Doc) -> dict[str, Any]:
    source = doc["source"]
    reason = incomplete_reason(doc)
    return {
        "path": source.get("path"),
        "format": source.get("format"),
        "framework": source.get("framework"),
        "primary_cause": summary_of(doc)["primary_cause"],
        "answerable": reason is None,
        "incomplete_reason": reason,
    }


def cannot_answer(result: dict[str, Any]) -> str | None:
    """One line saying which side of a comparison cannot answer and why, or None when both can."""
    sides = [
        (label, result[key])
        for label, key in (("BASE", "base"), ("HEAD", "head"))
        if not result[key].get("answerable", True)
    ]
    if not sides:
        return None
    return "; ".join(
        f"{label} ({side.get('path')}) cannot answer: {side.get('incomplete_reason')}"
        for label, side in sides
    )


def _describe(row: dict[str, Any]) -> str:
    if row["unit"] == "fraction":
        return (
            f"{row['label']}: {100 * row['base']:.1f}% -> {100 * row['head']:.1f}% "
            f"({signed(100 * row['delta'])} points): {row['change']}"
        )
    relative = f" ({signed(100 * row['relative'])}%)" if row["relative"] is not None else ""
    return (
        f"{row['label']}: {row['base'] / 1e6:.3f} ms -> {row['head'] / 1e6:.3f} ms{relative}: {row['change']}"
    )


def _verdict(rows: list[dict[str, Any]]) -> tuple[str, list[str]]:
    headline = [r for r in rows if r["key"] in HEADLINE and r["change"] != "n/a"]
    if not headline:
        return "inconclusive", ["neither GPU utilization nor mean step time exists in both traces"]
    reasons = [_describe(r) for r in headline]
    if any(r["change"] == "regressed" for r in headline):
        return "regressed", reasons
    if any(r["change"] == "improved" for r in headline):
        return "improved", reasons
    return "unchanged", reasons


def compare(base_doc: Doc, head_doc: Doc) -> dict[str, Any]:
    """Metrics of two analysis documents side by side with deltas, changed kernels and a verdict."""
    metrics = [_row(m.key, m.label, m.unit, m.better, m.get(base_doc), m.get(head_doc)) for m in METRICS]
    metrics.extend(_step_host_rows(base_doc, head_doc))
    metrics.extend(_launch_rows(base_doc, head_doc))
    base_idle = summary_of(base_doc)["device_mean_idle_by_cause"] or {}
    head_idle = summary_of(head_doc)["device_mean_idle_by_cause"] or {}
    idle = [
        _row(
            f"idle_{cause}_ns",
            f"idle: {cause} (device-mean)",
            "ns",
            "lower",
            base_idle.get(cause, 0 if base_idle else None),
            head_idle.get(cause, 0 if head_idle else None),
        )
        for cause in sorted(base_idle.keys() | head_idle.keys())
    ]
    verdict, reasons = _verdict(metrics)
    base, head = _side(base_doc), _side(head_doc)
    blocked = cannot_answer({"base": base, "head": head})
    if blocked:
        verdict, reasons = "inconclusive", [blocked, *reasons]
    return {
        "schema_version": DIFF_SCHEMA_VERSION,
        "noise_floor": NOISE_FLOOR,
        "base": base,
        "head": head,
        "verdict": verdict,
        "verdict_reasons": reasons,
        "metrics": metrics,
        "idle_by_cause": idle,
        "kernels": _kernel_changes(base_doc, head_doc),
    }


def regression_reasons(result: dict[str, Any], pct: float) -> list[str]:
    """Why HEAD regressed by more than ``pct``: utilization down by > pct points, mean step time up > pct %.

    A criterion whose metric is missing on either side (no GPU activity, no steps) is not applied.
    """
    by_key = {m["key"]: m for m in result.get("metrics", [])}
    reasons: list[str] = []
    util = by_key.get("gpu_utilization")
    if util and util["base"] is not None and util["head"] is not None:
        drop_points = 100.0 * (util["base"] - util["head"])
        if drop_points > pct + _EPSILON:
            reasons.append(
                f"GPU utilization {100 * util['base']:.1f}% -> {100 * util['head']:.1f}% "
                f"({drop_points:.1f} points lower, threshold {pct:g})"
            )
    step = by_key.get("mean_step_ns")
    if step and step["base"] and step["head"] is not None:
        longer_pct = 100.0 * (step["head"] - step["base"]) / step["base"]
        if longer_pct > pct + _EPSILON:
            reasons.append(
                f"mean step time {step['base'] / 1e6:.3f} ms -> {step['head'] / 1e6:.3f} ms "
                f"({longer_pct:.1f}% longer, threshold {pct:g}%)"
            )
    return reasons
