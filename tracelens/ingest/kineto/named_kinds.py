"""A block's steps that its names decide, done on the worker thread that scanned it (:func:`ready_block`): the
kinds that names make (steps, driver calls), which names launch-side rows carry, and each row's kind and id
validities packed in one byte (``kind_valid``).

Why on the worker: the main thread inflates the file, and the blocks phase of a load waits for it; these steps
went row by row over every block in :meth:`.table.Columns.add` on that thread (~0.03 s of its ~0.27 s at the
406 MB tile). They need only the block and each name's own flags (:class:`NameFlags`), not the codes the table
gives names across blocks, so the worker can do them; ``add`` then only merges the block's strings in file order.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from ...event_names import is_driver_call, step_number, strip_api_suffix
from ...trace import ANNOTATION, CPU_OP, DRIVER, RUNTIME, STEP
from .blocks import KIND_CODE, KINDS, LAUNCH_SIDE, PENDING, scanner

# ``kind_valid``: each row's kind code and whether each id column (ID_KEYS) has a value, in one byte (the kind in
# the low bits, an id's validity in bit VALID_BIT[id]): the table joins and orders the five in one array.
ID_KEYS = ("pid", "tid", "correlation", "external_id")
KIND_MASK = 0x0F
VALID_BIT = {key: 1 << bit for bit, key in enumerate(ID_KEYS, start=4)}
if len(KINDS) > KIND_MASK + 1:  # pragma: no cover - a guard for whoever adds kinds
    raise ImportError("kind codes no longer fit below the validity bits of kind_valid")


# a name's bits (NameFlags.bits): it marks a step, it is a driver call
STEP_MARKER, DRIVER_CALL = 1, 2
# how the names event_names' rules can match begin: an API name with suffixes (or a driver call, "cu"), a step
# marker (event_names.STEP_MARKER_PATTERN)
_API_PREFIXES = ("cu", "hip")
_STEP_PREFIXES = ("ProfilerStep#", "tracelens/step#")


class NameFlags:
    """Each name's step number (NaN: it marks no step) and whether it is a driver call (both of the name without
    its API suffix), worked out once per distinct name and shared by the threads of one read."""

    def __init__(self) -> None:
        self._bits: dict[str, int] = {}
        self._steps: dict[str, float] = {}
        self._lock = threading.Lock()

    def bits(self, names: list[str]) -> np.ndarray:
        """The bits of ``names`` (uint8: STEP_MARKER, DRIVER_CALL), with a trailing 0 for rows without a name
        (code -1). (Once per block: a list lookup, no per-name Python step where all are known.)"""
        known = list(map(self._bits.get, names))
        if None in known:
            known = [self._learn(n) if b is None else b for n, b in zip(names, known, strict=True)]
        known.append(0)
        return np.array(known, dtype=np.uint8)

    def steps(self, names: list[str]) -> np.ndarray:
        """The step numbers (float64, NaN: none) of ``names``."""
        for name in names:
            if name not in self._steps:
                self._learn(name)
        return np.array([self._steps[n] for n in names], dtype=np.float64)

    def _learn(self, name: str) -> int:
        # the rules' regular expressions only for the names they can match (a ~2-5 us search each otherwise, for
        # the few hundred distinct names of a big trace): API suffixes and driver calls are cu*/hip* names', step
        # markers begin with their prefix (tests/test_kineto_counted_sizes.py checks they agree)
        stripped = strip_api_suffix(name) if name.startswith(_API_PREFIXES) else name
        number = step_number(stripped) if stripped.startswith(_STEP_PREFIXES) else None
        driver = stripped.startswith("cu") and is_driver_call(stripped)
        bits = (number is not None) * STEP_MARKER | driver * DRIVER_CALL
        with self._lock:
            self._steps[name] = math.nan if number is None else float(number)
            return self._bits.setdefault(name, bits)


def ready_block(block: dict[str, Any], flags: NameFlags) -> dict[str, Any]:
    """A prepared block (:func:`.prepare.prepare_block`) with its name-decided steps done (once; a block without
    rows is left as it is): ``kind`` with steps and driver calls set, ``launch_names`` (whether a launch-side row
    uses each of its names), ``kind_valid``, and ``duration`` clamped at 0 (so that the end is the start plus
    it, never before the start)."""
    pending = block.pop(PENDING, None)
    if pending is not None:  # a block native.prepared_block left to make here: both steps in one pass
        block = pending(flags)
    if "kind" not in block or "kind_valid" in block:
        return block
    codes, names = block["name"]
    name_bits = flags.bits(names)
    native = getattr(scanner(), "name_kinds", None)
    if native is not None:  # one pass in C (the worker's share is the blocks phase's longer one); the numpy
        _native_name_kinds(block, native, codes, name_bits)  # steps below are its reference and fallback
        return block
    kind = block["kind"]
    # Host annotations and ops whose name marks a step are steps; runtime calls of a driver name are driver calls.
    host_marker = (kind == KIND_CODE[ANNOTATION]) | (kind == KIND_CODE[CPU_OP])
    bits = np.take(name_bits, codes)  # -1 (no name) takes the trailing 0
    kind = np.where(host_marker & (bits & STEP_MARKER > 0), KIND_CODE[STEP], kind).astype(np.int8)
    kind = np.where((kind == KIND_CODE[RUNTIME]) & (bits & DRIVER_CALL > 0), KIND_CODE[DRIVER], kind)
    kind = block["kind"] = kind.astype(np.int8)
    # the names of launch-side rows, for the devices' vendor
    used = codes[np.take(LAUNCH_SIDE, kind) & (codes >= 0)]
    block["launch_names"] = np.bincount(used, minlength=len(names)) > 0
    kind_valid = kind.astype(np.uint8)
    for key, bit in VALID_BIT.items():
        kind_valid |= block[f"{key}_valid"].view(np.uint8) * np.uint8(bit)
    block["kind_valid"] = kind_valid
    # in place: a new array would be new pages for every block
    duration = block["duration"]
    block["duration"] = np.maximum(duration, 0, out=duration if duration.flags.writeable else None)
    return block


# The kinds a name changes, as tables by kind code (for the compiled passes: name_kinds, and prepare_scanned's
# names argument, native.py): a step-marker name makes host annotations and ops steps, a driver name makes
# runtime calls driver calls; every other kind stays.
STEP_KIND = np.arange(len(KINDS), dtype=np.int8)
STEP_KIND[[KIND_CODE[ANNOTATION], KIND_CODE[CPU_OP]]] = KIND_CODE[STEP]
DRIVER_KIND = np.arange(len(KINDS), dtype=np.int8)
DRIVER_KIND[KIND_CODE[RUNTIME]] = KIND_CODE[DRIVER]
LAUNCH_SIDE_BYTES = LAUNCH_SIDE.astype(np.uint8)


def _native_name_kinds(block: dict[str, Any], native: Any, codes: np.ndarray, name_bits: np.ndarray) -> None:
    """:func:`ready_block`'s steps by ``_kineto_scan.name_kinds`` (kind and duration changed in place: copied
    first where they are not writable int8 / int64 arrays of their own)."""
    kind = block["kind"]
    if kind.dtype != np.int8 or not kind.flags.writeable or not kind.flags.c_contiguous:
        kind = block["kind"] = np.array(kind, dtype=np.int8)
    duration = block["duration"]  # (int32 in the row chunks: row_chunks.NARROW_KEYS)
    if (
        duration.dtype not in (np.int64, np.int32)
        or not duration.flags.writeable
        or not duration.flags.c_contiguous
    ):
        duration = block["duration"] = np.array(duration, dtype=np.int64)
    kind_valid = np.empty(kind.size, dtype=np.uint8)
    launch_names = np.zeros(name_bits.size - 1, dtype=bool)
    native(
        kind,
        np.ascontiguousarray(codes, dtype=np.int32),
        name_bits,
        STEP_KIND,
        DRIVER_KIND,
        LAUNCH_SIDE_BYTES,
        *(np.ascontiguousarray(block[f"{key}_valid"], dtype=bool) for key in ID_KEYS),
        duration,
        kind_valid,
        launch_names,
    )
    block["kind_valid"], block["launch_names"] = kind_valid, launch_names
