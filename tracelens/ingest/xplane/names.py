"""Names of XSpace events: every plane's event and stat metadata as sorted (plane, id) keys, looked up for all
events at once; the XLA ops' display names and metadata FLOPs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .space import stat_value


def metadata_ids(planes: list[Any], kind: str) -> np.ndarray:
    """Every metadata id of ``kind`` ("event" or "stat") the planes define, sorted and distinct: the ranks
    :func:`plane_keys` numbers ids by."""
    ids = [
        int(key)
        for plane in planes
        for key in (plane.event_metadata if kind == "event" else plane.stat_metadata)
    ]
    return np.unique(np.asarray(ids, np.int64))


def plane_keys(plane: np.ndarray, ids: np.ndarray, universe: np.ndarray) -> np.ndarray:
    """One int64 key per (plane, metadata id) pair, exact for any int64 id: ``plane`` times the id count, plus the
    id's rank in ``universe`` (:func:`metadata_ids`); an id no metadata entry has takes the rank past them all. The
    ids are int64 in the proto: the former ``plane << 32 | id & 0xFFFFFFFF`` made ids 1 and 2^32 + 1 one key (an
    event took another's name, a stat another's meaning)."""
    ids = np.asarray(ids).view(np.int64) if np.asarray(ids).dtype == np.uint64 else np.asarray(ids, np.int64)
    n = universe.size
    rank = np.searchsorted(universe, ids)
    found = universe[np.minimum(rank, n - 1)] == ids if n else np.zeros(ids.shape, bool)
    return np.asarray(plane, np.int64) * (n + 1) + np.where(found, rank, n)


def metadata_table(planes: list[Any], kind: str) -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Sorted keys (:func:`plane_keys`) and names of every plane's event or stat metadata, and the id universe
    the keys are made with."""
    plane_of: list[int] = []
    ids: list[int] = []
    names: list[str] = []
    for index, plane in enumerate(planes):
        table = plane.event_metadata if kind == "event" else plane.stat_metadata
        for key, meta in table.items():
            plane_of.append(index)
            ids.append(int(key))
            names.append(meta.name)
    id_arr = np.asarray(ids, dtype=np.int64)
    universe = np.unique(id_arr)
    key_arr = plane_keys(np.asarray(plane_of, np.int64), id_arr, universe)
    order = np.argsort(key_arr, kind="stable")
    return key_arr[order], order, names, universe


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
    ev_keys, ev_order, ev_names, universe = metadata_table(planes, "event")
    unknown = len(ev_names)
    if (
        universe.size
        and 0 <= universe[0]
        and universe[-1] < 1 << 20
        and len(planes) * (universe[-1] + 2) < 1 << 26
    ):
        # metadata ids are small and dense: one (plane, id) table lookup per event (an id outside the table,
        # negative or past it, reads the unknown column)
        max_id = int(universe[-1])
        ids = universe[ev_keys % (universe.size + 1)]
        table = np.full((max(len(planes), 1), max_id + 2), unknown, np.int64)
        table[ev_keys // (universe.size + 1), ids] = ev_order
        index = table[event_plane, np.where((mid >= 0) & (mid <= max_id), mid, max_id + 1)]
    else:
        pos = lookup(ev_keys, plane_keys(event_plane, mid, universe))
        index = np.where(pos >= 0, ev_order[np.maximum(pos, 0)], unknown)
    return index, ev_names + [""]


def lookup(sorted_keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each wanted key in ``sorted_keys``, -1 when absent."""
    if sorted_keys.size == 0:
        return np.full(wanted.size, -1, dtype=np.int64)
    pos = np.searchsorted(sorted_keys, wanted)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return np.where(sorted_keys[pos] == wanted, pos, -1)
