"""The Kineto table's strings (:class:`.table.Columns`): names and other texts interned across blocks, and the
labels some string columns take from the names (copy kinds, sync kinds)."""

from __future__ import annotations

import re

import numpy as np

from .stored import Stored, dictionary_column_at

_MEMCPY_NAME = re.compile(r"^Memcpy (\w+) \((\w+) -> (\w+)\)")
_SYNC_KINDS = {
    "stream sync": "stream_sync",
    "event sync": "event_sync",
    "stream wait event": "stream_wait_event",
    "context sync": "context_sync",
}
_MEMORY_KINDS = {
    "pageable": "pageable",
    "pinned": "pinned",
    "device": "device",
    "managed": "managed",
    "array": "array",
    "host": "host",
}


class Interner:
    """Strings -> stable small ints across blocks (names, sync kinds)."""

    def __init__(self) -> None:
        self.codes: dict[str, int] = {}
        self.values: list[str] = []

    def merge(self, codes: np.ndarray, uniques: list[str]) -> np.ndarray:
        """A block's local codes as global codes."""
        if not uniques and codes.dtype == np.int32:
            # no strings: every code is -1 (missing) already (most blocks' op texts and sync kinds; ~9 calls a
            # block on the inflating thread, each a lookup table and a gather)
            return codes
        return np.take(self.mapping(uniques), codes)  # -1 (missing) takes the trailing -1

    def mapping(self, uniques: list[str]) -> np.ndarray:
        """The global codes of a block's strings (int32), with a trailing -1 for its missing code (-1)."""
        # Looked up in one pass (most of a block's strings were seen in earlier blocks); only the new ones
        # are added, in the block's order. This runs on the thread that inflates the file, once per block.
        found = list(map(self.codes.get, uniques))
        if None in found:
            found = [self._code(u) if c is None else c for u, c in zip(uniques, found, strict=True)]
        return np.array(found + [-1], dtype=np.int32)

    def _code(self, value: str) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code


def sync_label(text: str) -> str:
    """A sync row's ``sync_kind`` label from its cuda_sync_kind or, where it has none, its event name."""
    lowered = text.lower()
    return _SYNC_KINDS.get(lowered, lowered.replace(" ", "_"))


def memcpy_kinds(names: list[str], name_code: np.ndarray, rows: np.ndarray, m: int) -> tuple[Stored, ...]:
    """The copy, source and destination kinds of the memcpy ``rows`` (ascending; ``name_code`` at them)."""
    parsed = [_MEMCPY_NAME.match(n) for n in names]
    copy = [m.group(1) if m else None for m in parsed]
    src = [_MEMORY_KINDS.get(m.group(2).lower(), m.group(2).lower()) if m else None for m in parsed]
    dst = [_MEMORY_KINDS.get(m.group(3).lower(), m.group(3).lower()) if m else None for m in parsed]
    return tuple(dictionary_column_at(name_code, v, rows, m) for v in (copy, src, dst))
