"""The few Arrow compute kernels an analysis calls, by name, without importing ``pyarrow.compute``.

Importing that module wraps every one of Arrow's ~290 kernels in a Python function and parses its options'
docstrings: ~25 ms of each process (a tenth of a small trace's analyze), for the handful of kernels the analyses
call. Each function here is the ``pyarrow.compute`` call it is named after, with that call's default options,
through ``call_function`` (what every ``pyarrow.compute`` wrapper calls). Where pyarrow's compiled module is not
there under its name (another pyarrow layout), ``pyarrow.compute`` itself serves.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

try:
    import pyarrow._compute as _kernels  # the compiled module pyarrow.compute wraps: ~5 ms to import
except ImportError:  # pragma: no cover - another pyarrow layout
    import pyarrow.compute as _kernels


def call(name: str, *args: Any, options: Any = None) -> Any:
    """``pyarrow.compute.call_function(name, args, options)``."""
    return _kernels.call_function(name, list(args), options)


def take(data: Any, indices: Any) -> Any:
    """``pc.take(data, indices)`` (and ``data.take(indices)``): bounds checked."""
    return call("take", data, indices, options=_kernels.TakeOptions(boundscheck=True))


def min_max(values: Any) -> pa.StructScalar:
    """``pc.min_max(values)``: nulls skipped, null where no value is."""
    return call("min_max", values, options=_kernels.ScalarAggregateOptions(skip_nulls=True, min_count=1))


def dictionary_encode(values: Any) -> Any:
    """``pc.dictionary_encode(values)``: nulls stay nulls (not a dictionary entry)."""
    return call("dictionary_encode", values, options=_kernels.DictionaryEncodeOptions("mask"))


def match_substring_regex(values: Any, pattern: str, ignore_case: bool = False) -> Any:
    """``pc.match_substring_regex(values, pattern, ignore_case=...)``."""
    return call(
        "match_substring_regex",
        values,
        options=_kernels.MatchSubstringOptions(pattern, ignore_case=ignore_case),
    )


def starts_with(values: Any, pattern: str) -> Any:
    """``pc.starts_with(values, pattern)``."""
    return call("starts_with", values, options=_kernels.MatchSubstringOptions(pattern))


def cast(values: Any, target: pa.DataType) -> Any:
    """``values.cast(target)`` (``pc.cast``): a safe cast."""
    return call("cast", values, options=_kernels.CastOptions.safe(target))
