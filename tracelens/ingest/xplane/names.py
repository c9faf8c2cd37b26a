"""Names of XSpace events: every plane's event and stat metadata as sorted (plane, id) keys, looked up for all
events at once; the XLA ops' display names and metadata FLOPs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .space import stat_value


def metadata_table(planes: list[Any], kind: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Sorted keys (plane << 32 | id) and names of every plane's event or stat metadata."""
    keys: list[int] = []
    names: list[str] = []
    for index, plane in enumerate(planes):
        table = plane.event_metadata if kind == "event" else plane.stat_metadata
        for key, meta in table.items():
            keys.append((index << 32) | (int(key) & 0xFFFFFFFF))
            names.append(meta.name)
    key_arr = np.asarray(keys, dtype=np.int64)
    order = np.argsort(key_arr, kind="stable")
    return key_arr[order], order, names


def display_names(planes: list[Any]) -> list[str]:
    """Every plane's event metadata display name (its name when it has none), in ``metadata_table`` order."""
    return [meta.display_name or meta.name for plane in planes for _, meta in plane.event_metadata.items()]


def valid_flops(values: np.ndarray) -> np.ndarray:
    """FLOP counts with the values that are none as NaN (absent): NaN, infinite, negative, or past the uint64 the
    profilers write a count in (a corrupt stat). Summed, one infinite count made the run "inf PFLOP", one of 1e300
    "1e+285 PFLOP", and a negative one took FLOPs away from the others."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(values) & (values >= 0) & (values < 2.0**64), values, np.nan)


def metadata_flops(planes: list[Any]) -> np.ndarray:
    """Every plane's event metadata ``flops`` stat (XLA ops: the HLO op's FLOPs, as the profiler's op metrics
    give them), NaN where absent, in ``metadata_table`` order (a loop over metadata entries, not events)."""
    out: list[float] = []
    for plane in planes:
        ids = {int(k) for k, meta in plane.stat_metadata.items() if meta.name == "flops"}
        if not ids:
            out.extend([np.nan] * len(plane.event_metadata))
            continue
        for _, meta in plane.event_metadata.items():
            values = [stat_value(st, {}) for st in meta.stats if st.metadata_id in ids]
            out.append(float(values[-1]) if values and isinstance(values[-1], (int, float)) else np.nan)
    return valid_flops(np.asarray(out, np.float64))


def event_names(planes: list[Any], event_plane: np.ndarray, mid: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per event, an index into the returned names (every plane's event metadata, then "" for unknown ids)."""
    ev_keys, ev_order, ev_names = metadata_table(planes, "event")
    unknown = len(ev_names)
    ids = ev_keys & 0xFFFFFFFF
    max_id = int(ids.max()) if ids.size else 0
    if 0 <= max_id < 1 << 20 and len(planes) * (max_id + 2) < 1 << 26 and (mid >= 0).all():
        # metadata ids are small and dense: one (plane, id) table lookup per event
        table = np.full((max(len(planes), 1), max_id + 2), unknown, np.int64)
        table[ev_keys >> 32, ids] = ev_order
        index = table[event_plane, np.minimum(mid, max_id + 1)]
    else:
        pos = lookup(ev_keys, (event_plane.astype(np.int64) << 32) | (mid & 0xFFFFFFFF))
        index = np.where(pos >= 0, ev_order[np.maximum(pos, 0)], unknown)
    return index, ev_names + [""]


def lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each wanted key in ``sorted_keys``, -1 when absent."""
    if sorted_keys.size == 0:
        return np.full(wanted.size, -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, wanted)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return np.where(sorted_keys[pos] == wanted, pos, -1)
