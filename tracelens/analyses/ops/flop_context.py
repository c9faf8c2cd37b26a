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

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import flop_model
from ..columns import range_running_at, thread_key
from ..names import code_map

if TYPE_CHECKING:  # imported where a function needs it: analyze's path runs without pandas
    import pandas as pd


def _parsed(dims: np.ndarray) -> pd.DataFrame:
    """Per row of ``dims`` (Input Dims JSON texts, None where none), parsed once per distinct text: ``n``,
    ``c``, ``rank`` and ``shape`` (JSON text) of the first input where it is a shape of rank >= 3 (else n = -1),
    and ``c_out``, the second input's first dim (a convolution's weight: its output channels; -1 if none)."""
    import pandas as pd

    codes, texts = pd.factorize(pd.Series(dims, dtype=object), use_na_sentinel=True)
    table = pd.DataFrame(
        [_first_two(t) for t in texts], columns=["n", "c", "rank", "shape", "c_out"]
    )  # per text
    table.loc[len(table)] = (-1, -1, -1, None, -1)  # the slot of a missing text
    return table.iloc[np.where(codes >= 0, codes, len(texts))].reset_index(drop=True)


def _first_two(text: Any) -> tuple[int, int, int, str | None, int]:
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
    import pandas as pd

    out = np.full(convs.size, None, dtype=object)
    if convs.size == 0 or rows.size == 0:
        return out
    conv = _parsed(conv_dims)
    want = np.flatnonzero((conv["n"] >= 0).to_numpy() & (conv["c_out"] >= 0).to_numpy())
    if want.size == 0:
        return out
    # The next convolution on the thread starting at or after each one's end bounds its consumer.
    conv_key = thread_key(cols.pid[convs], cols.tid[convs])
    starts = pd.DataFrame({"key": conv_key, "next_start": cols.start[convs]}).sort_values("next_start")
    asked = pd.DataFrame(
        {
            "key": conv_key[want],
            "t": cols.end[convs[want]],
            "at": want,
            "n": conv["n"].to_numpy()[want],
            "c": conv["c_out"].to_numpy()[want],
            "rank": conv["rank"].to_numpy()[want],
        }
    ).sort_values("t", kind="stable")
    asked = pd.merge_asof(asked, starts, left_on="t", right_on="next_start", by="key", direction="forward")
    ops = _parsed(dims)
    has = np.flatnonzero((ops["n"] >= 0).to_numpy())
    consumers = pd.DataFrame(
        {
            "key": thread_key(cols.pid[rows[has]], cols.tid[rows[has]]),
            "start": cols.start[rows[has]],
            "n": ops["n"].to_numpy()[has],
            "c": ops["c"].to_numpy()[has],
            "rank": ops["rank"].to_numpy()[has],
            "shape": ops["shape"].to_numpy()[has],
        }
    ).sort_values("start", kind="stable")
    found = pd.merge_asof(
        asked, consumers, left_on="t", right_on="start", by=["key", "n", "c", "rank"], direction="forward"
    )
    ok = found["start"].notna().to_numpy() & ~(
        found["start"].to_numpy(float) >= found["next_start"].to_numpy(float)
    )
    out[found["at"].to_numpy()[ok]] = found["shape"].to_numpy()[ok]
    return out


def backward_passes(
    cols: Any, names: np.ndarray, code_of: np.ndarray, rows: np.ndarray, backward: np.ndarray
) -> np.ndarray:
    """For each convolution backward row in ``backward``, the gradient passes (flop_model.INPUT_GRAD |
    WEIGHT_GRAD) whose ops ran inside it, as an object array (None: none did). ``rows``: every framework op row
    (``code_of[cols.name[row]]`` its op-name code into ``names``). A pass op counts for the innermost backward
    op around it; the outer copies of one op (the 2021 format records some ops twice, nested) get None."""
    import pandas as pd

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
    per_range = pd.Series(bits[bits > 0][held]).groupby(order[at[held]]).agg(np.bitwise_or.reduce)
    out[per_range.index.to_numpy()] = per_range.to_numpy().astype(np.int64).tolist()
    return out


def _pass_bit(name: str) -> int:
    if flop_model.BACKWARD_INPUT_PASS.match(name):
        return flop_model.INPUT_GRAD
    if flop_model.BACKWARD_WEIGHT_PASS.match(name):
        return flop_model.WEIGHT_GRAD
    return 0
