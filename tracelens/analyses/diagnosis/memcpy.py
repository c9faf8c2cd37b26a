"""memcpy: copies that cost GPU time: the host sat in synchronous copies while the GPU idled, or copies ran
with no kernel beside them.

lost_ns = device-mean of ``attribution.devices[].sync_copy_ns`` + ``memcpy.per_device[].exposed_ns``. The
evidence speaks for the GPU with the most exposed copy time, so a sentence naming it uses its own numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...units import fmt_bytes, fmt_ns, fmt_pct, plural
from .. import memcpy as copies
from ..migrations import is_migration_kind
from .cause import Cause, Context, Evidence, by_framework
from .wording import mean_note, worst

if TYPE_CHECKING:  # types only: the document's TypedDicts are not imported by analyze (kimp17)
    from ...document.types import MemcpyDeviceKind, MemcpySmallCopies

NAME = "memcpy"
# A kind's copies are "pageable", "pinned", "synchronous" or "asynchronous" when at least half their copy time
# is: the majority decides what the fix must change.
MOSTLY = 0.5
# Small copies are the problem when at least half the top kind's copies sit in bursts of small copies.
BURST_SHARE = 0.5
# Pinned copies at >= 70% of the link's theoretical bandwidth are as fast as it goes (protocol overhead takes
# the rest): only fewer bytes help.
NEAR_LINK = 0.7

_HOST_READS = (
    "Avoid reading device values on the host inside the step (.numpy(), float(x), jax.device_get) — "
    "each blocks until the GPU finishes."
)
_ONE_ARRAY = "Batch small host<->device transfers into one array per step."
_ON_DEVICE = "Keep state on the device (tf.Variable on GPU, jax arrays) between steps."
FIXES = {
    "pin": {
        "pytorch": "Copies use pageable host memory (staged by the driver, synchronous): DataLoader(pin_memory=True) "
        "or tensor.pin_memory(), then tensor.to(device, non_blocking=True).",
        "tensorflow": "Let tf.data stage input on the device: prefetch_to_device / prefetch(tf.data.AUTOTUNE).",
        "jax": "Stage input with jax.device_put ahead of use from host arrays that stay alive.",
        "default": "Copies use pageable host memory: allocate host buffers with cudaMallocHost/cudaHostAlloc (or "
        "cudaHostRegister) and copy with cudaMemcpyAsync.",
    },
    "async": {
        "pytorch": "Copies are synchronous (the host waits for each): tensor.to(device, non_blocking=True) from "
        "pinned memory, and no .item()/.cpu() inside the step.",
        "tensorflow": _HOST_READS,
        "jax": _HOST_READS,
        "default": "Copies are synchronous: use cudaMemcpyAsync from pinned memory on a non-default stream.",
    },
    "batch": {
        "pytorch": "Many small copies: stack/cat them on the host and copy once, or create tensors directly on the "
        "device (torch.tensor(..., device='cuda')).",
        "tensorflow": _ONE_ARRAY,
        "jax": _ONE_ARRAY,
        "default": "Many small copies: batch them into one larger transfer.",
    },
    "fewer_bytes": {
        "pytorch": "The copies are already pinned and asynchronous and move as fast as the link allows: move fewer "
        "bytes (keep weights/data resident on the GPU instead of offloading, copy in bf16/fp16 or "
        "uint8 and convert on the GPU) or overlap them with compute on a side stream (prefetch the "
        "next layer or batch).",
        "default": "The copies are already pinned and asynchronous and near the link's bandwidth: move fewer bytes "
        "(keep data resident on the GPU, smaller dtypes) or overlap them with compute on another stream.",
    },
    "floor": {
        "pytorch": "Overlap cannot hide these copies: the kernels already run beside them or are too few to cover "
        "them, so the copy time itself is the floor. Move fewer bytes: keep weights/data resident on the "
        "GPU instead of offloading them, copy in bf16/fp16 or uint8 and convert on the GPU.",
        "default": "Overlap cannot hide these copies: the kernels already run beside them or are too few to cover "
        "them, so the copy time itself is the floor. Move fewer bytes: keep data resident on the GPU, "
        "copy smaller dtypes and convert on the GPU.",
    },
    "overlap": {
        "pytorch": "Copies run while no kernel does: prefetch on a side stream (torch.cuda.Stream) with pinned "
        "memory and non_blocking=True so they overlap compute.",
        "tensorflow": "Prefetch to the device (tf.data.experimental.prefetch_to_device) so copies overlap compute.",
        "jax": "Double-buffer device_put so the next batch copies while the current one computes.",
        "default": "Overlap copies with compute: pinned memory, cudaMemcpyAsync on a separate stream.",
    },
    # The memcpy section's checks (memcpy.findings[].remedy) use these two besides the ones above.
    "resident": {
        "pytorch": "Keep tensors on the device between steps; move metrics to the host once per N steps.",
        "tensorflow": _ON_DEVICE,
        "jax": _ON_DEVICE,
        "default": "Keep data resident on the device between kernels.",
    },
    "link": {
        "default": "The copies are already pinned: check the link itself (nvidia-smi -q: PCIe generation and width "
        "in use), pin host buffers on the GPU's NUMA node, and look for copies sharing the link at the "
        "same time.",
    },
    # copies that are unified-memory migrations (.migrations): no copy call to pin, batch or make asynchronous
    "managed": {
        "default": "These copies are unified-memory migrations the driver makes on demand when a kernel or the host "
        "touches managed memory (cudaMallocManaged) that is elsewhere, page by page: prefetch it to where it is "
        "used next (cudaMemPrefetchAsync), advise where it lives (cudaMemAdvise: SetPreferredLocation, "
        "SetReadMostly), or keep data only the GPU uses in cudaMalloc memory.",
    },
    "device_copies": {
        "pytorch": "Device-to-device copies with no compute beside them: avoid materialising copies "
        "(.contiguous(), .clone(), torch.cat in loops); use views and in-place ops.",
        "default": "Device-to-device copies with no compute beside them: avoid the copies (views, in-place ops).",
    },
}
KIND_FIELDS = (
    "kind",
    "count",
    "bytes",
    "duration_ns",
    "exposed_ns",
    "pageable_ns",
    "pinned_ns",
    "sync_ns",
    "async_ns",
    "achieved_bytes_per_s",
    "unknown_bytes_count",
)


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    sync_copy = int(a["sync_copy_ns"]) if a else 0
    return sync_copy + int(ctx.by_device("memcpy", "per_device", "exposed_ns").get(device, 0))


def mostly(part_ns: int, duration_ns: int) -> bool:
    """At least half (:data:`MOSTLY`) of the copy time."""
    return part_ns >= MOSTLY * duration_ns


def remedy(
    top: MemcpyDeviceKind | None,
    link_fraction: float | None,
    small: MemcpySmallCopies | dict[str, Any],
    floor: bool,
) -> str:
    """The fix the copies' own evidence calls for, from the kind with the most exposed time on the GPU with the
    most exposed copy time (``floor``: overlap could not hide it, ``memcpy.copies_are_the_floor``)."""
    if top is None:
        return "async"  # only synchronous-copy idle, no exposed copy time
    duration = top["duration_ns"] or 1
    if is_migration_kind(top["kind"]):
        return "managed"
    if top["kind"] == "DtoD":
        return "device_copies"
    if mostly(top["pageable_ns"], duration):
        return "pin"
    if mostly(top["sync_ns"], duration):
        return "async"
    if (small.get("burst_copy_count") or 0) >= BURST_SHARE * top["count"] and top["kind"] in ("HtoD", "DtoH"):
        return "batch"
    if floor:
        # The kernels already run beside the copies, or too few are left to hide them: only fewer bytes help.
        return "floor"
    if mostly(top["pinned_ns"], duration) and (link_fraction is None or link_fraction >= NEAR_LINK):
        # Pinned, asynchronous and as fast as the link allows (or the link is unknown): only fewer bytes help.
        return "fewer_bytes"
    return "overlap"


def evidence(ctx: Context) -> Evidence:
    memcpy = ctx.section("memcpy")
    sync_copy = sum(a["sync_copy_ns"] for a in ctx.attribution.values())
    per_device = [d for d in memcpy.get("per_device") or [] if d.get("exposed_ns")]
    # The GPU with the most exposed copy time speaks for the cause: its own kinds, counts and bytes, so a
    # sentence naming it uses its numbers (ties: the lowest id).
    worst_device = min(per_device, key=lambda d: (-d["exposed_ns"], d["device"])) if per_device else None
    kinds = sorted(
        (k for k in (worst_device.get("by_kind") if worst_device else None) or [] if k.get("exposed_ns")),
        key=lambda k: (-k["exposed_ns"], k["kind"]),
    )
    top = kinds[0] if kinds else None
    link_fraction = top.get("large_achieved_fraction") if top else None
    kernel_union = {d["id"]: d.get("kernel_union_ns") for d in ctx.done["devices"] or []}
    kernels = kernel_union.get(worst_device["device"]) if worst_device else None
    headroom = (
        copies.overlap_headroom(worst_device["union_ns"], worst_device["exposed_ns"], kernels)
        if worst_device and kernels is not None
        else None
    )
    floor = bool(
        worst_device
        and kernels is not None
        and copies.copies_are_the_floor(worst_device["union_ns"], worst_device["exposed_ns"], kernels)
    )
    return {
        "sync_copy_idle_ns": sync_copy,
        "device_mean_exposed_ns": memcpy.get("device_mean_exposed_ns"),
        "exposed_by_device": {str(d["device"]): d["exposed_ns"] for d in memcpy.get("per_device") or []},
        "device": worst_device["device"] if worst_device else None,
        "by_kind": [{f: k.get(f) for f in KIND_FIELDS} for k in kinds],
        "kernel_union_ns": kernels,
        "overlap_headroom_ns": headroom,
        "link_fraction": link_fraction,
        "remedy": remedy(top, link_fraction, memcpy.get("small_copies") or {}, floor),
    }


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    kinds = ev.get("by_kind") or []
    parts = []
    by_device = ev.get("exposed_by_device") or {}
    if ev.get("device_mean_exposed_ns"):
        # One GPU speaks: the evidence's kinds are that GPU's own (diagnosis picks the most exposed one).
        device = str(ev["device"]) if ev.get("device") is not None else worst(by_device)[0]
        exposed = by_device.get(device, ev["device_mean_exposed_ns"])
        where = f"on GPU {device}, " if len(by_device) > 1 else ""
        text = f"{where}copies ran with no kernel beside them for {fmt_ns(exposed)}"
        if kinds:
            k = kinds[0]
            duration = k["duration_ns"] or 1
            memory = (
                "migrated on demand (unified memory)"
                if is_migration_kind(k["kind"])
                else ""
                if k["kind"] in ("DtoD", "PtoP")
                else "pinned"
                if mostly(k["pinned_ns"], duration)
                else "pageable"
                if mostly(k["pageable_ns"], duration)
                else "of mixed or unknown host memory"
            )
            mode = (
                "asynchronous"
                if mostly(k["async_ns"], duration)
                else "synchronous"
                if mostly(k["sync_ns"], duration)
                else ""
            )
            rate = f" at {fmt_bytes(k['achieved_bytes_per_s'])}/s" if k.get("achieved_bytes_per_s") else ""
            how = " and ".join(x for x in (memory, mode) if x)
            noun = "copy" if k["count"] == 1 else "copies"
            unknown = k.get("unknown_bytes_count") or 0
            size = (
                "unknown size"  # ROCm's Kineto writes copies without bytes
                if unknown >= k["count"]
                else f"{fmt_bytes(k['bytes'])} ({unknown:,} of unknown size)"
                if unknown
                else fmt_bytes(k["bytes"])
            )
            text += f": mostly {k['count']:,} {k['kind']} {noun} of {size}{rate}" + (
                f", {how}" if how else ""
            )
            if ev.get("link_fraction") is not None:
                text += f" ({fmt_pct(ev['link_fraction'])} of the expected bandwidth for large copies)"
        if ev.get("remedy") == "floor" and ev.get("kernel_union_ns") is not None:
            text += f"; its kernels ran {fmt_ns(ev['kernel_union_ns'])} in all"
        parts.append(text)
    if ev.get("sync_copy_idle_ns"):
        parts.append(
            f"the GPU idled {fmt_ns(ev['sync_copy_idle_ns'])} while the host waited in synchronous copies"
        )
    if not parts:
        return "Copies cost GPU time."
    text = "; ".join(parts) + mean_note(cause, by_device)
    return text[0].upper() + text[1:] + "."


# ---------------------------------------------------------------------------------------------- the checks
# The memcpy section's checks (``memcpy.findings[]``, data only: id, evidence, remedy) worded for the renderers.


def _pageable(ev: dict[str, Any]) -> str:
    n = ev["pageable_count"]
    return (
        f"{n} {'copy uses' if n == 1 else 'copies use'} pageable host memory (staged through a driver buffer, "
        "synchronous to the host, about half of pinned bandwidth)"
    )


def _async_pageable(ev: dict[str, Any]) -> str:
    n = ev["async_pageable_count"]
    return (
        f"{plural(n, 'asynchronous copy call')} {'uses' if n == 1 else 'use'} pageable memory: "
        f"{'it runs' if n == 1 else 'they run'} synchronously anyway"
    )


def _sync(ev: dict[str, Any]) -> str:
    n = ev["sync_count"]
    return (
        f"{n:,} {'copy was' if n == 1 else 'copies were'} issued by synchronous copy calls "
        f"({fmt_ns(ev['sync_ns'])} of copy time) — the host waits for each"
    )


def _small_storm(ev: dict[str, Any]) -> str:
    n = ev["burst_count"]
    return (
        f"{n} burst{'' if n == 1 else 's'} of small (< {fmt_bytes(ev['threshold_bytes'])}) copies, "
        f"{ev['burst_copy_count']} copies in all"
    )


def _small_dtoh(ev: dict[str, Any]) -> str:
    return f"{ev['small_count']} small device-to-host copies (scalars read back on the host?)"


def _exposed(ev: dict[str, Any]) -> str:
    return (
        f"GPU {ev['device']}: copies not overlapped by any kernel take "
        f"{fmt_pct(ev['exposed_ns'] / ev['span_ns'])} of the span"
    )


def _low_bandwidth(ev: dict[str, Any]) -> str:
    return (
        f"GPU {ev['device']} {ev['kind']}: copies >= {fmt_bytes(ev['min_bytes'])} reach "
        f"{ev['achieved_bytes_per_s'] / ev['expected_bytes_per_s']:.0%} of {ev['expected_link']} "
        f"({ev['expected_source']})"
    )


CHECK_SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    copies.PAGEABLE_CHECK: _pageable,
    copies.ASYNC_PAGEABLE_CHECK: _async_pageable,
    copies.SYNC_CHECK: _sync,
    copies.SMALL_STORM_CHECK: _small_storm,
    copies.SMALL_DTOH_CHECK: _small_dtoh,
    copies.EXPOSED_CHECK: _exposed,
    copies.LOW_BANDWIDTH_CHECK: _low_bandwidth,
}


def check_sentence(check: dict[str, Any]) -> str:
    """A memcpy check as plain text (its id when this version cannot word it: a document of another version)."""
    build = CHECK_SENTENCES.get(str(check.get("id")))
    evidence = check.get("evidence")
    if build is None or not isinstance(evidence, dict):
        return str(check.get("message") or check.get("id"))
    try:
        return build(evidence)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):  # another version's evidence: never crash
        return str(check.get("message") or check.get("id"))


def check_fix(check: dict[str, Any], framework: str) -> str | None:
    """The fix for a memcpy check, from the one memcpy fix table by its remedy and the framework."""
    table = FIXES.get(str(check.get("remedy")))
    return by_framework(framework, table) if table else check.get("fix")


# The replay models pinned, asynchronous copies (replay/remedies.py): the `pin` and `async` fixes. Fewer bytes,
# device-side copies, batching and overlap on another stream are other changes, whose gain it does not predict.
UNREPLAYED = frozenset({"device_copies", "batch", "floor", "fewer_bytes", "overlap", "managed"})
CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost, unreplayed=UNREPLAYED)
