"""Peak dense throughput per GPU model and dtype: the table ``tracelens/data/peak_flops.csv`` (each row cites
the vendor datasheet it is read from) and the dtype of an op's inputs.

A device name as the trace records it ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-16GB", "AMD Instinct MI300X")
is matched against the rows' patterns in file order; the first match names the model. Definitions:
``docs/analyses.md`` ("compute").
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

DTYPES = ("FP32", "TF32", "FP16", "BF16", "FP8")

# PyTorch's scalar type names as Kineto's "Input type" writes them -> the peak table's dtype. Integer, bool
# and FP64 inputs have no row: FLOPs of such ops count, with no peak to compare them with.
_TORCH_DTYPE = {
    "float": "FP32",
    "c10::Half": "FP16",
    "c10::BFloat16": "BF16",
    "c10::Float8_e4m3fn": "FP8",
    "c10::Float8_e5m2": "FP8",
    "c10::Float8_e4m3fnuz": "FP8",
    "c10::Float8_e5m2fnuz": "FP8",
    "double": "FP64",
}


@dataclass(frozen=True)
class Peak:
    """One row of the table: a model's peak for one dtype, in FLOP/s, and where the figure comes from."""

    model: str
    pattern: re.Pattern[str]
    dtype: str
    flops_per_s: float
    source: str


@cache
def peak_table() -> tuple[Peak, ...]:
    """The rows of ``data/peak_flops.csv`` in file order (lines starting with ``#`` are its notes)."""
    text = resources.files("tracelens").joinpath("data/peak_flops.csv").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return tuple(
        Peak(
            r["model"],
            re.compile(r["pattern"], re.IGNORECASE),
            r["dtype"],
            float(r["tflops"]) * 1e12,
            r["source"],
        )
        for r in csv.DictReader(io.StringIO("\n".join(lines)))
    )


def device_model(name: str | None) -> str | None:
    """The model of the table's first row whose pattern the device name matches (None: no row does)."""
    if not name:
        return None
    for row in peak_table():
        if row.pattern.search(name):
            return row.model
    return None


def peak(model: str, dtype: str) -> Peak | None:
    """The model's row for ``dtype`` (None: the part has no such figure, e.g. TF32 or FP8 on a V100)."""
    return next((r for r in peak_table() if r.model == model and r.dtype == dtype), None)


def torch_dtype(type_name: str | None) -> str | None:
    """The peak table's dtype (or FP64) of a PyTorch ``Input type`` entry; None for non-float types."""
    return _TORCH_DTYPE.get(type_name) if type_name else None
