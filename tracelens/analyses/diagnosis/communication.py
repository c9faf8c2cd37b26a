"""communication: collective time with no other kernel running (the GPU holds a collective and computes
nothing).

lost_ns = device-mean of ``communication.devices[].exposed_ns``. Absent when the trace has no collective.
"""

from __future__ import annotations

from typing import Any

from ... import gpu_specs
from ...units import fmt_bytes, fmt_ns, fmt_pct
from .cause import ONLY, Cause, Context, Evidence
from .wording import calls, gpu, mean_note, worst

NAME = "communication"
# Collectives at >= 70% of the link's peak bus bandwidth cannot get much faster (protocol overhead takes the
# rest): only overlap or fewer bytes help ("link_bound"); below it, overlap and fewer, larger messages do.
LINK_BOUND = 0.7
RESPONSIBLE_TYPES = 3  # collective types named as responsible: the few that hold most exposed time
LISTED_TYPES = 3  # collective types a sentence lists

FIX = {
    "pytorch": "Collectives run with nothing to hide them: let DDP overlap them with backward (bucket_cap_mb tuned: "
    "larger for many small all-reduces, smaller to start earlier; static_graph=True, no "
    "find_unused_parameters), accumulate gradients with model.no_sync() on all but the last micro-step; "
    "with FSDP prefetch (forward_prefetch=True, backward_prefetch=BackwardPrefetch.BACKWARD_PRE).",
    "tensorflow": "Collectives are exposed: pack gradients into fewer all-reduces "
    "(tf.distribute.experimental.CommunicationOptions(bytes_per_pack=...)), let XLA overlap them "
    "(XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true).",
    "jax": "Collectives are exposed: let XLA schedule them asynchronously beside compute "
    "(XLA_FLAGS=--xla_gpu_enable_latency_hiding_scheduler=true), shard so fewer, larger collectives run.",
    "default": "Collectives run while no kernel computes: issue them asynchronously beside independent work, fewer "
    "and larger messages, and check the interconnect's bandwidth.",
}
ON_COMPUTE_STREAM_FIX = (
    "Some collectives run on the compute stream, where no computation can overlap them: issue "
    "them on their own stream (async_op=True, or a torch.cuda.Stream around the call; DDP and "
    "FSDP do)."
)
LINK_BOUND_FIX = (
    "The collectives already move data near the link's peak bus bandwidth: faster "
    "collectives need fewer bytes (bf16 gradients, gradient compression, a larger "
    "batch per step), so hide them behind compute."
)


def device_lost(ctx: Context, device: int) -> int:
    return int(ctx.by_device("communication", "devices", "exposed_ns").get(device, 0))


def collective_types(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The devices' per-type collective figures summed over GPUs; busbw weighted by each entry's measured time."""
    by_type: dict[str, dict[str, Any]] = {}
    for d in devices:  # a loop over GPUs and their few collective types
        for t in d["by_type"]:
            entry = by_type.setdefault(
                t["type"],
                {
                    "type": t["type"],
                    "count": 0,
                    "time_ns": 0,
                    "exposed_ns": 0,
                    "bytes": None,
                    "bus_bytes": 0.0,
                    "bus_ns": 0,
                },
            )
            entry["count"] += t["count"]
            entry["time_ns"] += t["time_ns"]
            entry["exposed_ns"] += t.get("exposed_ns", 0)
            if t.get("bytes") is not None:
                entry["bytes"] = (entry["bytes"] or 0) + t["bytes"]
            if t.get("busbw_bytes_per_s") is not None and t.get("measured_ns"):
                entry["bus_bytes"] += t["busbw_bytes_per_s"] * t["measured_ns"] / 1e9
                entry["bus_ns"] += t["measured_ns"]
    return sorted(by_type.values(), key=lambda t: (-t["time_ns"], t["type"]))


def peer_link(ctx: Context, devices: list[dict[str, Any]]) -> gpu_specs.CollectiveLink:
    """The peer link of the GPUs with collectives: the slowest known one; unknown when any is unknown."""
    links = [
        gpu_specs.collective_link(info.get("name"), info.get("compute_major"))
        for info in (ctx.trace.device_info(int(d["device"])) for d in devices)
    ]
    unknown = [link for link in links if link.peak_bytes_per_s is None]
    if unknown or not links:
        return (
            unknown[0] if unknown else gpu_specs.CollectiveLink(None, None, None, "no GPU with collectives")
        )
    return min(links, key=lambda link: link.peak_bytes_per_s or 0.0)


def evidence(ctx: Context) -> Evidence | None:
    report = ctx.done["communication"]
    if not isinstance(report, dict) or not report.get("collective_count"):
        return None
    devices = [d for d in report.get("devices") or [] if d.get("collective_count")]
    exposed = {str(d["device"]): int(d["exposed_ns"]) for d in devices}
    collective = {str(d["device"]): int(d["collective_ns"]) for d in devices}
    link = peer_link(ctx, devices)
    peak = link.peak_bytes_per_s
    types = collective_types(devices)
    bus_bytes, bus_ns = sum(t["bus_bytes"] for t in types), sum(t["bus_ns"] for t in types)
    busbw = bus_bytes / bus_ns * 1e9 if bus_ns else None
    for t in types:
        t["busbw_bytes_per_s"] = t["bus_bytes"] / t["bus_ns"] * 1e9 if t["bus_ns"] else None
        t["link_fraction"] = (
            t["busbw_bytes_per_s"] / peak if t["busbw_bytes_per_s"] is not None and peak else None
        )
        del t["bus_bytes"], t["bus_ns"]
    fraction = busbw / peak if busbw is not None and peak else None
    total = sum(collective.values())
    return {
        "exposed_by_device": exposed,
        "collective_by_device": collective,
        "overlap_share": 1 - sum(exposed.values()) / total if total else None,
        "by_type": types,
        "world_size": ctx.trace.metadata.world_size,
        "busbw_bytes_per_s": busbw,
        "link": link.link,
        "link_peak_bytes_per_s": peak,
        "link_source": link.source,
        "link_unknown_reason": link.unknown_reason,
        "link_fraction": fraction,
        "responsible": [
            t["type"]
            for t in sorted(types, key=lambda t: (-t["exposed_ns"], t["type"]))
            if t["exposed_ns"] > 0
        ][:RESPONSIBLE_TYPES],
        "remedy": "link_bound" if fraction is not None and fraction >= LINK_BOUND else "overlap",
        # Collectives on a stream that also runs computation: nothing can overlap them there.
        "on_compute_stream_by_device": {
            str(d["device"]): int(d.get("on_compute_stream_ns") or 0) for d in devices
        },
    }


def adjust_fix(ev: Evidence, text: str, _framework: str) -> str:
    if ev["remedy"] == "link_bound":
        text = LINK_BOUND_FIX + " " + text
    if any((ev.get("on_compute_stream_by_device") or {}).values()):
        text = ON_COMPUTE_STREAM_FIX + " " + text
    return text


def sentence(cause: dict[str, Any], _: dict[str, Any]) -> str:
    ev = cause["evidence"]
    exposed, collective = ev.get("exposed_by_device") or {}, ev.get("collective_by_device") or {}
    device, idle = worst(exposed)
    total = collective.get(device) or 0
    text = f"{gpu(device, len(exposed))} spent {fmt_ns(idle)} in collectives with no other kernel running"
    if total:
        text += f" ({fmt_pct(idle / total)} of its {fmt_ns(total)} of collective time)"
    kinds = ev.get("by_type") or []
    if kinds:
        text += ": " + ", ".join(
            f"{calls(t['count'], t['type'].replace('_', '-'))} ({fmt_ns(t['time_ns'])})"
            for t in kinds[:LISTED_TYPES]
        )
    if ev.get("busbw_bytes_per_s") is not None:
        text += f"; bus bandwidth {fmt_bytes(ev['busbw_bytes_per_s'])}/s"
        if ev.get("link_fraction") is not None:
            text += (
                f" ({fmt_pct(ev['link_fraction'])} of {ev.get('link')}'s "
                f"{fmt_bytes(ev.get('link_peak_bytes_per_s'))}/s)"
            )
    if (ev.get("world_size") or 1) > 1:
        text += f"; one of {ev['world_size']} ranks"
    return text + mean_note(cause, exposed) + "."


CAUSE = Cause(NAME, evidence, {ONLY: FIX}, sentence, device_lost=device_lost, adjust_fix=adjust_fix)
