"""The columns of one block of events, as both engines make them: kind codes from categories, the rows kept,
the string codes a block uses, and the number parsing both engines share."""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    GPU_ANNOTATION,
    GPU_SYNC,
    KERNEL,
    MAX_TIME_NS,
    MEMCPY,
    MEMSET,
    NOT_NESTED_KINDS,
    OTHER,
    OVERHEAD,
    PYTHON,
    RUNTIME,
    STEP,
)
from .fields import FILLS, OP_NUMBERS, READ_OP_TEXTS

# Kineto category (lower-cased) -> kind. Categories not listed become OTHER; None means "not an event".
_KIND_OF_CATEGORY: dict[str, str | None] = {
    "kernel": KERNEL,
    "gpu_memcpy": MEMCPY,
    "memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "memset": MEMSET,
    "cuda_sync": GPU_SYNC,
    "cuda_runtime": RUNTIME,
    "runtime": RUNTIME,
    "cuda_driver": DRIVER,
    # the host API calls of the other devices Kineto records, launches and copies as cuda_runtime's (Intel XPU,
    # an out-of-tree PrivateUse1 backend such as Ascend NPU, MTIA), with their kernels as "kernel"
    "xpu_runtime": RUNTIME,
    "xpu_driver": DRIVER,
    "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": DRIVER,
    "mtia_runtime": RUNTIME,
    "cpu_op": CPU_OP,
    "operator": CPU_OP,
    "user_annotation": ANNOTATION,
    "gpu_user_annotation": GPU_ANNOTATION,
    "python_function": PYTHON,
    "overhead": OVERHEAD,
    "trace": None,  # the profiler's own "PyTorch Profiler (0)" span
    "tracelens": None,  # the tracks tracelens annotate adds (replay/annotate.py TRACK_CATEGORY): not the program's
}
KINDS = [
    KERNEL,
    MEMCPY,
    MEMSET,
    GPU_SYNC,
    RUNTIME,
    DRIVER,
    CPU_OP,
    ANNOTATION,
    GPU_ANNOTATION,
    PYTHON,
    STEP,
    OVERHEAD,
    OTHER,
]
KIND_CODE = {kind: code for code, kind in enumerate(KINDS)}
SKIP = -1
DEVICE_SIDE = np.array([k in (KERNEL, MEMCPY, MEMSET, GPU_SYNC) for k in KINDS])
LAUNCH_SIDE = np.array([k in (RUNTIME, DRIVER) for k in KINDS])
NESTED_KIND = np.array([k not in NOT_NESTED_KINDS for k in KINDS])


def scanner() -> Any:
    """The scanner module in use, or None where it was not built: the package's ``_kineto_scan``, which tests
    and benchmarks replace with other builds."""
    return sys.modules[__package__]._kineto_scan


_TRAILING_INTEGER = re.compile(r"(-?\d+)\s*$")


def to_number(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return float(int(text, 0)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            match = _TRAILING_INTEGER.search(text)  # "stream 7"
            return float(match.group(1)) if match else math.nan
    return math.nan


PHASE_COUNTER: dict[str | None, str | None] = {
    "s": "flow",
    "f": "flow",
    "t": "flow",
    "i": "instant",
    "I": "instant",
    "M": "metadata",
    "X": None,
}


# A block's key holding the function that makes it (native.prepared_block: the scanner's output kept until the names'
# flags are at hand, in named_kinds.ready_block, so that both steps are one pass), given those flags or None.
PENDING = "pending"


def kind_table(categories: list[str]) -> np.ndarray:
    """Each category's kind code (SKIP: not a timeline event), and a last entry for rows without one (other):
    the table a category code (-1: none, the last) takes its kind from."""
    kind_of_category = [_KIND_OF_CATEGORY.get(c.lower(), OTHER) for c in categories]
    table = [SKIP if k is None else KIND_CODE[k] for k in kind_of_category] + [KIND_CODE[OTHER]]
    return np.array(table, dtype=np.int8)


def kinds(category_codes: np.ndarray, categories: list[str]) -> np.ndarray:
    """Each row's kind code from its category's code (-1, no category: other; SKIP: not a timeline event)."""
    return np.take(kind_table(categories), category_codes)  # -1 (no category) takes the last


def used_codes(
    codes: np.ndarray, values: list[str], rows: np.ndarray | None = None
) -> tuple[np.ndarray, list[str]]:
    """``codes[rows]`` re-coded to the values those rows use (the strings of the kept rows only); ``rows`` None:
    all of them (``codes`` itself is returned where every value is used)."""
    if rows is not None:
        codes = np.take(codes, rows)
    if not values:  # no strings (a block without sync kinds, say): every code is -1, nothing to count
        return codes, values
    used = np.flatnonzero(np.bincount(codes[codes >= 0], minlength=len(values)))
    if used.size == len(values):
        return codes, values
    recode = np.full(len(values) + 1, -1, dtype=np.int32)
    recode[used] = np.arange(used.size, dtype=np.int32)
    return np.take(recode, codes), [values[i] for i in used]


# trace.MAX_TIME_NS in Kineto's microseconds (up to the year 2116 for absolute Unix µs). A ts beyond counts
# as missing (the row is dropped), a dur beyond as 0.
MAX_TIME_US = MAX_TIME_NS / 1000


def placeable(microseconds: np.ndarray) -> np.ndarray:
    """Finite times within :data:`MAX_TIME_US` (NaN and infinities are not)."""
    return np.abs(microseconds) < MAX_TIME_US


def untimed(kind: np.ndarray, ts: np.ndarray) -> int:
    """How many rows are timeline events (a kind, not SKIP: the profiler's own "Trace" span is SKIP, dropped on
    purpose) without a placeable ts (missing, not a number, or off the timeline): rows the reader drops, counted
    (``counts["untimed"]``) to be said in a warning. Both engines count them where they drop them, once a row."""
    return int(np.count_nonzero((kind != SKIP) & ~placeable(ts)))


def op_columns(
    rows: np.ndarray,
    numbers: dict[str, np.ndarray],
    texts: Mapping[str, tuple[np.ndarray, Sequence[str | None]]],
) -> dict[str, Any]:
    """A block's op fields (fields.OP_FIELDS) as both engines give them: ``op_rows``, the block rows where one
    of them holds a value (a number, a text, a JSON text other than null), and each field at those rows
    (numbers float64, NaN when missing; texts as codes into distinct strings, -1 when missing).

    ``rows``: candidate rows (a superset); ``numbers`` and ``texts`` at them, where a text's value may be None
    (a JSON null, or text that is not JSON)."""
    known = {name: _without_none(*coded) for name, coded in texts.items()}
    for old, new in FILLS.items():  # a field read under its older key fills the newer one where missing
        if old in known:
            known[new] = _filled(known.get(new, (np.full(rows.size, -1, np.int32), [])), known.pop(old))
    keep = np.zeros(rows.size, dtype=bool)
    for values in numbers.values():
        keep |= ~np.isnan(values)
    for codes, distinct in known.values():
        if len(distinct):  # (no values: every code is -1, keeping no row; most op texts of most blocks)
            keep |= codes >= 0
    return {
        "op_rows": rows[keep],
        **{name: values[keep] for name, values in numbers.items()},
        **{name: (codes[keep], values) for name, (codes, values) in known.items()},
    }


def no_op_columns() -> dict[str, Any]:
    """:func:`op_columns` of a block where no row holds an op field (no op record): the same keys in the same
    order, each empty (op rows intp, numbers float64, texts int32 codes into no values)."""
    texts = [name for name in READ_OP_TEXTS if name not in FILLS]  # (an older key fills its newer one)
    return {
        "op_rows": np.empty(0, dtype=np.intp),
        **{name: np.empty(0, dtype=np.float64) for name in OP_NUMBERS},
        **{name: (np.empty(0, dtype=np.int32), []) for name in texts},
    }


def _filled(
    coded: tuple[np.ndarray, list[str]], other: tuple[np.ndarray, list[str]]
) -> tuple[np.ndarray, list[str]]:
    """Codes into distinct values (``coded``) with the rows where they are missing (-1) taken from ``other``."""
    codes, values = coded
    other_codes, other_values = other
    if not len(other_values):  # every other code is -1 (the older key in no row): nothing to fill
        return codes, values
    take = (codes < 0) & (other_codes >= 0)
    if not take.any():
        return codes, values
    # The other values after this field's (a value may then appear twice: the table's interner merges them).
    merged = [*values, *other_values]
    return np.where(take, other_codes + len(values), codes).astype(np.int32), merged


def _without_none(codes: np.ndarray, values: Sequence[str | None]) -> tuple[np.ndarray, list[str]]:
    """Codes into ``values`` re-coded to the values that are not None (the others' rows become -1)."""
    if all(v is not None for v in values):
        return codes, values  # type: ignore[return-value]
    kept = [i for i, v in enumerate(values) if v is not None]
    recode = np.full(len(values) + 1, -1, dtype=np.int32)
    recode[kept] = np.arange(len(kept), dtype=np.int32)
    return np.take(recode, codes), [values[i] for i in kept]  # type: ignore[misc]
