"""Arrow arrays read into numpy from their buffers.

pyarrow's own conversions (``to_numpy``, ``np.asarray`` of an array, ``pa.scalar`` of a Python fill value, as
``pc.fill_null(array, -1)`` makes one) go through its pandas layer, which imports pandas: 0.17 s and ~38 MiB of a
process that otherwise never needs it (a Kineto analyze). These read the validity bitmap and the values buffer
directly; each says which conversion it stands for, and gives what that gives.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


def values_and_validity(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """A fixed-width Arrow array's values as a read-only numpy view (its nulls' slots as stored) and, where it has
    nulls, which rows are valid (bool; None where it has none)."""
    n, offset = len(array), array.offset
    dtype = np.dtype(array.type.to_pandas_dtype())  # a type lookup: it does not import pandas
    if n == 0:
        return np.zeros(0, dtype), None
    validity, data = array.buffers()[:2]
    values = np.frombuffer(data, dtype=dtype, count=offset + n)[offset:]
    values.flags.writeable = False  # Arrow's memory, read only (as to_numpy gives it)
    if array.null_count == 0:
        return values, None
    return values, _bits(validity, offset, n)


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Bits ``offset`` to ``offset + n`` of an Arrow bitmap (least significant first), as bool."""
    return np.unpackbits(np.frombuffer(buffer, np.uint8), count=offset + n, bitorder="little")[offset:].view(
        bool
    )


def _numeric(typ: pa.DataType) -> bool:
    return bool(pa.types.is_integer(typ) or pa.types.is_float32(typ) or pa.types.is_float64(typ))


def _one_chunk(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    return array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array


def arrow_filled(array: pa.Array, fill: int | float) -> np.ndarray:
    """``pc.fill_null(array, fill).to_numpy(zero_copy_only=False)`` for an integer or float array: a read-only
    view of its values where it has no nulls, a copy with ``fill`` at the nulls otherwise."""
    if not _numeric(array.type):
        import pyarrow.compute as pc

        filled = array if array.null_count == 0 else pc.fill_null(array, fill)
        return filled.to_numpy(zero_copy_only=False)
    values, valid = values_and_validity(array)
    if valid is None:
        return values
    out = values.copy()
    out[~valid] = np.array(fill).astype(out.dtype)  # as pa.scalar(fill, typ) makes it
    return out


def arrow_numpy(array: pa.Array) -> np.ndarray:
    """``array.to_numpy(zero_copy_only=False)`` for an integer or float array: a view of its values, or where it
    has nulls a copy with NaN there (float64 for integers, as to_numpy makes it)."""
    if not _numeric(array.type) or not len(array):
        return array.to_numpy(zero_copy_only=False)
    values, valid = values_and_validity(array)
    if valid is None:
        return values
    out = values.astype(np.float64 if values.dtype.kind in "iu" else values.dtype)
    out[~valid] = np.nan
    return out


def arrow_values(array: pa.Array) -> np.ndarray:
    """An Arrow column as numpy: integers and floats as :func:`arrow_numpy` gives them, dictionary columns as an
    object array of their values, every other type as an object array of ``to_pylist()``'s values (None at
    nulls)."""
    typ = array.type
    if pa.types.is_dictionary(typ):
        table = np.empty(len(array.dictionary) + 1, object)
        table[:-1] = array.dictionary.to_pylist()  # the last slot (None) for a null's code, -1
        return table[arrow_filled(array.indices, -1)]
    if _numeric(typ):
        return arrow_numpy(array)
    out = np.empty(len(array), object)
    out[:] = array.to_pylist()
    return out


def arrow_valid(array: pa.Array) -> np.ndarray:
    """``array.is_valid()`` as a numpy bool array."""
    if array.null_count == 0 or array.buffers()[0] is None:
        return np.ones(len(array), bool)
    return _bits(array.buffers()[0], array.offset, len(array))


def arrow_ints(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(the values as int64, 0 where null; whether each is set) of an integer Arrow array: the columns a frame
    holds as ``Int64`` (``fillna(0)``, ``notna()``)."""
    array = _one_chunk(array)
    if not pa.types.is_integer(array.type):
        raise TypeError(f"an integer column, not {array.type}")
    values, valid = values_and_validity(array)
    out = values.astype(np.int64)
    if valid is None:
        return out, np.ones(out.size, bool)
    out[~valid] = 0
    return out, valid


def arrow_floats(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integer or float Arrow array as float64, NaN where null: ``astype("Float64").to_numpy(float,
    na_value=np.nan)`` of its frame column."""
    array = _one_chunk(array)
    if not _numeric(array.type):
        array = array.cast(pa.float64())
    values, valid = values_and_validity(array)
    out = values.astype(np.float64)  # a copy, exact from float32 and from integers below 2**53
    if valid is not None:
        out[~valid] = np.nan
    return out


def arrow_codes(array: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, list[Any]]:
    """(each row's code, -1 where null; the distinct values) of a dictionary or string Arrow array: the
    frame's categorical codes and categories (a plain column dictionary-encoded first)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.unify_dictionaries() if pa.types.is_dictionary(array.type) else array
        array = array.combine_chunks()
    if not pa.types.is_dictionary(array.type):
        import pyarrow.compute as pc

        array = pc.dictionary_encode(array)
    codes, valid = arrow_ints(array.indices)
    codes[~valid] = -1
    return codes, array.dictionary.to_pylist()


def arrow_bools(array: pa.Array | pa.ChunkedArray, fill: bool) -> np.ndarray:
    """``array.fill_null(fill).to_numpy(zero_copy_only=False)`` of a boolean Arrow array."""
    array = _one_chunk(array)
    if len(array) == 0:
        return np.zeros(0, bool)
    out = _bits(array.buffers()[1], array.offset, len(array)).copy()
    if array.null_count:
        out[~arrow_valid(array)] = fill
    return out
