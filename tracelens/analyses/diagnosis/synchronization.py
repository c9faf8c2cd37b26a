"""synchronization: the GPU idles because the host waited for it (the wait and its echo) and then had
nothing queued.

lost_ns = device-mean of ``attribution.devices[].by_cause.sync`` minus its synchronous-copy part
(``sync_copy_ns``, counted under memcpy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...event_names import strip_api_suffix
from ...trace import DRIVER, RUNTIME
from ...units import fmt_ns, plural
from .. import ops
from ..columns import event_columns
from ..names import SYNC, code_mask, is_blocking_sync
from .cause import TOP_NAMES, Cause, Context, Evidence
from .wording import calls, gpu, quote, worst

NAME = "synchronization"

FIXES = {
    "item": {
        "pytorch": "Tensor values read on the host each step (.item(), .cpu(), print(tensor), if tensor:) wait for "
        "the GPU: keep metrics on the GPU and read them every N steps; avoid data-dependent host "
        "control flow.",
        "tensorflow": "Values read on the host each step (.numpy(), float(x)) wait for the GPU: keep metrics on "
        "device and fetch them every N steps.",
        "jax": "Values read on the host each step (float(x), device_get) wait for the GPU: fetch them every N steps.",
        "default": "Small device-to-host reads with a wait drain the GPU queue: read results every N steps.",
    },
    "explicit": {
        "pytorch": "Explicit synchronizations stall the queue: remove torch.cuda.synchronize() from the loop (keep "
        "it only around timing code), use non_blocking=True copies and events instead of device-wide "
        "syncs.",
        "jax": "Avoid block_until_ready() in the loop; fetch results every N steps.",
        "default": "Blocking synchronizations stall the GPU queue: remove per-step device-wide syncs, wait on "
        "events instead.",
    },
}


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(SYNC, 0)) - int(a["sync_copy_ns"]) if a else 0


def device_sync_calls(ctx: Context, device: int) -> list[dict[str, Any]] | None:
    """The blocking calls (by name, the most time first, TOP_NAMES) of the host threads feeding ``device``
    (attribution's ``feeding_threads``); None where they are not all listed. The sentence names one GPU's idle:
    beside it the trace's calls were every GPU's (h100x2: "GPU 1 ... (8 calls, 857 ms)", 4 of them GPU 1's)."""
    a = ctx.attribution.get(device)
    if not a or not a.get("feeding_threads") or a.get("feeding_thread_count", 0) > len(a["feeding_threads"]):
        return None
    cols = event_columns(ctx.trace)
    api = np.flatnonzero(cols.of_kind(RUNTIME, DRIVER))
    rows = api[code_mask(cols.name[api], cols.names, is_blocking_sync)]
    feeding = np.array([p * (1 << 32) + t for p, t in a["feeding_threads"]], np.int64)
    rows = rows[
        np.isin(
            np.asarray(cols.pid[rows], np.int64) * (1 << 32) + np.asarray(cols.tid[rows], np.int64), feeding
        )
    ]
    names, group = np.unique(cols.name[rows], return_inverse=True)
    count = np.bincount(group, minlength=names.size)
    total = np.bincount(
        group, weights=(cols.end[rows] - cols.start[rows]).astype(np.float64), minlength=names.size
    )
    order = sorted(range(names.size), key=lambda i: (-total[i], str(cols.names[names[i]])))[:TOP_NAMES]
    return [
        {
            "name": strip_api_suffix(str(cols.names[names[i]])),
            "count": int(count[i]),
            "total_ns": int(total[i]),
        }
        for i in order
        if names[i] >= 0
    ]


def evidence(ctx: Context) -> Evidence:
    sync = ctx.section("sync")
    item = {k: v for k, v in (sync.get("item_pattern") or {}).items() if k != "per_step"}
    blocking = sync.get("blocking") or {}
    idle = ctx.idle(SYNC)
    # more than one GPU: the calls of the GPU the sentence names (its own feeding threads), not the whole trace's
    device = int(worst(idle)[0]) if len(idle) > 1 else None
    return {
        "idle_by_device": idle,
        "blocking_calls": blocking.get("count"),
        "blocking_ns": blocking.get("total_ns"),
        "top_sync_calls": (blocking.get("by_name") or [])[:TOP_NAMES],
        "device_sync_calls": device_sync_calls(ctx, device) if device is not None else None,
        "item_pattern": item,
        "after_sync_idle_ns": sum(a["after_sync"]["idle_ns"] for a in ctx.attribution.values()),
        # the ops the blocking calls run in (aten::item, ...)
        "sync_ops": ops.diagnosis_ops(ctx.trace).sync_ops,
        "remedy": "item" if item.get("count") else "explicit",  # reads of values (.item()) or explicit syncs
    }


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    by_device = ev.get("idle_by_device") or {}
    device, idle = worst(by_device)
    top = ev.get("device_sync_calls") or ev.get("top_sync_calls") or []
    # The idle includes each wait's echo: what the host launched right after, instead of during, the wait.
    text = f"{gpu(device, len(by_device))} was idle {fmt_ns(idle)} while the host was blocked in, or catching up after, "
    text += (
        f"{quote(top[0]['name'])} ({calls(top[0]['count'])}, {fmt_ns(top[0]['total_ns'])})"
        if top
        else "synchronizing calls"
    )
    item = ev.get("item_pattern") or {}
    # more than one GPU: the reads of the GPU named (item_pattern.by_device), not every GPU's
    per_gpu = item.get("by_device")  # (absent from documents of earlier versions: the trace's count)
    reads = per_gpu.get(device, 0) if len(by_device) > 1 and isinstance(per_gpu, dict) else item.get("count")
    if reads:
        text += f"; {plural(reads, 'small device-to-host read')} waited for the GPU (the .item() pattern)"
        item_ops = item.get("top_ops") or []
        if item_ops:
            text += f", most often in {quote(item_ops[0]['name'])}"
    return text + "."


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost)
