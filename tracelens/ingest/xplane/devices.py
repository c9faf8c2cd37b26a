"""The device table of an XSpace read: one row per ``/device:GPU:N`` plane, from the plane's own stats."""

from __future__ import annotations

import math
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
            name = None if name is None else str(name)  # a stat of another type than the string written
            if not name and major is not None:
                name = f"{vendor.upper()} GPU (compute {major}.{minor}, {stats.get('core_count', '?')} SMs)"
            rows.append(
                {
                    "id": host.device_offset + gpu,
                    "name": name,
                    "vendor": vendor,
                    "sm_count": _count(stats.get("core_count"), INT32),
                    "compute_major": _count(major, INT32),
                    "compute_minor": _count(minor, INT32),
                    "total_memory_bytes": _count(stats.get("memory_size"), INT64),
                    "memory_bandwidth_bytes_per_s": _number(stats.get("memory_bandwidth")),
                    "clock_rate_khz": _count(stats.get("clock_rate"), INT64),
                }
            )
    return rows


INT32, INT64 = 1 << 31, 1 << 63


def _count(value: Any, limit: int) -> int | None:
    """A count-like stat (SMs, bytes, kHz) as an int; None where it is no integer, negative, or past its column."""
    number = int_or_none(value)
    return number if number is not None and 0 <= number < limit else None


def _number(value: Any) -> float | None:
    """A numeric stat as a float; None where the stat holds something else (a string, a ref to a stat name)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
