"""The typical lags of the replay graph's edges: each device's median launch latency and stream gap (the model
replay puts every launch and queued op at them; an edge that does not bind gets its kind's typical value at most),
and the defaults where a device has none of an edge kind to measure."""

from __future__ import annotations

import numpy as np

from .points import unique_ints

# Typical lags where a device has none of that edge kind to measure (ns).
DEFAULT_LAUNCH_LAG_NS = 5_000  # launch call start -> op start on an idle GPU
DEFAULT_STREAM_GAP_NS = 1_000  # op end -> next queued op start on the same stream
DEFAULT_SYNC_OWN_NS = 2_000  # a synchronize that finds nothing to wait for
DEFAULT_WAKE_NS = 2_000  # awaited op end -> the waiting call returns
# Up to this many devices each op's typical lags are written device by device (one mask of the ops each), not
# gathered through each op's device code (an op-sized int64 array of codes and two gathers: 33 MiB apiece at the
# x1000 Nsight export's 4.4M ops, at the graph build's peak).
FEW_DEVICES = 16


def typical_lags(
    op_dev: np.ndarray,
    op_order: np.ndarray | slice,
    launch_lags: np.ndarray,
    steady: np.ndarray,
    stream_gaps: np.ndarray,
    queued: np.ndarray,
) -> tuple[dict[int, int], dict[int, int], np.ndarray, np.ndarray]:
    """(typical launch lag per device, typical stream gap per device, and each of them per op in ``op_order``) from
    ``launch_lags`` (one per op of the mask ``steady``, in op_order) and ``stream_gaps`` (per op of ``queued``):
    the medians per device, a default where a device has none. One device (a rank's trace): the medians of them
    all and their values seen at every op (read-only views), no device codes and gathers;
    :func:`typical_lags_by_device` otherwise (the same answer). Both clipped at 0 first, in place (the caller's
    compressed copies: no second op-sized copy of each)."""
    np.maximum(launch_lags, 0, out=launch_lags)
    np.maximum(stream_gaps, 0, out=stream_gaps)
    n_ops = op_dev.size
    if not (n_ops and int(op_dev.min()) == int(op_dev.max())):
        return typical_lags_by_device(op_dev, op_order, launch_lags, steady, stream_gaps, queued)
    device = int(op_dev[0])
    launch_typ: dict[int, int] = {}
    stream_typ: dict[int, int] = {}
    for typ, values in ((launch_typ, launch_lags), (stream_typ, stream_gaps)):
        if values.size:  # (_median_by's answer for one device)
            typ[device] = int(np.median(values))
    launch_typ.setdefault(device, DEFAULT_LAUNCH_LAG_NS)
    stream_typ.setdefault(device, DEFAULT_STREAM_GAP_NS)
    return (
        launch_typ,
        stream_typ,
        np.broadcast_to(np.int64(launch_typ[device]), n_ops),
        np.broadcast_to(np.int64(stream_typ[device]), n_ops),
    )


def typical_lags_by_device(
    op_dev: np.ndarray,
    op_order: np.ndarray | slice,
    launch_lags: np.ndarray,
    steady: np.ndarray,
    stream_gaps: np.ndarray,
    queued: np.ndarray,
) -> tuple[dict[int, int], dict[int, int], np.ndarray, np.ndarray]:
    """:func:`typical_lags` device by device: the path for several devices, and its reference."""
    o_dev = op_dev[op_order]
    launch_typ = _median_by(o_dev[steady], launch_lags, DEFAULT_LAUNCH_LAG_NS)
    stream_typ = _median_by(o_dev[queued], stream_gaps, DEFAULT_STREAM_GAP_NS)
    devices = unique_ints(o_dev)
    for d in devices:
        launch_typ.setdefault(int(d), DEFAULT_LAUNCH_LAG_NS)
        stream_typ.setdefault(int(d), DEFAULT_STREAM_GAP_NS)
    # per op, its device's typical value
    if (
        devices.size <= FEW_DEVICES
    ):  # written device by device: a mask of the ops at a time, no op-sized codes
        typ_launch, typ_stream = np.empty(o_dev.size, np.int64), np.empty(o_dev.size, np.int64)
        for d in devices.tolist():  # a loop over devices
            on = o_dev == d
            typ_launch[on] = launch_typ[d]
            typ_stream[on] = stream_typ[d]
        return launch_typ, stream_typ, typ_launch, typ_stream
    o_dev_index = unique_ints(o_dev, return_inverse=True)[
        1
    ]  # (looked up per device, then spread over the ops)
    typ_launch = np.array([launch_typ[int(d)] for d in devices], np.int64)[o_dev_index.reshape(-1)]
    typ_stream = np.array([stream_typ[int(d)] for d in devices], np.int64)[o_dev_index.reshape(-1)]
    return launch_typ, stream_typ, typ_launch, typ_stream


def _median_by(device: np.ndarray, values: np.ndarray, default: int) -> dict[int, int]:
    out: dict[int, int] = {}
    devices = unique_ints(device)
    if devices.size == 1:  # one device (a rank's trace): its values are all of them, no mask and copy
        return {int(devices[0]): int(np.median(values))}
    for d in devices:  # a loop over devices
        v = values[device == d]
        out[int(d)] = int(np.median(v)) if v.size else default
    return out
