"""The step windows as numpy arrays: what the steps and attribution sections read of the step markers, without
pandas."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace import STEP, Trace
from ..values import first_seen_codes
from .columns import event_columns, memo


@dataclass(frozen=True)
class StepWindows:
    """One entry per step number, sorted by start (then step): its number and the first start and last end of its
    markers (numpy arrays)."""

    step: np.ndarray
    start: np.ndarray  # int64
    end: np.ndarray  # int64

    def __len__(self) -> int:
        return int(self.step.size)


def step_window_arrays(trace: Trace) -> StepWindows:
    """The step windows without pandas: ``frame.groupby("step", sort=False).agg(start=min, end=max)`` sorted by
    (start, step), in numpy (few markers: one per step and thread)."""

    def compute() -> StepWindows:
        cols = event_columns(trace)
        rows = cols.of_kind(STEP)
        number = cols.at("step", rows).copy()
        missing = number < 0
        if missing.any():
            # Unnumbered markers: number them after the highest known one, in time order.
            base = number.max() + 1 if (~missing).any() else 0
            number[missing] = base + np.arange(missing.sum())
        code, steps = first_seen_codes(number)
        start = np.full(steps.size, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(start, code, cols.start[rows])
        end = np.full(steps.size, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(end, code, cols.end[rows])
        order = np.lexsort((steps, start))  # by start, then step (one row per step: no ties left)
        return StepWindows(steps[order], start[order], end[order])

    return memo(trace, "step_windows", compute)
