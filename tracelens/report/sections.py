"""What the terminal and the markdown renderer both read from the document, before either draws it.

Renderer-neutral: each function takes the document (typed on ``document/types.py``) and returns plain values or
plain text; the renderers escape and lay them out for their medium. Read by both: counts (:func:`num`), the
producer, the busy sentence, the primary and how it is headed (from the verdict registry), the finding sentences
and caveats, occupancy's device-mean loss and main limiter, the GPU count. Read by one but computed, not drawn,
so kept here: the summary's figures and the causes after the primary (terminal), copy bandwidth and the host
time per step (terminal), the host category order and the per-step digest (markdown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar, cast

from ..analyses.diagnosis import VERDICTS
from ..document import device_gpu_equivalents, summary_of
from ..document.types import Cause, Device, Diagnosis, Document, Memcpy, Source, StepRow
from . import findings
from .compute import fmt_flops
from .findings import utilization_sentence
from .units import fmt_bytes, fmt_ns, fmt_pct

Row = TypeVar("Row")


def num(value: Any) -> str:
    """A count or a plain number: ``1,234``, ``1,234.5``, ``-`` when missing."""
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def objects(rows: Iterable[Row] | None) -> list[Row]:
    """The entries of a list section that are objects (a document saved by another version may hold others)."""
    return [r for r in rows or [] if isinstance(r, dict)]


# ---------------------------------------------------------------------------------------------- headline


def producer(src: Source | dict[str, Any]) -> str:
    """ "PyTorch 2.6" from ``source.producer`` and ``source.producer_version`` (either may be missing)."""
    return " ".join(x for x in (src.get("producer"), src.get("producer_version")) if x)


def copied_bytes(part: Mapping[str, Any]) -> int | None:
    """A memcpy block's ``bytes`` (the section, or one of its ``by_kind`` entries), None where none of its copies
    has a recorded size (ROCm's Kineto copies): printed "-", not "0 B"."""
    count, unknown = part.get("count"), part.get("unknown_bytes_count")
    if unknown is None and isinstance(part.get("by_kind"), list):
        unknown = sum(int(k.get("unknown_bytes_count") or 0) for k in part["by_kind"] if isinstance(k, dict))
    return None if count and unknown == count else part.get("bytes")


def busy_sentence(doc: Document) -> str:
    """The headline's utilization: "GPU busy 99.3%: kernels 2.3%, …" (``findings.utilization_sentence``)."""
    return utilization_sentence(cast(dict[str, Any], summary_of(doc))) or "GPU busy -"


# Labels of the summary's figures, by key without its "device_mean_"/"gpu_" prefix and "_ns" suffix; a key not
# listed is shown by its own name (so a figure added to the summary is never left out).
SUMMARY_LABELS = {
    "device_count": "GPUs",
    "utilization": "GPU utilization",
    "utilization_by_kind": "busy by kind",
    "busy": "busy",
    "span": "span",
    "kernel_count": "kernels",
    "kernel": "kernel time",
    "kernel_names": "kernel names",
    "memcpy_count": "copies",
    "memcpy": "copy time",
    "memcpy_bytes": "copied",
    "memcpy_exposed": "copies not overlapped",
    "memset": "memset time",
    "steps": "steps",
    "step_host": "host time per step",
    "primary_cause": "primary cause",
    "primary_lost": "lost to it",
    "idle_by_cause": "GPU idle by cause",
    "flops": "FLOPs",
    "mfu": "MFU",
}


def summary_base(key: str) -> str:
    return key.removeprefix("device_mean_").removeprefix("gpu_").removesuffix("_ns")


def summary_value(key: str, value: Any, parent: str = "") -> str:
    """One figure of the document's ``summary`` as the terminal prints it (``parent``: the key of the object
    it is in, e.g. ``steps``), by the key conventions of docs/json.md."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if key == "mfu" or "utilization" in key or "utilization" in parent:
        return fmt_pct(value)
    if key == "flops":
        return fmt_flops(value)
    if key.endswith("_ns") or parent.endswith("_ns") or "idle_by_cause" in parent:
        return fmt_ns(value)
    if "bytes" in key:
        return fmt_bytes(value)
    return num(value)


def summary_parts(doc: Document) -> list[str]:
    """Every figure of the document's ``summary`` (the JSON output's headline) as "label value" texts."""
    parts = []
    for key, value in summary_of(doc).items():
        if value is None or value == {}:
            continue
        label = SUMMARY_LABELS.get(summary_base(key), key.replace("_", " "))
        if isinstance(value, dict):
            inner = ", ".join(
                f"{summary_base(k).replace('_', ' ')} {summary_value(k, v, key)}"
                for k, v in value.items()
                if v is not None
            )
            parts.append(f"{label}: {inner}")
        else:
            parts.append(f"{label} {summary_value(key, value)}")
    return parts


def summary_means(doc: Document) -> bool:
    """Whether the summary's times are means over several GPUs (the headline says so)."""
    devices = doc.get("devices") or []
    return any(key.startswith("device_mean_") for key in summary_of(doc)) and len(devices) > 1


# ---------------------------------------------------------------------------------------------- diagnosis

# How a renderer heads the primary: a cause (its lost time and fix), ``healthy`` (the verdict that nothing is
# worth fixing) or ``cannot_answer`` (the verdict that the trace cannot answer; its fix says how to record).
PrimaryKind = Literal["cause", "healthy", "cannot_answer"]
_VERDICT_KINDS: dict[str, PrimaryKind] = {
    v.name: "healthy" if v.answerable else "cannot_answer" for v in VERDICTS
}


def primary_of(doc: Document) -> Cause | None:
    diagnosis = doc.get("diagnosis")
    primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
    return primary if isinstance(primary, dict) else None


def primary_kind(primary: Cause) -> PrimaryKind:
    """Which heading the primary gets, from the diagnosis registry (``analyses/diagnosis`` ``VERDICTS``)."""
    return _VERDICT_KINDS.get(str(primary.get("cause")), "cause")


def sentence(cause: Cause, diagnosis: Diagnosis | None = None) -> str:
    """The finding as one sentence with its numbers (:func:`findings.sentence`, which the cause registry's
    sentence functions share: they read the finding and the diagnosis as plain JSON objects)."""
    return findings.sentence(cast(dict[str, Any], cause), cast(dict[str, Any], diagnosis))


def caveats(diagnosis: Diagnosis | None) -> list[str]:
    """The non-blocking completeness problems as sentences (:func:`findings.caveats`)."""
    return findings.caveats(cast(dict[str, Any], diagnosis))


def memcpy_checks(memcpy: Memcpy, framework: str | None) -> list[tuple[str, str | None]]:
    """The memcpy section's checks as (sentence, fix) pairs (:func:`findings.memcpy_checks`)."""
    return findings.memcpy_checks(cast(dict[str, Any], memcpy), framework)


def other_causes(diagnosis: Diagnosis, primary: Cause) -> list[Cause]:
    """The causes after the primary: ``causes[1:]``, unless the primary is a verdict that is not a cause and
    so not ``causes[0]`` (the trace cannot answer)."""
    causes = diagnosis.get("causes") or []
    return objects(causes if primary_kind(primary) == "cannot_answer" else causes[1:])


# ---------------------------------------------------------------------------------------------- sections


def gpu_count(doc: Document) -> int:
    """The document's GPUs (at least 1): section totals that sum the GPUs are shown as their mean."""
    return len(doc.get("devices") or []) or 1


def occupancy_unmeasured(device: Any) -> bool:
    """An ``occupancy.per_device`` row that measured nothing: no kernel's occupancy computed and no SM count to
    judge grid fill by (its 0 ns are no measurement; with an SM count the under-filled loss is measured)."""
    return (
        isinstance(device, Mapping) and device.get("computed_count") == 0 and device.get("sm_count") is None
    )


def occupancy_all_unmeasured(occ: Any) -> bool:
    """Every GPU of the ``occupancy`` section measured nothing (:func:`occupancy_unmeasured`)."""
    devices = (occ.get("per_device") if isinstance(occ, Mapping) else None) or []
    return bool(devices) and all(occupancy_unmeasured(d) for d in devices)


def gpu_equivalents_of(doc: Document) -> float:
    """The document's GPUs counted by GPU time (n_eff = Σ span_ns / the union of their windows, at least 1: the
    number of GPUs where they share one window; docs/analyses.md "GPU-time weighting"): the divisor of a
    section total shown per GPU, as the diagnosis divides its causes' losses."""
    devices = doc.get("devices") or []
    return max(device_gpu_equivalents(cast(list[Mapping[str, Any]], devices)), 1.0) if devices else 1.0


def device_mean(total: Any, gpus: float) -> float | None:
    """A section total over the GPUs per GPU: ``total / gpus`` (n_eff, :func:`gpu_equivalents_of`)."""
    return total / gpus if isinstance(total, (int, float)) else None


def main_limiter(limiter_ns: dict[str, int] | None) -> str | None:
    """The occupancy limiter with the most kernel time on a GPU (None when none has any)."""
    limiter = limiter_ns or {}
    return max(limiter, key=lambda k: limiter[k]) if limiter and any(limiter.values()) else None


def bandwidth(nbytes: Any, ns: Any) -> str:
    """Bytes over a duration as "9.8 GiB/s" ("-" without both)."""
    return f"{fmt_bytes(nbytes / (ns / 1e9))}/s" if nbytes and ns else "-"


def device_label(device: Device) -> Any:
    """A GPU's id, or ``rank:id`` in a run document (device ids repeat across ranks)."""
    return f"{device['rank']}:{device.get('id')}" if device.get("rank") is not None else device.get("id")


# Host categories in the order the step table lists them (any other after them, in the document's order).
HOST_ORDER = ("startup", "sync", "input", "launch", "cpu", "other")


def ordered_host(keys: Iterable[str]) -> list[str]:
    keys = list(keys)
    return [k for k in HOST_ORDER if k in keys] + [k for k in keys if k not in HOST_ORDER]


def step_host_means(doc: Document) -> list[tuple[str, float]]:
    """Mean host time per category per step, from ``steps.summary.host_ns``."""
    steps = doc.get("steps")
    summary = steps.get("summary") if isinstance(steps, dict) else None
    count = steps.get("count") if isinstance(steps, dict) else None
    host = summary.get("host_ns") if isinstance(summary, dict) else None
    if not isinstance(host, dict) or not count:
        return []
    return [(k, v / count) for k, v in host.items() if isinstance(v, (int, float))]


STEP_TABLE_ROWS = 50  # more steps than this are summarized (percentiles, outliers, slowest), not listed
SLOWEST_STEPS = 10


def step_digest(listed: list[StepRow]) -> dict[str, Any]:
    """Duration percentiles (linear interpolation), Tukey outliers (longer than Q3 + 1.5 × IQR) and the
    slowest steps of the listed steps (docs/json.md, "Markdown and terminal output")."""
    import numpy as np

    durations = np.array([r.get("duration_ns") or 0 for r in listed], dtype=np.float64)
    q1, p50, q3, p90, p99 = np.percentile(durations, [25, 50, 75, 90, 99])
    fence = q3 + 1.5 * (q3 - q1)
    by_length = sorted(range(len(listed)), key=lambda i: (-durations[i], i))
    return {
        "p50_ns": float(p50),
        "p90_ns": float(p90),
        "p99_ns": float(p99),
        "max_ns": float(durations.max()),
        "fence_ns": float(fence),
        "outliers": [listed[i] for i in range(len(listed)) if durations[i] > fence],
        "slowest": [listed[i] for i in by_length[:SLOWEST_STEPS]],
    }
