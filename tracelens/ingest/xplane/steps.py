"""Step rows of an XSpace read: host step markers, else the device planes' ``Steps`` lines, collapsed to one
row per (host, step number)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...event_names import step_number
from .stats import StatColumns


def step_from_name(name: str) -> int:
    number = step_number(name)
    return -1 if number is None else number


def collapse_steps(
    rows: np.ndarray, step: np.ndarray, host: np.ndarray, start: np.ndarray, end: np.ndarray
) -> dict[str, np.ndarray] | None:
    """One (host, step) entry spanning the earliest start to the latest end of its markers."""
    if rows.size == 0:
        return None
    import pandas as pd

    frame = pd.DataFrame({"host": host[rows], "step": step[rows], "start": start[rows], "end": end[rows]})
    grouped = (
        frame.groupby(["host", "step"], sort=True)
        .agg(start=("start", "min"), end=("end", "max"))
        .reset_index()
    )
    return {col: grouped[col].to_numpy(np.int64) for col in ("host", "step", "start", "end")}


def device_steps(
    rows: np.ndarray,
    stats: StatColumns,
    name_index: np.ndarray,
    names: list[str],
    host: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> dict[str, Any] | None:
    """Steps from the device planes' ``Steps`` lines: one row per (host, step) across all GPUs."""
    if rows.size == 0:
        return None
    step_name = stats.strings("step_name", rows).to_pylist()
    group_id, has_group = stats.int_column("group_id")
    numbers = np.full(rows.size, -1, np.int64)
    for i, (row, label) in enumerate(
        zip(rows, step_name, strict=True)
    ):  # one per step and GPU: a few hundred at most
        text = label if label is not None else names[name_index[row]]
        if text is not None and str(text).strip().isdigit():
            numbers[i] = int(str(text).strip())
        elif has_group[row]:
            numbers[i] = group_id[row]
    ok = numbers >= 0
    if not ok.any():
        return None
    full_step = np.full(start.size, -1, np.int64)
    full_step[rows[ok]] = numbers[ok]
    return collapse_steps(rows[ok], full_step, host, start, end)
