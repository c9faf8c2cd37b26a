"""The bandwidth the memcpy remedy gives a pinned host<->device copy, per direction: what this trace's own pinned
copies reached, else a fraction of the device's host link (``gpu_specs``)."""

from __future__ import annotations

import numpy as np

from ..analyses.columns import event_columns
from ..gpu_specs import links_of_device
from ..trace import Trace
from .call_names import lower_is, text_mask
from .graph import Graph

PINNED_LINK_FRACTION = 0.8
PINNED_MIN_BYTES = 1024 * 1024  # pinned copies at least this big measure the pinned bandwidth


def pinned_bandwidth(g: Graph, trace: Trace) -> tuple[dict[str, float], str]:
    """Bytes/s a pinned copy reaches per direction: measured on this trace's pinned copies of at least
    PINNED_MIN_BYTES, else PINNED_LINK_FRACTION of the device's host link."""
    rows = g.op_row[g.op_is_copy]
    out: dict[str, float] = {}
    how = []
    if rows.size:
        nbytes = g.op_bytes[g.op_is_copy]
        cols = event_columns(trace)
        dur = cols.end[rows] - cols.start[rows]
        is_pinned = lower_is("pinned")
        pinned = (
            (
                text_mask(trace.take("src_kind", rows), is_pinned)
                | text_mask(trace.take("dst_kind", rows), is_pinned)
            )
            & (nbytes >= PINNED_MIN_BYTES)
            & (dur > 0)
        )
        kind = trace.take("copy_kind", rows)
        for direction in ("HtoD", "DtoH"):
            sel = pinned & text_mask(kind, direction.__eq__)
            if sel.any():
                out[direction] = float(nbytes[sel].sum()) / float(dur[sel].sum()) * 1e9
                how.append(
                    f"{direction} {out[direction] / 1e9:.1f} GB/s measured on {int(sel.sum())} pinned "
                    f"copies of this trace"
                )
    devices = np.unique(g.op_device)
    info = trace.device_info(int(devices[0])) if devices.size else {}
    links = links_of_device(info)
    for direction in ("HtoD", "DtoH"):
        if direction not in out and links.host_bytes_per_s:
            out[direction] = links.host_bytes_per_s * PINNED_LINK_FRACTION
            how.append(
                f"{direction} {out[direction] / 1e9:.1f} GB/s = {PINNED_LINK_FRACTION:.0%} of the "
                f"{links.host_link} link (no pinned copy in the trace to measure)"
            )
    return out, "; ".join(how)
