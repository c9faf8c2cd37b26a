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
import re
import threading
from typing import Any, cast

import numpy as np

from ...event_names import step_number, strip_api_suffix
from ...trace import ANNOTATION, CPU_OP, DRIVER, RUNTIME, STEP
from .blocks import KIND_CODE, KINDS, LAUNCH_SIDE

# ``kind_valid``: each row's kind code and whether each id column (ID_KEYS) has a value, in one byte (the kind in
# the low bits, an id's validity in bit VALID_BIT[id]): the table joins and orders the five in one array.
ID_KEYS = ("pid", "tid", "correlation", "external_id")
KIND_MASK = 0x0F
VALID_BIT = {key: 1 << bit for bit, key in enumerate(ID_KEYS, start=4)}
if len(KINDS) > KIND_MASK + 1:  # pragma: no cover - a guard for whoever adds kinds
    raise ImportError("kind codes no longer fit below the validity bits of kind_valid")

_DRIVER_NAME = re.compile(r"^cu[A-Z]")


class NameFlags:
    """Each name's step number (NaN: it marks no step) and whether it is a driver call (both of the name without
    its API suffix), worked out once per distinct name and shared by the threads of one read."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def of(self, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The step numbers (float64) and driver flags (bool) of ``names``, each with a trailing slot for rows
        without a name (code -1): NaN and False."""
        known = list(map(self._known.get, names))
        found = (
            [self._flags(n) if f is None else f for n, f in zip(names, known, strict=True)]
            if None in known
            else cast("list[tuple[float, bool]]", known)
        )
        steps = np.array([f[0] for f in found] + [math.nan], dtype=np.float64)
        drivers = np.array([f[1] for f in found] + [False], dtype=bool)
        return steps, drivers

    def _flags(self, name: str) -> tuple[float, bool]:
        stripped = strip_api_suffix(name)
        number = step_number(stripped)
        flags = (math.nan if number is None else float(number), bool(_DRIVER_NAME.match(stripped)))
        with self._lock:
            return self._known.setdefault(name, flags)


def ready_block(block: dict[str, Any], flags: NameFlags) -> dict[str, Any]:
    """A prepared block (:func:`.prepare.prepare_block`) with its name-decided steps done (once; a block without
    rows is left as it is): ``kind`` with steps and driver calls set, ``launch_names`` (whether a launch-side row
    uses each of its names), ``kind_valid``, and ``duration`` clamped at 0 (so that the end is the start plus
    it, never before the start)."""
    if "kind" not in block or "kind_valid" in block:
        return block
    codes, names = block["name"]
    steps, drivers = flags.of(names)
    kind = block["kind"]
    # Host annotations and ops whose name marks a step are steps; runtime calls of a driver name are driver calls.
    host_marker = (kind == KIND_CODE[ANNOTATION]) | (kind == KIND_CODE[CPU_OP])
    kind = np.where(host_marker & ~np.isnan(np.take(steps, codes)), KIND_CODE[STEP], kind).astype(np.int8)
    kind = np.where((kind == KIND_CODE[RUNTIME]) & np.take(drivers, codes), KIND_CODE[DRIVER], kind)
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
