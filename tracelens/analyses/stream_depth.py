"""The launch queue's depth per stream (``launch.queue_depth``) by one compiled merge walk where each stream's ops
carry ascending launch ends and GPU ends in op order (a PyTorch profile's: its ops in order on each stream), instead
of sorting packed (stream, time, side) keys and summing them (~5-9 ms for the 207K ops of the 406 MB Kineto tile, in
the launch section on the sections' critical thread)."""

from __future__ import annotations

import numpy as np

try:  # the compiled pass (optional: built at install time where a C compiler is there)
    from . import _kernel_stats as _compiled
except ImportError:
    _compiled = None  # type: ignore[assignment]


def merged_stream_depth(
    codes: np.ndarray, launch_end: np.ndarray, gpu_end: np.ndarray, streams: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per stream code 0..streams-1 (each with an op): (the largest number of ops launched and not finished after an
    event, the first event's time, the last event's time), each op +1 at ``launch_end`` and -1 at ``gpu_end``, the
    ends before the launches at one instant: what ``launch._depth_by_sorted_keys`` gives (its times plus the least
    launch end). None where the pass is not built, the arrays are not plain integers, or a stream's ops are out of
    order (then the sort gives them)."""
    if _compiled is None or codes.size == 0 or codes.dtype.kind != "i" or codes.dtype.itemsize not in (4, 8):
        return None
    launch_end = np.ascontiguousarray(launch_end, np.int64)
    gpu_end = np.ascontiguousarray(gpu_end, np.int64)
    maxima, first, last = (np.empty(streams, np.int64) for _ in range(3))
    order = np.empty(codes.size, np.int64)
    if not _compiled.stream_depth(
        np.ascontiguousarray(codes), launch_end, gpu_end, order, maxima, first, last
    ):
        return None
    return maxima, first, last


def stream_of(key: int) -> int:
    """The stream of a (device, stream) key packed as device << 32 | (stream & 0xFFFFFFFF) (signed 32 bits)."""
    low = key & 0xFFFFFFFF
    return low - (1 << 32) if low >= (1 << 31) else low
