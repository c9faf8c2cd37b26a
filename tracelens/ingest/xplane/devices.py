"""The device table of an XSpace read: one row per ``/device:GPU:N`` plane, from the plane's own stats."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...values import int_or_none
from .space import Host, plane_stats


def device_rows(hosts: Sequence[Host]) -> list[dict[str, Any]]:
    rows = []
    for host in hosts:
        for plane, gpu in host.planes:
            if gpu is None:
                continue
            stats = plane_stats(plane)
            vendor_stat = str(stats.get("device_vendor", "")).lower()
            vendor = (
                "amd"
                if "amd" in vendor_stat
                else ("nvidia" if "compute_cap_major" in stats or not vendor_stat else vendor_stat)
            )
            major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
            name = (
                stats.get("device_name")
                or stats.get("gpu_device_name")
                or stats.get("device_type_string")
                or None
            )
            if not name and major is not None:
                name = f"{vendor.upper()} GPU (compute {major}.{minor}, {stats.get('core_count', '?')} SMs)"
            rows.append(
                {
                    "id": host.device_offset + gpu,
                    "name": name,
                    "vendor": vendor,
                    "sm_count": int_or_none(stats.get("core_count")),
                    "compute_major": int_or_none(major),
                    "compute_minor": int_or_none(minor),
                    "total_memory_bytes": int_or_none(stats.get("memory_size")),
                    "memory_bandwidth_bytes_per_s": float(stats["memory_bandwidth"])
                    if "memory_bandwidth" in stats
                    else None,
                    "clock_rate_khz": int_or_none(stats.get("clock_rate")),
                }
            )
    return rows
