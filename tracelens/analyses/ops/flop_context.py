"""What a convolution's FLOPs need that its own record may lack, read from the ops around it (docs/analyses.md,
"compute"):

    output size    a forward convolution that does not record stride, padding or dilation (the 2021 format
                   records no concrete arguments; emit_nvtx ranges only sizes) takes its output's shape from the
                   op that consumes it: the first framework op on its thread starting after it ends, and before
                   the next convolution starts, whose first input has the convolution's batch, output channels
                   and rank ([N, C_out, *spatial]); none such: unknown, never a stride-1 guess
    passes         a convolution backward op that does not record ``output_mask`` computed the gradients whose
                   ops it called (``aten::cudnn_convolution_backward_input`` / ``_backward_weight``, PyTorch
                   <= 1.10); none called: unknown

Pure functions of the event columns; the counted ops (``flops.flop_ops``) calls them for its candidate ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import flop_model
from ...values import first_seen_codes
from ..columns import range_running_at, thread_key
from ..frame_free import group_numbers
from ..names import code_map


def _parsed(dims: np.ndarray) -> dict[str, np.ndarray]:
    """Per row of ``dims`` (Input Dims JSON texts, None where none), parsed once per distinct text: ``n``,
    ``c``, ``rank`` and ``shape`` (JSON text) of the first input where it is a shape of rank >= 3 (else n = -1),
    and ``c_out``, the second input's first dim (a convolution's weight: its output channels; -1 if none)."""
    codes, texts = first_seen_codes(np.asarray(dims, dtype=object))
    table = [*(_first_two(t) for t in texts.tolist()), (-1, -1, -1, None, -1)]  # the last: a missing text
    at = np.where(codes >= 0, codes, len(texts))
    out = {}
    for i, name in enumerate(("n", "c", "rank", "c_out")):
        out[name] = np.array([row[i if i < 3 else 4] for row in table], np.int64)[at]
    shapes = np.empty(len(table), dtype=object)
    shapes[:] = [row[3] for row in table]
    out["shape"] = shapes[at]
    return out


def forward_match(
    left_group: np.ndarray, left_t: np.ndarray, right_group: np.ndarray, right_t: np.ndarray
) -> np.ndarray:
    """For each left row, the right row of its group with the smallest ``right_t >= left_t`` (ties: the first
    right row), -1 where none: ``pd.merge_asof(left, right.sort_values(t, kind="stable"), by=group,
    direction="forward")``, by one sort of both sides together (a left row before the right rows of its time)."""
    n_left = left_t.size
    group = np.r_[left_group, right_group]
    time = np.r_[left_t, right_t]
    side = np.r_[np.zeros(n_left, np.int8), np.ones(right_t.size, np.int8)]
    order = np.lexsort((np.arange(group.size), side, time, group))  # stable: the right rows in their order
    is_right = side[order] == 1
    # the next position holding a right row, at or after each position: a running minimum from the end
    position = np.where(is_right, np.arange(order.size), order.size)
    nxt = np.minimum.accumulate(position[::-1])[::-1] if order.size else position
    found = np.full(n_left, -1, np.int64)
    left_at = np.flatnonzero(~is_right)
    ok = nxt[left_at] < order.size
    hit = order[nxt[left_at[ok]]] - n_left  # the right rows found
    same = right_group[hit] == left_group[order[left_at[ok]]]
    found[order[left_at[ok]][same]] = hit[same]
    return found


def _first_two(text: Any) -> tuple[int, int, int, str | None, int]:
    import json  # here, not at module level: an analyze of a trace without these texts never loads json (kimp17)

    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    value = value if isinstance(value, list) else []
    first = value[0] if value else None
    weight = value[1] if len(value) > 1 else None
    c_out = weight[0] if isinstance(weight, list) and len(weight) >= 3 and _is_size(weight[0]) else -1
    if isinstance(first, list) and len(first) >= 3 and all(_is_size(s) and s > 0 for s in first):
        return first[0], first[1], len(first), json.dumps(first, separators=(",", ":")), c_out
    return -1, -1, -1, None, c_out


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def conv_outputs(
    cols: Any, rows: np.ndarray, dims: np.ndarray, convs: np.ndarray, conv_dims: np.ndarray
) -> np.ndarray:
    """For each forward convolution row in ``convs`` (with its Input Dims ``conv_dims``), the shape its
    consumer recorded (JSON text ``[N,C,H,W]``) or None; ``rows``/``dims``: every framework op row that
    records input shapes, and its Input Dims."""
    out = np.full(convs.size, None, dtype=object)
    if convs.size == 0 or rows.size == 0:
        return out
    conv = _parsed(conv_dims)
    want = np.flatnonzero((conv["n"] >= 0) & (conv["c_out"] >= 0))
    if want.size == 0:
        return out
    # The next convolution on the thread starting at or after each one's end bounds its consumer.
    conv_key = thread_key(cols.pid[convs], cols.tid[convs])
    conv_start, t = cols.start[convs].astype(np.int64), cols.end[convs[want]].astype(np.int64)
    bound = forward_match(conv_key[want], t, conv_key, conv_start)
    ops = _parsed(dims)
    has = np.flatnonzero(ops["n"] >= 0)
    consumer_rows = rows[has]
    # the consumer: the first op of the thread with the convolution's (N, C_out, rank) starting at or after its end
    by = [
        np.r_[conv_key[want], thread_key(cols.pid[consumer_rows], cols.tid[consumer_rows])],
        np.r_[conv["n"][want], ops["n"][has]],
        np.r_[conv["c_out"][want], ops["c"][has]],
        np.r_[conv["rank"][want], ops["rank"][has]],
    ]
    group = group_numbers(by)
    found = forward_match(
        group[: want.size], t, group[want.size :], cols.start[consumer_rows].astype(np.int64)
    )
    ok = found >= 0
    # (before the next convolution starts, where there is one)
    ok[ok] = ~(
        (bound[ok] >= 0) & (cols.start[consumer_rows[found[ok]]] >= conv_start[np.maximum(bound[ok], 0)])
    )
    out[want[ok]] = ops["shape"][has][found[ok]]
    return out


def backward_passes(
    cols: Any, names: np.ndarray, code_of: np.ndarray, rows: np.ndarray, backward: np.ndarray
) -> np.ndarray:
    """For each convolution backward row in ``backward``, the gradient passes (flop_model.INPUT_GRAD |
    WEIGHT_GRAD) whose ops ran inside it, as an object array (None: none did). ``rows``: every framework op row
    (``code_of[cols.name[row]]`` its op-name code into ``names``). A pass op counts for the innermost backward
    op around it; the outer copies of one op (the 2021 format records some ops twice, nested) get None."""
    out = np.full(backward.size, None, dtype=object)
    if backward.size == 0:
        return out
    bits = code_map(code_of[cols.name[rows]], names, _pass_bit, 0).astype(np.int64)
    passes = rows[bits > 0]
    if passes.size == 0:
        return out
    key = thread_key(cols.pid[backward], cols.tid[backward])
    start, end = cols.start[backward], cols.end[backward]
    # By thread, start, longest first (ranges nest): a pass op belongs to the range of its thread that started
    # last at or before it, the innermost of those starting then, if it still runs.
    order = np.lexsort((-end, start, key))
    at = range_running_at(
        key[order],
        start[order],
        end[order],
        thread_key(cols.pid[passes], cols.tid[passes]),
        cols.start[passes],
    )
    held = at >= 0
    if not held.any():
        return out
    # groupby(range).agg(np.bitwise_or.reduce): each range's passes or-ed together
    ranges = order[at[held]]
    union = np.zeros(backward.size, np.int64)
    np.bitwise_or.at(union, ranges, bits[bits > 0][held])
    present = np.unique(ranges)
    out[present] = union[present].tolist()
    return out


def _pass_bit(name: str) -> int:
    if flop_model.BACKWARD_INPUT_PASS.match(name):
        return flop_model.INPUT_GRAD
    if flop_model.BACKWARD_WEIGHT_PASS.match(name):
        return flop_model.WEIGHT_GRAD
    return 0
