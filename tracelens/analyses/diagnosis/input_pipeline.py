"""input_pipeline: the GPU idles while the training thread waits for the next batch.

lost_ns = device-mean of ``attribution.devices[].by_cause.input``. Without GPU activity (:func:`host_view`):
host time attributed to ``input`` inside the steps (over the whole host span when the trace has no steps), on
the step threads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...trace import Trace
from ...units import fmt_ns, fmt_pct
from ..attribution import host_rows
from ..host_split import priority_split
from ..names import CAUSES as HOST_CATEGORIES
from ..names import INPUT
from ..steps import step_threads
from .cause import Cause, Context, Evidence, by_framework, steps_summary, top_host_names
from .wording import gpu, mean_note, quote, worst

NAME = "input_pipeline"

# The loader the top input names show picks the fix (evidence `loader`).
FIXES = {
    "single_process": {
        "pytorch": "The DataLoader loads every batch on the training thread (num_workers=0): use "
        "DataLoader(num_workers=N>0, pin_memory=True, persistent_workers=True, prefetch_factor=2-4).",
        "default": "Batches are loaded on the training thread: load them in background workers.",
    },
    "multi_process": {
        "pytorch": "The DataLoader's workers do not keep up: more workers (num_workers), prefetch_factor=4, "
        "persistent_workers=True, and cheaper per-sample work (decode/augment on the GPU, e.g. DALI, "
        "or pre-processed data).",
        "default": "The loader's workers do not keep up: more workers, deeper prefetch, cheaper per-sample work.",
    },
    "tf_data": {
        "tensorflow": "Overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), "
        "map(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets, interleave() file "
        "reads.",
        "default": "Overlap input with compute: prefetch and parallelise the tf.data pipeline (AUTOTUNE).",
    },
    "other": {
        "pytorch": "Feed the GPU faster: DataLoader(num_workers=N>0, pin_memory=True, prefetch_factor=2-4, "
        "persistent_workers=True); move decoding/augmentation off the training loop.",
        "tensorflow": "Overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), "
        "map(..., num_parallel_calls=tf.data.AUTOTUNE), cache() small datasets.",
        "jax": "Prefetch batches onto the device ahead of the step (e.g. a background thread with "
        "jax.device_put) and parallelise the input pipeline (tf.data AUTOTUNE / grain workers).",
        "default": "The GPU waits for input: prefetch and parallelise data loading so the next batch is ready.",
    },
}


def loader_kind(names: list[str]) -> str:
    """The remedy: which loader the top input names show."""
    text = " ".join(names)
    if "_SingleProcessDataLoaderIter" in text:
        return "single_process"
    if "_MultiProcessingDataLoaderIter" in text:
        return "multi_process"
    if "Iterator" in text:
        return "tf_data"
    return "other"


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(INPUT, 0)) if a else 0


def evidence(ctx: Context) -> Evidence:
    idle = ctx.idle(INPUT)
    top = top_host_names(ctx.trace, INPUT)
    steps = steps_summary(ctx.done)
    host_ns = steps["summary"].get("host_ns") or {}
    return {
        "idle_by_device": idle,
        "share_of_idle": ctx.mean(idle) / ctx.idle_total() if ctx.idle_total() else None,
        "top_input_ranges": top,
        "input_per_step_ns": host_ns[INPUT] / steps["count"] if steps["count"] and INPUT in host_ns else None,
        "steps_input_share": (steps["summary"].get("host_share") or {}).get(INPUT),
        "loader": loader_kind([t["name"] for t in top]),
    }


def host_view(trace: Trace, done: dict[str, Any], framework: str) -> tuple[list[dict[str, Any]], int]:
    """Without GPU activity: ``([finding] or [], host span)``."""
    host = done.get("host") or {}
    span = int(host.get("span_ns") or 0)
    steps = done.get("steps") or {}
    summary = steps.get("summary")
    if summary:
        lost = summary["host_ns"][INPUT]
        ev: dict[str, Any] = {
            "steps": steps["count"],
            "step_mean_ns": summary["mean_ns"],
            "input_share_of_steps": summary["host_share"][INPUT],
        }
    else:
        rows = host_rows(trace)
        if rows.row.size == 0:
            return [], span
        lo, hi = int(rows.starts().min()), int(rows.ends().max())
        split, _ = priority_split(np.array([lo]), np.array([hi]), rows, step_threads(trace))
        lost = int(split[0, HOST_CATEGORIES.index(INPUT)])
        ev = {"steps": 0}
    top = top_host_names(trace, INPUT)
    ev["top_input_ranges"] = top
    ev["loader"] = loader_kind([t["name"] for t in top])
    ev["note"] = "no GPU activity in the trace: host-side view only"
    lost_ns = int(round(lost))
    cause = {
        "cause": NAME,
        "lost_ns": lost_ns,
        "share": lost_ns / span if span > 0 else 0.0,
        "evidence": ev,
        "fix": by_framework(framework, FIXES[ev["loader"]]),
    }
    return [cause], span


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    top = ev.get("top_input_ranges") or []
    if "idle_by_device" not in ev:  # no GPU in the trace: the host-side view
        where = f" in {quote(top[0]['name'])}" if top else ""
        return (
            f"The training thread waited for input{where} for {fmt_ns(cause['lost_ns'])}, "
            f"{fmt_pct(cause['share'])} of {'step' if ev.get('steps') else 'host'} time (no GPU in this trace)."
        )
    by_device = ev.get("idle_by_device") or {}
    device, idle = worst(by_device)
    text = f"{gpu(device, len(by_device))} was idle {fmt_ns(idle)}"
    if ev.get("share_of_idle") is not None and len(by_device) == 1:  # several GPUs: in the mean note
        text += f", {fmt_pct(ev['share_of_idle'])} of its idle time,"
    text += (
        f" while the training thread was in {quote(top[0]['name'])}"
        if top
        else " while the host waited for input"
    )
    if ev.get("input_per_step_ns") is not None:
        text += f", {fmt_ns(ev['input_per_step_ns'])} per step"
    return text + mean_note(cause, by_device) + "."


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost, remedy_key="loader")
