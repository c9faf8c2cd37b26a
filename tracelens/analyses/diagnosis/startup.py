"""startup: one-time work inside the GPU window (context and module loading, library initialization,
compilation, first calls, warm-up allocations; the rules are in ``analyses/startup.py``).

lost_ns = device-mean of ``attribution.devices[].by_cause.startup``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...units import fmt_ns, fmt_pct
from .. import startup as one_time
from ..attribution import feeding_threads, thread_row_mask
from ..columns import event_columns, thread_key
from ..names import STARTUP
from .cause import ONLY, Cause, Context, Evidence
from .wording import calls, quote

NAME = "startup"
LISTED_ITEMS = 3  # items a sentence names: the largest few say what the start-up was
SAME_IDLE = (
    0.01  # nested one-time rows (an op and the call inside it) whose idle agrees within 1% are one item
)

FIX = {
    "pytorch": "The profile includes one-time start-up work: profile the steady state, e.g. "
    "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=2, active=3)) and "
    "prof.step() each iteration, or nsys --capture-range=cudaProfilerApi with "
    "torch.cuda.profiler.start() after warm-up. Keep compiled artefacts between runs "
    "(torch.compile's FX graph and autotuning caches, TORCHINDUCTOR_CACHE_DIR).",
    "tensorflow": "The profile includes one-time start-up work (tf.function tracing, XLA compilation, cuDNN "
    "autotuning): start the profiler after the first steps (tf.profiler.experimental.start after "
    "warm-up, or the Keras TensorBoard callback's profile_batch='10,20').",
    "jax": "The profile includes one-time start-up work (tracing and XLA compilation): start jax.profiler after "
    "a warm-up step and keep compiled executables between runs "
    "(jax.config.update('jax_compilation_cache_dir', ...)).",
    "default": "The profile includes one-time start-up work (context creation, module loading, library "
    "initialization): profile the steady state, e.g. nsys --capture-range=cudaProfilerApi with "
    "cudaProfilerStart() after warm-up, or nsys --delay.",
}


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(STARTUP, 0)) if a else 0


def evidence(ctx: Context) -> Evidence:
    work = one_time.one_time_work(ctx.trace)
    items: list[dict[str, Any]] = []
    one_time_rows = work.rows  # device_items reads the thread mask at these rows only
    for device, busy in ctx.busy.items():
        on_threads = on_feeding_threads(ctx, device, one_time_rows)
        for item in one_time.device_items(ctx.trace, busy, on_threads):
            items.append({"device": device, **item})
    items.sort(key=lambda i: (-i["idle_ns"], i["name"]))
    return {
        "idle_by_device": ctx.idle(STARTUP),
        "items": items[: one_time.TOP_ITEMS],
        "first_step_ns": work.first_step_ns,
        "later_step_median_ns": work.later_step_median_ns,
        "slow_first_step": work.slow_first_step,
    }


def on_feeding_threads(ctx: Context, device: int, rows: np.ndarray) -> np.ndarray:
    """Boolean per event row: those of ``rows`` (ascending event rows) on a thread feeding the device
    (``attribution.feeding_threads``; ``thread_row_mask`` with ``among=rows``). The threads are the ones the
    attribution section lists for the device where it lists them all (up to 64), so that neither the host rows
    nor the launch pairs are read again for them; else found again."""
    entry = ctx.attribution.get(device)
    if entry is None or entry["feeding_thread_count"] != len(entry["feeding_threads"]):
        threads, _ = feeding_threads(ctx.trace, device)
        return thread_row_mask(ctx.trace, threads, among=rows)
    cols = event_columns(ctx.trace)
    pid_tid = np.array(entry["feeding_threads"], np.int64).reshape(-1, 2)
    keys = thread_key(pid_tid[:, 0], pid_tid[:, 1])
    out = np.zeros(cols.pid.size, bool)
    out[rows[np.isin(thread_key(cols.pid[rows], cols.tid[rows]), keys)]] = True
    return out


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    parts: list[str] = []
    listed: list[tuple[str, int]] = []
    for item in ev.get("items") or []:
        # Nested one-time rows (an op and the call inside it) cover the same idle time: name the outer one.
        if any(
            reason == item["reason"] and abs(idle - item["idle_ns"]) <= SAME_IDLE * idle
            for reason, idle in listed
        ):
            continue
        listed.append((item["reason"], item["idle_ns"]))
        name, idle = quote(item["name"]), fmt_ns(item["idle_ns"])
        if item["reason"] in ("first_call", "first_api"):
            parts.append(
                f"the first {name} ({fmt_ns(item['host_ns'])}; later calls "
                f"{fmt_ns(item.get('later_median_ns'))})"
            )
        elif item["reason"] == "long_launch":
            parts.append(
                f"{name} calls of over {fmt_ns(one_time.LONG_LAUNCH_NS)} while the GPU idled (kernel "
                f"modules loaded on first use, {idle})"
            )
        elif item["reason"] == "first_step":
            parts.append(f"{name}, seen only in the first step ({idle})")
        elif item["reason"] == "allocation":
            parts.append(f"{name} ({calls(item['count'])} while warming up, {idle})")
        else:
            parts.append(f"{name} ({idle})")
        if len(parts) == LISTED_ITEMS:
            break
    text = f"One-time work filled {fmt_ns(cause['lost_ns'])} of GPU idle time ({fmt_pct(cause['share'])} of the span)"
    if parts:
        text += ": " + "; ".join(parts)
    if ev.get("slow_first_step"):
        text += (
            f". The first step took {fmt_ns(ev.get('first_step_ns'))}, later steps "
            f"{fmt_ns(ev.get('later_step_median_ns'))}"
        )
    return text + "."


# Ranked by its lost time even where a replay exists: its fix takes the one-time work out of the profiled window
# (profile after warm-up), which gives back exactly the idle time it caused, and it is no per-step cost (a step
# prediction excludes the first step by construction).
CAUSE = Cause(NAME, evidence, {ONLY: FIX}, sentence, device_lost=device_lost, ranked_by_gain=False)
