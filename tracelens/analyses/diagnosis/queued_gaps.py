"""queued_gaps: inside CUDA/HIP graph replays, the GPU idles before an op it already had queued (the graph launch had
returned more than ``attribution.QUEUED_AFTER_NS`` before), so no host-side change fills the gap: the GPU's own cost
between the graph's ops (short kernels, dependencies between its nodes or streams).

lost_ns = device-mean of ``attribution.devices[].by_cause.queued``.

Why a cause of its own (docs/analyses.md, "attribution"): these gaps were split among the host's categories by what
the host happened to do meanwhile. A host blocked in cudaStreamSynchronize while a graph replay of 8 µs kernels ran
with 8 µs gaps put 51% of the span under `synchronization` ("remove torch.cuda.synchronize()"), while the replay
predicted that removing the waits saves 4% (HTA calls such gaps "kernel wait", not host wait); on the recorded H200
graph replay (fixtures/gpu/pairs/launch_after) 7.6% of the span went to `synchronization` that way, and the replay
predicted no gain from removing the waits.
"""

from __future__ import annotations

from typing import Any

from ...units import fmt_ns, plural
from ..names import QUEUED
from .cause import ONLY, Cause, Context, Evidence
from .wording import gpu, mean_note, worst

NAME = "queued_gaps"

FIXES = {
    ONLY: {
        "pytorch": "The GPU idled inside CUDA graph replays it already had queued: the host had handed each replay "
        "over, so neither less host work nor fewer waits fills these gaps. They are the GPU's own cost between the "
        "graph's ops (many short kernels, dependencies between nodes or streams): fewer, larger kernels in the "
        "graph (fuse them with torch.compile, bigger batches) leave fewer gaps; check that no other process shares "
        "the GPU.",
        "default": "The GPU idled inside graph replays it already had queued: the host had handed each replay over, "
        "so neither less host work nor fewer waits fills these gaps. They are the GPU's own cost between the "
        "graph's ops (many short kernels, dependencies between nodes or streams): fuse short kernels into fewer, "
        "larger ones; check that no other process shares the GPU.",
    }
}


def device_lost(ctx: Context, device: int) -> int:
    a = ctx.attribution.get(device)
    return int(a["by_cause"].get(QUEUED, 0)) if a else 0


def evidence(ctx: Context) -> Evidence:
    idle = ctx.idle(QUEUED)
    count = sum(int((a.get("queued") or {}).get("count", 0)) for a in ctx.attribution.values())
    return {
        "idle_by_device": idle,
        "gap_count": count,
        "mean_gap_ns": sum(idle.values()) / count if count else None,
        "share_of_idle": ctx.mean(idle) / ctx.idle_total() if ctx.idle_total() else None,
    }


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    by_device = ev.get("idle_by_device") or {}
    device, idle = worst(by_device)
    text = (
        f"{gpu(device, len(by_device))} was idle {fmt_ns(idle)} in {plural(ev.get('gap_count') or 0, 'gap')}"
    )
    if ev.get("mean_gap_ns") is not None:
        text += f" ({fmt_ns(ev['mean_gap_ns'])} on average)"
    text += (
        " inside graph replays, before ops it already had queued (their graph launch had returned before each gap "
        "began): the host was not what held them back"
    )
    return text + mean_note(cause, by_device) + "."


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost)
