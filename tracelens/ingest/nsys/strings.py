"""Strings of an Nsight Systems export: ``StringIds`` as one Arrow dictionary, with vectorized id -> index
lookups, placeholders for ids the table lacks, and API names without their version suffixes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...event_names import API_SUFFIX_PATTERN, API_SUFFIX_REPLACEMENT
from .columns import dict_array, id_numpy, int64_numpy
from .database import Database


def decode_dictionary(binary: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode a binary column: (int32 indices with -1 for null/empty, unique string values).

    Invalid UTF-8 is decoded with U+FFFD replacement (only the unique values are decoded in Python).
    """
    if isinstance(binary, pa.ChunkedArray):
        binary = binary.combine_chunks()
    if not (pa.types.is_binary(binary.type) or pa.types.is_string(binary.type)):
        binary = binary.cast(pa.string()).cast(pa.binary())
    # A null gets its own dictionary slot, read as '' (then as no value, like an empty string): the slots come
    # out as they do for the reference queries, which read NULL as '' (queries.text_cast).
    encoded = pc.dictionary_encode(binary, null_encoding="encode")
    indices = encoded.indices.fill_null(-1).to_numpy().astype(np.int32, copy=False)
    return decode_encoded(indices, encoded.dictionary)


def decode_encoded(indices: np.ndarray, values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """:func:`decode_dictionary` of a column already dictionary-encoded (int32 ``indices`` into the binary or
    string ``values``, e.g. by the page reader): -1 for a null or empty value, the values decoded and made
    unique, exactly as :func:`decode_dictionary` gives them for the decoded column."""
    if values.null_count:
        values = values.fill_null(b"" if pa.types.is_binary(values.type) else "")
    try:
        strings = values.cast(pa.string())
    except pa.ArrowInvalid:
        strings = pa.array([v.decode("utf-8", "replace") for v in values.to_pylist()], pa.string())
    empty = np.flatnonzero(
        pc.equal(pc.binary_length(values), 0).fill_null(True).to_numpy(zero_copy_only=False)
    )
    if empty.size:
        indices = np.where(np.isin(indices, empty), -1, indices).astype(np.int32)
    return dedupe(indices, strings)


def dedupe(indices: np.ndarray, values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Make dictionary values unique (e.g. after stripping suffixes), remapping indices."""
    unique = pc.unique(values)
    if len(unique) == len(values):
        return indices, values
    remap = pc.index_in(values, value_set=unique).to_numpy(zero_copy_only=False).astype(np.int32)
    out = np.where(indices >= 0, remap[np.maximum(indices, 0)], -1).astype(np.int32)
    return out, unique


# StringIds ids are keys, not positions: nsys numbers a full export's strings densely from 0, but an export
# cut out of a bigger one keeps the original ids (126 strings with ids up to 3,436,172). Ids up to this many
# slots past the row count get a dense id -> slot table (4 bytes a slot: at most 4 MiB more than the strings
# need); sparser ids are looked up by binary search in the sorted ids.
_DENSE_SLACK = 2**20
# Lookup codes besides a position in ``values``: no name (a null id, or an empty or null value), and an id
# that StringIds lacks (named by _PLACEHOLDER).
UNNAMED = -1
MISSING = -2
# The name given to rows whose string id StringIds lacks: "<unknown string id 3436172>".
_PLACEHOLDER = ("<unknown string id ", ">")


@dataclass
class Strings:
    """StringIds: ``keys`` (sorted, unique ids) -> ``slots`` (positions in ``values``, -1 for an empty value);
    ``table`` is the same map as a dense array (``MISSING`` where absent) when the ids are compact enough."""

    keys: np.ndarray
    slots: np.ndarray
    values: pa.Array
    table: np.ndarray | None = None
    _stripped: tuple[np.ndarray, pa.Array] | None = field(default=None, repr=False)
    # Distinct missing ids and row counts, one entry per looked-up column (appends are atomic: the tables
    # are built in parallel threads).
    _missing: list[tuple[np.ndarray, int]] = field(default_factory=list, repr=False)

    @classmethod
    def load(cls, db: Database) -> Strings:
        if "StringIds" not in db.tables or not {"id", "value"} <= set(db.columns("StringIds")):
            return cls(np.empty(0, np.int64), np.empty(0, np.int32), pa.array([], pa.string()))
        # nsys declares id INTEGER PRIMARY KEY (never anything else); rows of a hand-edited table whose id is
        # NULL, text, a blob or a real (e.g. beyond int64) are left out, like odd rows of the other lookups.
        table = db.arrow(
            "SELECT id, ifnull(CAST(value AS BLOB), X'') FROM StringIds WHERE typeof(id) = 'integer'",
            ["id", "value"],
        )
        if not table.num_rows:
            return cls(np.empty(0, np.int64), np.empty(0, np.int32), pa.array([], pa.string()))
        ids = int64_numpy(table.column("id"))
        slots, values = decode_dictionary(table.column("value"))
        del table
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():  # a rowid table comes sorted and unique
            order = np.argsort(ids, kind="stable")
            ids, slots = ids[order], slots[order]
            last = np.ones(ids.size, bool)  # a repeated id (not nsys): its last row wins
            last[:-1] = ids[1:] != ids[:-1]
            ids, slots = ids[last], slots[last]
        dense = None
        if ids[0] >= 0 and ids[-1] < ids.size + _DENSE_SLACK:
            dense = np.full(int(ids[-1]) + 1, MISSING, np.int32)
            dense[ids] = slots
        return cls(ids, slots, values, dense)

    def lookup(self, ids: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Positions in ``values`` for an id column: ``UNNAMED`` (-1) for a null id or an empty string,
        ``MISSING`` (-2) for an id StringIds lacks."""
        if isinstance(ids, pa.ChunkedArray):
            ids = ids.combine_chunks()
        if ids.null_count == len(ids):  # no id at all (NVTX named inline): no temporaries of every row
            return np.full(len(ids), UNNAMED, np.int32)
        arr = id_numpy(ids)
        if self.table is not None:
            ok = (arr >= 0) & (arr < self.table.size)
            codes = np.where(ok, self.table[np.where(ok, arr, 0)], MISSING).astype(np.int32)
        elif self.keys.size:
            at = np.minimum(np.searchsorted(self.keys, arr), self.keys.size - 1)
            codes = np.where(self.keys[at] == arr, self.slots[at], MISSING).astype(np.int32)
        else:
            codes = np.full(arr.size, MISSING, np.int32)
        if ids.null_count:
            codes[ids.is_null().to_numpy(zero_copy_only=False)] = UNNAMED
        return codes

    def placeholders(
        self, codes: np.ndarray, ids: np.ndarray, values: pa.Array
    ) -> tuple[np.ndarray, pa.Array]:
        """Name the ``MISSING`` rows of ``codes`` ``<unknown string id N>`` (N from ``ids``, the rows' id
        column as int64): (codes, values) with one placeholder value per distinct missing id appended, and
        the ids recorded for the file's warning. Vectorized: one np.unique and one Arrow string join."""
        missing = codes == MISSING
        if not missing.any():
            return codes, values
        unique, inverse = np.unique(ids[missing], return_inverse=True)
        self._missing.append((unique, int(missing.sum())))
        text = pc.binary_join_element_wise(
            _PLACEHOLDER[0], pa.array(unique).cast(pa.string()), _PLACEHOLDER[1], ""
        )
        codes = codes.copy()
        codes[missing] = len(values) + inverse.astype(np.int32)
        # A real string equal to a placeholder (never in nsys) would repeat a dictionary value: dedupe maps
        # each repeat onto its first occurrence.
        return dedupe(codes, pa.concat_arrays([values, text.cast(values.type)]))

    def missing_summary(self) -> str | None:
        """One line about the ids StringIds lacks (None when every id was found)."""
        if not self._missing:
            return None
        ids = np.unique(np.concatenate([m for m, _ in self._missing]))
        rows = sum(n for _, n in self._missing)
        shown = ", ".join(str(i) for i in ids[:3]) + (", ..." if ids.size > 3 else "")
        # The count and the placeholder first: the terminal report cuts long warning lines.
        return (
            f"{rows:,} row(s) named '{_PLACEHOLDER[0]}N{_PLACEHOLDER[1]}': StringIds lacks their "
            f"{ids.size:,} string id(s) ({shown})"
        )

    def names(self, ids: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
        codes = self.lookup(ids)
        codes, values = (
            self.placeholders(codes, id_numpy(ids), self.values)
            if (codes == MISSING).any()
            else (codes, self.values)
        )
        return dict_array(codes, values)

    def api_names(self, ids: pa.Array | pa.ChunkedArray) -> pa.DictionaryArray:
        """Names without their CUDA API suffixes (the rule: :mod:`tracelens.event_names`)."""
        if self._stripped is None:
            stripped = pc.replace_substring_regex(self.values, API_SUFFIX_PATTERN, API_SUFFIX_REPLACEMENT)
            self._stripped = dedupe(np.arange(len(self.values), dtype=np.int32), stripped)
        remap, values = self._stripped
        pos = self.lookup(ids)
        codes = pos.copy()
        found = pos >= 0
        codes[found] = remap[pos[found]]
        if (codes == MISSING).any():
            codes, values = self.placeholders(codes, id_numpy(ids), values)
        return dict_array(codes, values)

    def get(self, string_id: int | None) -> str | None:
        """One id's string (None for an id StringIds lacks or an empty string)."""
        if not isinstance(string_id, int) or not self.keys.size:
            return None
        at = int(np.searchsorted(self.keys, string_id)) if -(2**63) <= string_id < 2**63 else self.keys.size
        if at == self.keys.size or self.keys[at] != string_id or self.slots[at] < 0:
            return None
        return self.values[int(self.slots[at])].as_py()
