"""low_occupancy: SM time left empty by the user's own launches (under-filled grids, block shapes that cap
occupancy); register- or shared-memory-limited kernels are not counted.

lost_ns = ``occupancy.lost_ns`` / n_eff = device-mean of ``occupancy.per_device[].lost_ns`` (GPU-time weighted,
docs/analyses.md).
"""

from __future__ import annotations

from typing import Any

from ...units import fmt_ns, fmt_pct
from .cause import TOP_NAMES, Cause, Context, Evidence
from .wording import calls, quote

NAME = "low_occupancy"

FIXES = {
    "under_filled": {
        "pytorch": "Launches with fewer blocks than the GPU has SMs leave SMs idle: bigger batches, fuse small ops "
        "(torch.compile), or for your own kernels a grid of at least one block per SM (split the work "
        "finer).",
        "tensorflow": "Launches leave SMs idle: bigger batches, XLA fusion (jit_compile=True).",
        "jax": "Launches leave SMs idle: bigger batches, let XLA fuse (jax.jit).",
        "default": "Launches with fewer blocks than SMs leave SMs idle: launch at least one block per SM "
        "(split the work finer, bigger problems per launch).",
    },
    "block_shape": {
        "default": "Kernels whose block shape caps their occupancy (tiny blocks hit the blocks-per-SM limit, "
        "partial warps waste lanes): use blocks of 128-512 threads, a multiple of 32.",
    },
}
KERNEL_FIELDS = (
    "name",
    "device",
    "count",
    "total_ns",
    "lost_ns",
    "sm_fill",
    "grid_blocks",
    "threads_per_block",
    "block_shape_limited",
    "context_sm_count",
)


def device_lost(ctx: Context, device: int) -> int:
    return int(ctx.by_device("occupancy", "per_device", "lost_ns").get(device, 0))


def evidence(ctx: Context) -> Evidence | None:
    occupancy = ctx.done["occupancy"]
    if not isinstance(occupancy, dict) or occupancy.get("lost_ns") is None:
        return None
    # Device-means, like lost_ns, so the parts add up to it.
    under = int(round(occupancy.get("under_filled_lost_ns", 0) / ctx.n_eff))
    shape = int(round(occupancy.get("block_shape_lost_ns", 0) / ctx.n_eff))
    per_device = occupancy.get("per_device") or []
    return {
        "lost_by_device": {str(d["device"]): d["lost_ns"] for d in per_device},
        "under_filled_lost_ns": under,
        "block_shape_lost_ns": shape,
        "sm_count": {str(d["device"]): d["sm_count"] for d in per_device},
        "top_kernels": [
            {f: k.get(f) for f in KERNEL_FIELDS}
            for k in (occupancy.get("top_low_occupancy_kernels") or [])[:TOP_NAMES]
        ],
        "register_or_shared_limited_ns": sum(d.get("register_or_shared_limited_ns", 0) for d in per_device),
        "library_under_filled_ns": sum(d.get("library_under_filled_ns", 0) for d in per_device),
        "remedy": "block_shape" if shape > under else "under_filled",  # whichever loss is larger
    }


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    text = f"Kernels left {fmt_ns(cause['lost_ns'])} of GPU time with SMs empty ({fmt_pct(cause['share'])} of the span)"
    kernels = ev.get("top_kernels") or []
    under = [k for k in kernels if not k.get("block_shape_limited")]
    shaped = [k for k in kernels if k.get("block_shape_limited")]
    parts = []
    if ev.get("under_filled_lost_ns"):
        sms = sorted({v for v in (ev.get("sm_count") or {}).values() if v})
        sm_list = "/".join(str(s) for s in sms) or "?"
        # kernels of a CUDA green context may use its SMs only: judged against those, and said so
        green = sorted({k["context_sm_count"] for k in under if k.get("context_sm_count")})
        all_green = bool(green) and all(k.get("context_sm_count") for k in under)
        green_list = "/".join(str(s) for s in green)
        if all_green:
            limit = f"their CUDA green context's {green_list} SMs"
        elif green:
            limit = f"the SMs they may use (the GPU's {sm_list}; {green_list} in a CUDA green context)"
        else:
            limit = f"the GPU's {sm_list} SMs"
        part = f"{fmt_ns(ev['under_filled_lost_ns'])} from launches with fewer blocks than {limit}"
        notes = []
        if under and under[0].get("grid_blocks") is not None:
            example = f"e.g. {quote(under[0]['name'])}, {calls(round(under[0]['grid_blocks']), 'block')}"
            if green and not all_green and under[0].get("context_sm_count"):
                example += f" in a green context of {under[0]['context_sm_count']} SMs"
            notes.append(example)
        if all_green:
            notes.append(f"the GPU has {sm_list} SMs")
        if notes:
            part += f" ({'; '.join(notes)})"
        parts.append(part)
    if ev.get("block_shape_lost_ns"):
        part = f"{fmt_ns(ev['block_shape_lost_ns'])} from block shapes that cap occupancy"
        if shaped:
            part += f" (e.g. {quote(shaped[0]['name'])}, {shaped[0]['threads_per_block']} threads per block)"
        parts.append(part)
    return text + (": " + "; ".join(parts) if parts else "") + "."


CAUSE = Cause(NAME, evidence, FIXES, sentence, device_lost=device_lost)
