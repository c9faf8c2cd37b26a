"""The device table of a Kineto trace: the devices its GPU rows name, with the trace's deviceProperties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ...trace import build_devices
from .stored import unrepresentable


def device_vendor(device_names: list[str], api_names: list[str]) -> str:
    """ "amd" where a device's name or an API call says so, else "nvidia"."""
    text = " ".join(device_names).lower()
    if any(w in text for w in ("amd", "radeon", "instinct", "gfx")) or any(
        n.startswith("hip") for n in api_names
    ):
        return "amd"
    return "nvidia"


def device_table(properties: Any, device: np.ndarray, api_names: list[str]) -> pa.Table:
    """Devices seen in the event table, with deviceProperties where the trace has them (``api_names``: the
    names launch-side rows carry, for the vendor)."""
    ids = device[~unrepresentable(device, np.dtype(np.int32))]
    whole = ids.astype(np.int64)  # int() of each: toward zero
    if whole.size and whole.min() >= 0 and whole.max() < 1 << 16:
        seen = np.flatnonzero(np.bincount(whole)).tolist()  # the few device indices: a count, not a sort
    else:  # the distinct values of a sorted copy, not np.unique: that imports numpy.ma (~7 ms of a first load)
        values = np.sort(whole)
        first = np.ones(values.size, dtype=bool)
        first[1:] = values[1:] != values[:-1]
        seen = values[first].tolist()
    listed = properties if isinstance(properties, list) else []
    props = {int(p["id"]): p for p in listed if isinstance(p, dict) and isinstance(p.get("id"), int)}
    vendor = device_vendor([str(p.get("name", "")) for p in props.values()], api_names)
    rows = []
    for dev in seen:
        p = props.get(dev, {})
        rows.append(
            {
                "id": dev,
                "name": p.get("name"),
                "vendor": vendor,
                "sm_count": p.get("numSms"),
                "compute_major": p.get("computeMajor"),
                "compute_minor": p.get("computeMinor"),
                "warp_size": p.get("warpSize"),
                "max_threads_per_sm": p.get("maxThreadsPerMultiprocessor"),
                "max_threads_per_block": p.get("maxThreadsPerBlock"),
                "max_blocks_per_sm": p.get("maxBlocksPerMultiprocessor"),
                "regs_per_sm": p.get("regsPerMultiprocessor"),
                "regs_per_block": p.get("regsPerBlock"),
                "shared_mem_per_sm": p.get(
                    "sharedMemPerMultiprocessor", p.get("maxSharedMemoryPerMultiProcessor")
                ),
                "shared_mem_per_block": p.get("sharedMemPerBlock"),
                "shared_mem_per_block_optin": p.get("sharedMemPerBlockOptin"),
                "total_memory_bytes": p.get("totalGlobalMem"),
                "clock_rate_khz": p.get("clockRate"),
            }
        )
    clean = [{k: (v if not isinstance(v, (dict, list)) else None) for k, v in r.items()} for r in rows]
    try:
        return build_devices(clean)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        TypeError,
        OverflowError,
    ):  # odd property types: ids and names
        return build_devices(
            [{"id": r["id"], "name": str(r["name"]) if r["name"] else None, "vendor": vendor} for r in rows]
        )
