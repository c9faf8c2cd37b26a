"""GPU details of XSpace events from their stats: the op each GPU op ran for, copy bytes and memory kinds."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..tf_common import extract_int
from .stats import OP_STATS, StatColumns

# tf_op of a kernel of an XLA program that no TF op launched (JAX): no TF op, the HLO op names it.
_NO_TF_OP = ("", "XlaModule:")
MEM_KIND_LABELS = ("pageable", "pinned", "device", "managed", "array")
_MEM_KIND = {
    "pageable": "pageable",
    "pinned": "pinned",
    "device": "device",
    "managed": "managed",
    "array": "array",
    "device_static": "device",
    "managed_static": "managed",
}


def gpu_ops(stats: StatColumns, gpu_rows: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The op each GPU row ran for (codes into the returned labels, -1: none recorded), from its own stats:
    the TF op (``tf_op``, unless XLA's placeholder ``XlaModule:``), else TF <= 2.5's outermost annotation
    (``level 0``), else the HLO op (``hlo_op``) as ``<hlo_module>/<hlo_op>`` (the op alone without a module).
    Decided per distinct value (Arrow kernels), never per event."""
    if not any(name in stats.string_values for name in OP_STATS):
        return np.full(gpu_rows.size, -1, np.int32), []
    tf_op = stats.strings("tf_op", gpu_rows)
    tf_op = pc.if_else(
        pc.is_in(tf_op, pa.array(_NO_TF_OP, pa.string())), pa.nulls(len(tf_op), pa.string()), tf_op
    )
    hlo_op = stats.strings("hlo_op", gpu_rows)
    qualified = pc.binary_join_element_wise(stats.strings("hlo_module", gpu_rows), hlo_op, "/")
    op = pc.coalesce(tf_op, stats.strings("level 0", gpu_rows), qualified, hlo_op)
    op = pc.if_else(pc.equal(op, ""), pa.nulls(len(op), pa.string()), op)
    encoded = pc.dictionary_encode(op)
    codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, [str(v) for v in encoded.dictionary.to_pylist()]


def _map_strings(values: pa.Array, mapping: dict[str, int]) -> np.ndarray:
    """Map each string through ``mapping`` to a code (-1 when absent), once per distinct value."""
    encoded = pc.dictionary_encode(values)
    mapped = np.array([mapping.get(v, -1) for v in encoded.dictionary.to_pylist()] + [-1], dtype=np.int32)
    indices = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy(zero_copy_only=False)
    return mapped[indices]


def memcpy_columns(details: pa.Array, copy_kind: np.ndarray) -> dict[str, Any]:
    """Bytes and memory kinds from ``memcpy_details``/``memset_details``; ``copy_kind``: codes from the name."""
    size = extract_int(details, r"(?:^|\s)size:(?P<v>\d+)")
    if len(details) == 0:
        empty = np.empty(0, np.int32)
        return {"bytes": size, "copy_kind": copy_kind, "src_kind": empty, "dst_kind": empty}
    codes = {k: MEM_KIND_LABELS.index(v) for k, v in _MEM_KIND.items()}
    src = pc.struct_field(pc.extract_regex(details, r"kind_src:(?P<v>\w+)"), [0])
    dst = pc.struct_field(pc.extract_regex(details, r"kind_dst:(?P<v>\w+)"), [0])
    return {
        "bytes": size,
        "copy_kind": copy_kind,
        "src_kind": _map_strings(src, codes),
        "dst_kind": _map_strings(dst, codes),
    }
