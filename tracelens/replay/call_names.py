"""The host calls' name rules for the replay graph: which calls are explicit synchronizations, synchronous copies,
stream waits on an event and event records (each distinct name tested once, :func:`call_rules`), and a string
column's rows tested by a predicate once per distinct word (:func:`text_mask`, :func:`lower_is`; the remedies
read them too)."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from ..analyses.names import is_blocking_sync, is_framework_wait, is_sync_copy, names_in_use, rows_named
from ..arrow_read import arrow_filled
from ..event_names import strip_api_suffix
from .name_tests import SMALL_DICTIONARY

# Matched after strip_api_suffix (tracelens.event_names: the one rule for version suffixes).
STREAM_WAIT_PATTERN = re.compile(r"^(cuda|hip|cu)StreamWaitEvent$")
EVENT_RECORD_PATTERN = re.compile(r"^(cuda|hip|cu)EventRecord(WithFlags)?$")


def call_rules(
    call_names: np.ndarray, names: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(explicit synchronize, a bool per call; synchronous copy name, a bool per call; the stream-wait calls and
    the event-record calls, ascending) of the calls' name codes ``call_names``: each distinct name tested once
    (every name of a small dictionary, else the names in use), the calls found by comparing codes where the names
    that pass are few (no table gathered at every call)."""
    # the rules, a bit each: explicit syncs, synchronous copies, stream waits, event records; each accepts only
    # names starting with "cu" or "hip" (its patterns', after strip_api_suffix, which keeps a name's start): no
    # other name is tested
    rules = (_is_sync_call, is_sync_copy, _is_stream_wait, _is_event_record)
    table = np.zeros(len(names) + 1, np.uint8)  # code -1 picks the last slot
    tested = np.arange(len(names)) if len(names) <= SMALL_DICTIONARY else names_in_use(call_names, len(names))
    for i in tested.tolist():  # a loop over distinct names, not calls
        name = str(names[i])
        if name.startswith(("cu", "hip")):
            table[i] = sum(1 << k for k, rule in enumerate(rules) if rule(name))
        elif name.startswith("$") and is_framework_wait(name):
            # a framework's wait for device values (JAX's block_until_ready, device_get, Array._value: a Python
            # frame, graph.point_rows): the host waits for the GPU as in a device synchronize
            table[i] = 0b1
    n = call_names.size
    is_sync, sync_copy = np.zeros(n, bool), np.zeros(n, bool)
    hit = rows_named(call_names, table != 0)
    if hit is None:
        empty = np.zeros(0, np.int64)
        return is_sync, sync_copy, empty, empty
    calls = np.flatnonzero(hit)
    bits = table[call_names[calls]]
    is_sync[calls[(bits & 0b1) != 0]] = True
    sync_copy[calls[(bits & 0b10) != 0]] = True
    return is_sync, sync_copy, calls[(bits & 0b100) != 0], calls[(bits & 0b1000) != 0]


def text_mask(values: pa.Array | pa.ChunkedArray, predicate: Callable[[str], bool]) -> np.ndarray:
    """Per row, ``predicate(str(value))`` of a string column (a null reads as "None", as ``str`` writes it),
    evaluated once per distinct word of a dictionary column, not once per row."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not pa.types.is_dictionary(values.type):
        return np.array([predicate(str(v)) for v in values.to_pylist()], bool)  # not the schema's type: rare
    words = values.dictionary.to_pylist()
    hit = np.array([predicate(str(w)) for w in words] + [predicate(str(None))], bool)
    return hit[arrow_filled(values.indices, len(words)).astype(np.int64)]  # a null reads as "None", the last


def lower_is(text: str) -> Callable[[str], bool]:
    return lambda word: word.lower() == text


def _is_stream_wait(name: str) -> bool:
    return bool(STREAM_WAIT_PATTERN.match(strip_api_suffix(name)))


def _is_event_record(name: str) -> bool:
    return bool(EVENT_RECORD_PATTERN.match(strip_api_suffix(name)))


def _is_sync_call(name: str) -> bool:
    """An explicit synchronize (stream, event, device, context), not a synchronous copy."""
    return is_blocking_sync(name) and not is_sync_copy(name)
