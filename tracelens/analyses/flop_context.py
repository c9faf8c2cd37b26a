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

Pure functions of the event columns; the ops section (``ops._flop_ops``) calls them for its candidate ops.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from .. import flop_model
from .columns import thread_key
from .names import code_map


def _first_shapes(dims: np.ndarray) -> pd.DataFrame:
    """Per row of ``dims`` (Input Dims JSON texts, None where none): the first input's shape (a list of ints)
    where it has rank >= 3, else None; parsed once per distinct text."""
    codes, texts = pd.factorize(pd.Series(dims, dtype=object), use_na_sentinel=True)
    parsed = [_first_shape(t) for t in texts]  # a loop over distinct texts
    shape = np.array([*parsed, None], dtype=object)[np.where(codes >= 0, codes, len(parsed))]
    return pd.DataFrame({"shape": shape})


def _first_shape(text: Any) -> list[int] | None:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    first = value[0] if isinstance(value, list) and value else None
    if (isinstance(first, list) and len(first) >= 3
            and all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in first)):
        return first
    return None


def conv_outputs(cols: Any, rows: np.ndarray, dims: np.ndarray, convs: np.ndarray, conv_dims: np.ndarray
                 ) -> np.ndarray:
    """For each forward convolution row in ``convs`` (with its Input Dims ``conv_dims``), the shape its
    consumer recorded (JSON text ``[N,C,H,W]``) or None; ``rows``/``dims``: every framework op row that
    records input shapes, and its Input Dims."""
    out = np.full(convs.size, None, dtype=object)
    if convs.size == 0 or rows.size == 0:
        return out
    conv_x = _first_shapes(conv_dims)["shape"].to_numpy()
    weight = np.array([_weight_channels(t) for t in conv_dims], dtype=object)  # a loop over the few convs
    want = np.flatnonzero(pd.notna(conv_x) & pd.notna(weight))
    if want.size == 0:
        return out
    # The next convolution on the thread starting at or after each one's end bounds its consumer.
    conv_key = thread_key(cols.pid[convs], cols.tid[convs])
    starts = pd.DataFrame({"key": conv_key, "next_start": cols.start[convs]}).sort_values("next_start")
    ends = pd.DataFrame({"key": conv_key[want], "t": cols.end[convs[want]], "at": want}).sort_values("t")
    bound = pd.merge_asof(ends, starts, left_on="t", right_on="next_start", by="key", direction="forward")
    bound = bound.set_index("at")["next_start"]

    shapes = _first_shapes(dims)["shape"].to_numpy()
    has = np.flatnonzero(pd.notna(shapes))
    consumers = pd.DataFrame({
        "key": thread_key(cols.pid[rows[has]], cols.tid[rows[has]]), "start": cols.start[rows[has]],
        "n": [s[0] for s in shapes[has]], "c": [s[1] for s in shapes[has]], "rank": [len(s) for s in shapes[has]],
        "shape": shapes[has]}).sort_values("start", kind="stable")
    asked = pd.DataFrame({
        "key": conv_key[want], "t": cols.end[convs[want]], "at": want,
        "n": [conv_x[i][0] for i in want], "c": [weight[i] for i in want], "rank": [len(conv_x[i]) for i in want],
    }).sort_values("t", kind="stable")
    found = pd.merge_asof(asked, consumers, left_on="t", right_on="start", by=["key", "n", "c", "rank"],
                          direction="forward")
    next_start = bound.reindex(found["at"]).to_numpy(float)
    ok = found["start"].notna().to_numpy() & ~(found["start"].to_numpy(float) >= next_start)
    at = found["at"].to_numpy()[ok]
    out[at] = [json.dumps(s, separators=(",", ":")) for s in found["shape"].to_numpy()[ok]]
    return out


def _weight_channels(text: Any) -> int | None:
    """The output channels (weight's first dim) of a convolution's Input Dims text."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    w = value[1] if isinstance(value, list) and len(value) > 1 else None
    return w[0] if isinstance(w, list) and len(w) >= 3 and isinstance(w[0], int) else None


def backward_passes(cols: Any, names: np.ndarray, code_of: np.ndarray, rows: np.ndarray, backward: np.ndarray
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
    # Innermost first: by thread, then the latest start (ranges nest), so the first range holding a pass is the
    # innermost one; a pass op belongs to the range of its thread that started last at or before it.
    ranges = pd.DataFrame({"key": key, "start": start, "end": end, "at": np.arange(backward.size)})
    pass_frame = pd.DataFrame({"key": thread_key(cols.pid[passes], cols.tid[passes]), "t": cols.start[passes],
                               "bit": bits[bits > 0]}).sort_values("t", kind="stable")
    held = pd.merge_asof(pass_frame, ranges.sort_values(["start", "end"], ascending=[True, False], kind="stable"),
                         left_on="t", right_on="start", by="key", direction="backward")
    held = held[held["at"].notna() & (held["t"] < held["end"])]
    if held.empty:
        return out
    per_range = held.groupby(held["at"].astype(np.int64))["bit"].agg(np.bitwise_or.reduce)
    out[per_range.index.to_numpy()] = per_range.to_numpy().astype(np.int64).tolist()
    return out


def _pass_bit(name: str) -> int:
    if flop_model.BACKWARD_INPUT_PASS.match(name):
        return flop_model.INPUT_GRAD
    if flop_model.BACKWARD_WEIGHT_PASS.match(name):
        return flop_model.WEIGHT_GRAD
    return 0
