"""The FLOPs / MFU sentence under the "Top ops" tables (``ops.compute``, docs/analyses.md "compute"), shared by
the markdown and terminal renderers; each passes its own escaping for the texts that come from the trace."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .units import fmt_ns, fmt_pct


def fmt_flops(n: float | None, unit: str = "FLOP") -> str:
    """1.23 GFLOP, 989 TFLOP/s (``unit`` "FLOP/s"), "-" for None."""
    if n is None:
        return "-"
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {prefix}{unit}"
    return f"{n:.0f} {unit}"


def op_flops_cell(n: float | None) -> str:
    """An op's FLOPs in the ops table: "–" (not modelled: no counted op in it) for None."""
    return "–" if n is None else fmt_flops(n)


def mfu_text(compute: Mapping[str, Any]) -> str:
    """The MFU figure: "≥ 16.3%" when it is a lower bound (counted ops hold under 90% of the kernel time)."""
    return ("≥ " if compute.get("mfu_is_lower_bound") else "") + fmt_pct(compute.get("mfu"))


def compute_sentence(compute: Mapping[str, Any] | None, escape: Callable[[str], str]) -> str | None:
    """One sentence: the counted FLOPs by class, achieved FLOP/s over the GPU span, MFU against the peak, or
    why a figure is unknown. None when the document has no ``compute`` block."""
    if not isinstance(compute, dict):
        return None
    reason = compute.get("reason")
    flops = compute.get("flops")
    if flops is None:
        return f"FLOPs: not counted ({escape(str(reason))})." if reason else None
    classes = ", ".join(
        f"{name} {fmt_flops(value)}" for name, value in (compute.get("flops_by_class") or {}).items() if value
    )
    text = f"FLOPs (from recorded shapes and flops): {fmt_flops(flops)}" + (
        f" ({classes})" if classes else ""
    )
    if compute.get("coverage") is not None:
        text += f", counted in ops holding {fmt_pct(compute['coverage'])} of the kernel time"
    if compute.get("achieved_flops_per_s") is not None:
        text += (
            f"; {fmt_flops(compute['achieved_flops_per_s'], 'FLOP/s')} over the "
            f"{fmt_ns(compute.get('span_ns'))} GPU span"
        )
    if compute.get("mfu") is not None:
        dtypes = "/".join(compute.get("flops_by_dtype") or {})
        text += (
            f", MFU {mfu_text(compute)} of {escape(str(compute.get('device_model')))}'s "
            f"{fmt_flops(compute.get('peak_flops_per_s'), 'FLOP/s')} {dtypes} peak"
        )
    elif reason:
        text += f"; MFU unknown: {escape(str(reason))}"
    return text + "."


def roofline_sentence(
    roofline: Mapping[str, Any] | None, escape: Callable[[str], str], top: int = 3
) -> str | None:
    """The op names furthest from the roofline (``ops.roofline``), or None when there is none."""
    if not isinstance(roofline, dict) or not roofline.get("ops"):
        return None
    items = "; ".join(
        f"{escape(str(o.get('name')))} {fmt_flops(o.get('achieved_flops_per_s'), 'FLOP/s')}, "
        f"{fmt_pct(o.get('efficiency'))} of the attainable ({o.get('bound')}-bound, "
        f"{fmt_ns(o.get('lost_ns'))} lost)"
        for o in roofline["ops"][:top]
    )
    return (
        f"Furthest from the roofline (ridge {roofline.get('ridge_flops_per_byte', 0):.0f} FLOP/B, "
        f"{fmt_flops(roofline.get('memory_bytes_per_s'), 'B/s')} memory): {items}."
    )
