"""The step each point of a replay graph belongs to, and the steps holding work: by the compiled helper
(_replay_solve.c: one pass each) where it was built, else by numpy passes (the path without it, and the tests'
reference); the same integers."""

from __future__ import annotations

import numpy as np

from .engine import native_solver
from .graph import Graph


def write_launched_steps(step_of: np.ndarray, g: Graph) -> np.ndarray:
    """Each launched op's start and end point take the step of its launch call's start point (``step_of``, int64,
    written in place; the host points' steps already there). Returns the launched mask (bool per op)."""
    launched = g.op_launch_call >= 0
    solver = native_solver()
    if solver is not None and step_of.dtype == np.int64 and step_of.flags.c_contiguous:
        solver.launched_steps(  # type: ignore[attr-defined]
            step_of,
            np.ascontiguousarray(g.op_launch_call, np.int64),
            np.ascontiguousarray(g.call_start),
            np.ascontiguousarray(g.op_start, np.int64),
            np.ascontiguousarray(g.op_end, np.int64),
        )
        return launched
    at_call = step_of[g.call_start[g.op_launch_call[launched]]]  # searched once per call, not again per op
    step_of[g.op_start[launched]] = at_call
    step_of[g.op_end[launched]] = at_call
    return launched


def worked_step_span(step_of: np.ndarray, skip: np.ndarray) -> tuple[int, int]:
    """(first, last) step (>= 0) of the points but ``skip`` (point indices: the step markers'); (-1, -1) where none
    has a step."""
    solver = native_solver()
    if solver is not None and step_of.dtype == np.int64:
        first, last = solver.worked_step_span(  # type: ignore[attr-defined]
            np.ascontiguousarray(step_of), np.sort(skip).astype(np.int64, copy=False)
        )
        return int(first), int(last)
    worked = step_of >= 0
    worked[skip] = False  # by index: no pass over a mask
    last = int(np.max(step_of, where=worked, initial=-1))  # read in place: no copy of the steps
    if last < 0:
        return -1, -1
    return int(np.min(step_of, where=worked, initial=last)), last
