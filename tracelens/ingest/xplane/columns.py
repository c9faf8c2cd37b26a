"""Arrow columns of the xplane reader's event table from numpy codes, values and masks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def dict_column(codes: np.ndarray, labels: Sequence[str]) -> pa.DictionaryArray:
    """A dictionary-encoded string column from integer codes into ``labels`` (negative = null)."""
    shifted = np.maximum(np.asarray(codes, np.int32), -1)
    shifted += 1  # 0 = null, i + 1 = labels[i]
    unique: dict[str, int] = {}
    remap = np.array([unique.setdefault(label, len(unique)) for label in labels], dtype=np.int64)
    # labels repeat (several planes): dedupe; keep only the labels some row uses (metadata of skipped
    # lines would show up as empty categories)
    seen = np.bincount(shifted, minlength=len(labels) + 1)[1:] > 0
    used = np.zeros(len(unique), bool)
    used[remap[seen]] = True
    compact = np.cumsum(used) - 1
    lut = np.full(len(labels) + 1, -1, np.int32)
    lut[1:] = np.where(used[remap], compact[remap], -1)
    out = lut[shifted]
    kept = [label for label, flag in zip(unique, used.tolist(), strict=True) if flag]
    return pa.DictionaryArray.from_arrays(pa.array(out, mask=out < 0), pa.array(kept, pa.string()))


def masked(values: np.ndarray, valid: np.ndarray, typ: pa.DataType) -> pa.Array:
    return pa.array(values, type=typ, mask=~np.asarray(valid, bool))


def place(
    gpu_values: np.ndarray, placement: tuple[np.ndarray, np.ndarray, int], typ: pa.DataType
) -> pa.Array:
    """Per-GPU-row floats (NaN = absent) as a full-length column of ``typ``, null off the GPU rows.

    ``placement``: (table rows, the GPU row each takes, table length)."""
    slots, source, n = placement
    values = gpu_values[source]
    present = ~np.isnan(values)
    valid = np.zeros(n, bool)
    valid[slots] = present
    if pa.types.is_integer(typ):
        full = np.zeros(n, typ.to_pandas_dtype())
        full[slots] = np.where(present, values, 0)
        return pa.array(full, typ, mask=~valid)
    full = np.zeros(n, np.float64)
    full[slots] = values
    return pa.array(full, pa.float64(), mask=~valid).cast(typ)
