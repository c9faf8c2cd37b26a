"""Host lines that are another line's thread: the API-callback lines ``Host Threads/<tid>``.

XLA's ROCm tracer writes each HIP API call it intercepts on a host line of its own, named ``Host Threads/<tid>``
after the OS thread id, while that thread's TraceMe events (Python frames, ``PjitFunction(...)``, the XLA thunk
that makes the call) lie on a line keyed by the profiler's own thread id (``python3``): one thread, two lines
(``amd_gpu_jax_te_fused_attn.xplane.pb``: its 150 HIP calls on ``Host Threads/7``, each inside a thunk event of
``python3``). Gap attribution looks at the threads that launched a GPU's work; read as two threads, the launching
one would hold nothing but its calls, and whatever the thread ran between them would be "nothing".

A callback line (named ``Host Threads/…``, every event a CUDA/HIP API call) is read as the thread of the one other
line of its host that nests its calls: at least :data:`NESTED_SHARE` of them inside that line's events, with no event
of that line starting or ending inside the call (a call runs on its thread with nothing else beside it). A
long event of another thread (a whole-run Python frame) may cover the calls as well: of the lines that nest them,
the one whose latest event starts closest before each call (the median) is the thread (the thunk that makes a call
starts microseconds before it); with no such line, or two at one distance, the callback line stays its own thread.
"""

from __future__ import annotations

import numpy as np

from ... import intervals

CALLBACK_LINE_PREFIX = "Host Threads/"
NESTED_SHARE = 0.9


def callback_line_threads(
    line: np.ndarray,
    host: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    is_api: np.ndarray,
    line_names: list[str],
) -> dict[int, int]:
    """{callback line: the line whose thread it is} over host events (one entry each: ``line`` its line, ``host``
    its host, ``is_api`` whether it is a CUDA/HIP API call)."""
    if not any(name.startswith(CALLBACK_LINE_PREFIX) for name in line_names):
        return {}
    order = np.argsort(line, kind="stable")
    lines, first, counts = np.unique(line[order], return_index=True, return_counts=True)
    api_counts = np.add.reduceat(is_api[order].astype(np.int64), first) if first.size else first
    rows = {int(ln): order[f : f + c] for ln, f, c in zip(lines, first, counts, strict=True)}
    callback = [
        int(ln)
        for ln, n, n_api in zip(lines, counts, api_counts, strict=True)
        if line_names[ln].startswith(CALLBACK_LINE_PREFIX) and n_api == n
    ]
    found: dict[int, int] = {}
    for c in callback:  # a loop over lines (a handful), each line's events in numpy
        calls = rows[c]
        others = [ln for ln in rows if ln not in callback and host[rows[ln][0]] == host[calls[0]]]
        nesting = []
        for ln in others:
            count, lead = _nesting(start[calls], end[calls], start[rows[ln]], end[rows[ln]])
            if count >= NESTED_SHARE * calls.size:
                nesting.append((lead, ln))
        nesting.sort()
        if len(nesting) == 1 or (len(nesting) > 1 and nesting[0][0] < nesting[1][0]):
            found[c] = nesting[0][1]
    return found


def _nesting(
    call_start: np.ndarray, call_end: np.ndarray, start: np.ndarray, end: np.ndarray
) -> tuple[int, float]:
    """(how many calls lie inside an event of the line with no event of it starting or ending strictly inside the
    call, the median time from the latest event start before a call to the call): the calls' own thread nests
    them in the events that make them (a thunk: microseconds before), another thread at most by chance or in a
    long event (far before)."""
    starts, ends = np.sort(start), np.sort(end)
    straddled = np.zeros(call_start.size, bool)
    for edges in (starts, ends):
        straddled |= np.searchsorted(edges, call_end, "left") > np.searchsorted(edges, call_start, "right")
    union_start, union_end = intervals.merge(start, end)
    k = np.searchsorted(union_start, call_start, "right") - 1
    covered = (k >= 0) & (call_end <= union_end[np.maximum(k, 0)]) & ~straddled
    latest = np.searchsorted(starts, call_start, "right") - 1
    lead = call_start[covered] - starts[latest[covered]]
    return int(np.count_nonzero(covered)), float(np.median(lead)) if lead.size else np.inf
