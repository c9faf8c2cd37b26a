"""Cross-rank math on the query results: leave-one-out lateness, stragglers, collective wait vs transfer,
imbalance (numpy/pandas only; definitions in ``docs/multirank.md``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..units import fmt_ns

# A straggler is called significant when its mean lateness reaches this share of the reference interval
# (the median step time, or the median interval between collectives).
STRAGGLER_SIGNIFICANT_FRACTION = 0.05
# The run is called imbalanced when the time lost to imbalance reaches this share of the summed GPU spans.
IMBALANCE_SIGNIFICANT_FRACTION = 0.05
# Without a matched collective, ranks' GPU work is compared only when their captures agree in length: the
# shortest at least this share of the longest (a 10x longer capture holds 10x the work of a balanced job).
CAPTURE_LENGTH_AGREEMENT = 0.9

# Collective time that is waiting, at or above which a significant straggler is what collectives cost; at or
# below TRANSFER_BOUND_WAIT_SHARE every participant spends its collective time transferring.
STRAGGLER_WAIT_SHARE = 0.5
TRANSFER_BOUND_WAIT_SHARE = 0.25

# Clocks that agree across processes and machines (NTP-synced wall clock): ranks on them align as recorded.
COMPARABLE_CLOCKS = frozenset({"unix"})


def leave_one_out_median(matrix: np.ndarray) -> np.ndarray:
    """For each cell, the median of the *other* non-NaN cells of its column (NaN when fewer than one other).

    Vectorized: each column is sorted once; removing the cell at sorted position p shifts the indices of
    the remaining values at or after p by one.
    """
    values = np.asarray(matrix, dtype=np.float64)
    n_rows, n_cols = values.shape
    if n_rows == 0 or n_cols == 0:
        return np.full(values.shape, np.nan)
    order = np.argsort(values, axis=0, kind="stable")  # NaN sorts last
    ordered = np.take_along_axis(values, order, axis=0)
    position = np.empty_like(order)
    np.put_along_axis(
        position, order, np.broadcast_to(np.arange(n_rows)[:, None], order.shape).copy(), axis=0
    )
    valid = ~np.isnan(values)
    remaining = valid.sum(axis=0) - 1  # values left once the cell itself is removed
    low = np.broadcast_to((remaining - 1) // 2, values.shape)
    high = np.broadcast_to(remaining // 2, values.shape)

    def remaining_value(j: np.ndarray) -> np.ndarray:
        index = np.clip(j + (j >= position), 0, n_rows - 1)
        return np.take_along_axis(ordered, index, axis=0)

    median = (remaining_value(low) + remaining_value(high)) / 2.0
    return np.where(valid & (remaining >= 1)[None, :], median, np.nan)


def lateness(starts: pd.DataFrame) -> pd.DataFrame:
    """``starts``: rows = participants, columns = aligned events (steps or collectives), cells = start ns
    (NaN when absent). Returns each cell's lateness = start - median start of the other participants."""
    values = starts.to_numpy(dtype=np.float64)
    return pd.DataFrame(values - leave_one_out_median(values), index=starts.index, columns=starts.columns)


def _straggler(late: pd.DataFrame, reference_ns: float | None, basis: str, alignment: str) -> dict[str, Any]:
    """Mean/max lateness per participant and the participant with the largest mean lateness."""
    compared = late.columns[late.notna().sum(axis=0) >= 2]
    late = late[compared]
    per = pd.DataFrame(
        {
            "mean_lateness_ns": late.mean(axis=1, skipna=True),
            "max_lateness_ns": late.max(axis=1, skipna=True),
            "compared": late.notna().sum(axis=1),
        }
    ).dropna(subset=["mean_lateness_ns"])
    result: dict[str, Any] = {
        "basis": basis,
        "alignment": alignment,
        "compared": int(len(compared)),
        "reference_ns": _rounded_int(reference_ns),
        "per_rank": [],
        "straggler": None,
    }
    if per.empty:
        return result
    for key, row in per.iterrows():
        rank, device = key if isinstance(key, tuple) else (key, None)
        result["per_rank"].append(
            {
                "rank": int(rank),
                "device": _rounded_int(device),
                "mean_lateness_ns": int(round(row.mean_lateness_ns)),
                "max_lateness_ns": int(round(row.max_lateness_ns)),
                "compared": int(row.compared),
            }
        )
    # ties go to the lowest rank: idxmax returns the first maximum and the index is sorted
    worst = per["mean_lateness_ns"].idxmax()
    rank, device = worst if isinstance(worst, tuple) else (worst, None)
    delay = float(per.loc[worst, "mean_lateness_ns"])
    result["straggler"] = {
        "rank": int(rank),
        "device": _rounded_int(device),
        "delay_ns": int(round(delay)),
        "max_lateness_ns": int(round(per.loc[worst, "max_lateness_ns"])),
        "significant": bool(
            reference_ns and delay >= STRAGGLER_SIGNIFICANT_FRACTION * reference_ns and delay > 0
        ),
    }
    return result


def _rounded_int(value: Any) -> int | None:
    """Nearest int of a pandas/numpy value (NaN, NA, None -> None): device ids and times come back as floats."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    return int(round(float(value)))


def _align(starts: pd.DataFrame, comparable: bool) -> tuple[pd.DataFrame, str]:
    """Starts relative to a common reference. On clocks that do not agree across ranks, each participant
    is re-based on the first column all share, so only lateness that grows after it is seen."""
    reference = np.nanmin(starts.to_numpy(dtype=np.float64)) if starts.size else 0.0
    shifted = starts - reference
    if comparable:
        return shifted, "clock"
    shared = starts.columns[starts.notna().all(axis=0)]
    if len(shared) == 0:
        return shifted.iloc[:, :0], "first_common"
    return shifted.sub(shifted[shared[0]], axis=0), "first_common"


def step_analysis(steps: pd.DataFrame, comparable: bool) -> dict[str, Any]:
    """Per-rank step times and step-start stragglers from the (rank, step, start, end) table."""
    if steps.empty:
        return {"per_rank": [], "straggler": None, "basis": "step", "compared": 0}
    # integer arithmetic first: absolute ns do not fit a float64 exactly
    base = int(steps["start_abs_ns"].min())
    frame = steps.assign(
        start=(steps["start_abs_ns"] - base).astype("int64"),
        duration=(steps["end_abs_ns"] - steps["start_abs_ns"]).astype("int64"),
    )
    starts = frame.pivot(index="rank", columns="step", values="start").astype("float64")
    aligned, alignment = _align(starts, comparable)
    median_step = float(frame["duration"].median())
    result = _straggler(lateness(aligned), median_step, "step", alignment)
    stats = frame.groupby("rank")["duration"].agg(["count", "mean", "median", "max"])
    result["step_times"] = [
        {
            "rank": int(r),
            "count": int(s["count"]),
            "mean_ns": int(round(s["mean"])),
            "median_ns": int(round(s["median"])),
            "max_ns": int(s["max"]),
        }
        for r, s in stats.iterrows()
    ]
    return result


def collective_analysis(kernels: pd.DataFrame, comparable: bool) -> dict[str, Any]:
    """Match NCCL kernels across participants (rank, device) by (name, ordinal); per collective the
    fastest participant's duration is data transfer, the rest of each participant's duration is waiting."""
    empty = {
        "participants": 0,
        "matched": 0,
        "unmatched_kernels": 0,
        "per_rank": [],
        "transfer_ns": 0,
        "wait_ns": 0,
        "collective_ns": 0,
        "straggler": None,
        "wait_share": None,
        "verdict": None,
    }
    if kernels.empty:
        return empty
    frame = kernels.astype(
        {
            "rank": "int64",
            "device": "int64",
            "collective": "int64",
            "start_abs_ns": "int64",
            "dur_ns": "int64",
        }
    )
    participants = frame[["rank", "device"]].drop_duplicates()
    n_participants = len(participants)
    per_collective = frame.groupby("collective")["dur_ns"].agg(["count", "min"]).reset_index()
    frame = frame.merge(per_collective, on="collective")
    matched = (frame["count"] == n_participants) & (n_participants >= 2)
    frame["transfer"] = np.where(matched, frame["min"], 0)
    frame["wait"] = np.where(matched, frame["dur_ns"] - frame["min"], 0)
    frame["matched"] = matched
    grouped = (
        frame.groupby(["rank", "device"])
        .agg(
            collectives=("dur_ns", "size"),
            collective_ns=("dur_ns", "sum"),
            transfer_ns=("transfer", "sum"),
            wait_ns=("wait", "sum"),
            matched=("matched", "sum"),
        )
        .reset_index()
    )
    result = {
        "participants": n_participants,
        "matched": int(matched.sum() // max(n_participants, 1)),
        "unmatched_kernels": int((~matched).sum()),
        "per_rank": [
            {
                "rank": int(r.rank),
                "device": None if r.device < 0 else int(r.device),
                "collectives": int(r.collectives),
                "collective_ns": int(r.collective_ns),
                "transfer_ns": int(r.transfer_ns),
                "wait_ns": int(r.wait_ns),
                "wait_fraction": float(r.wait_ns / r.collective_ns) if r.collective_ns else 0.0,
            }
            for r in grouped.itertuples()
        ],
        "transfer_ns": int(grouped["transfer_ns"].sum()),
        "wait_ns": int(grouped["wait_ns"].sum()),
        "collective_ns": int(grouped["collective_ns"].sum()),
        "straggler": None,
    }
    if matched.any():
        base = int(frame["start_abs_ns"].min())
        rows = frame[matched].assign(start=lambda f: (f["start_abs_ns"] - base).astype("int64"))
        starts = rows.pivot_table(
            index=["rank", "device"], columns="collective", values="start", aggfunc="min"
        )
        starts = starts.astype("float64")
        aligned, alignment = _align(starts, comparable)
        # reference: the typical interval between consecutive collectives on one participant
        ordered = np.sort(starts.to_numpy(), axis=1)
        steps = np.diff(ordered, axis=1)
        reference = float(np.nanmedian(steps)) if steps.size and not np.isnan(steps).all() else None
        strag = _straggler(lateness(aligned), reference, "collective", alignment)
        for row in strag["per_rank"]:
            if row["device"] is not None and row["device"] < 0:
                row["device"] = None
        if (
            strag["straggler"]
            and strag["straggler"]["device"] is not None
            and strag["straggler"]["device"] < 0
        ):
            strag["straggler"]["device"] = None
        result["straggler"] = strag
    result.update(_collective_verdict(result))
    return result


def match_collectives(kernels: pd.DataFrame) -> np.ndarray:
    """Per NCCL kernel (rows with ``rank``, ``device``, ``name``, ``start``, ``end``), the id of the collective it
    takes part in, -1 where unmatched: the rule of :func:`query_collectives` and :func:`collective_analysis` in
    pandas (the run's replay joins the ranks with it). Kernels are numbered per (rank, device, name) in (start,
    end) order; one (name, ordinal) is one collective; it is matched when every participant (rank, device) that
    ran an NCCL kernel has it, and there are at least two. Ids are dense over the matched collectives, in (name,
    ordinal) order."""
    out = np.full(len(kernels), -1, np.int64)
    if kernels.empty:
        return out
    frame = kernels[["rank", "device", "name", "start", "end"]].reset_index(drop=True)
    frame = frame.assign(row=np.arange(len(frame)))
    frame = frame.sort_values(["rank", "device", "name", "start", "end"], kind="stable")
    frame["ordinal"] = frame.groupby(["rank", "device", "name"]).cumcount()
    participants = len(frame[["rank", "device"]].drop_duplicates())
    count = frame.groupby(["name", "ordinal"])["row"].transform("size")
    matched = frame[(count == participants) & (participants >= 2)]
    out[matched["row"].to_numpy(np.int64)] = matched.groupby(["name", "ordinal"]).ngroup().to_numpy(np.int64)
    return out


def _collective_verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Slow link or straggler: in a straggler's collectives the others wait for it (most of their collective time
    is waiting, one participant arrives late); on a slow link (or with big messages) every participant's
    collectives take long, and waiting is a small part of them."""
    matched_ns = result["transfer_ns"] + result["wait_ns"]
    if not result["matched"] or matched_ns <= 0:
        return {"wait_share": None, "verdict": None}
    share = result["wait_ns"] / matched_ns
    straggler = (result.get("straggler") or {}).get("straggler") or {}
    if share >= STRAGGLER_WAIT_SHARE and straggler.get("significant"):
        verdict = "straggler"
    elif share <= TRANSFER_BOUND_WAIT_SHARE:
        verdict = "transfer_bound"
    else:
        verdict = "mixed"
    return {"wait_share": share, "verdict": verdict}


def capture_lengths(work: pd.DataFrame) -> dict[int, int]:
    """Each rank's capture of GPU work: its first op's start to its last op's end over its GPUs (ns)."""
    if work.empty or "first_ns" not in work:
        return {}
    by_rank = work.groupby("rank").agg(first=("first_ns", "min"), last=("last_ns", "max"))
    return {int(r): int(row["last"] - row["first"]) for r, row in by_rank.iterrows()}


def imbalance_analysis(work: pd.DataFrame, collectives: dict[str, Any], span_total_ns: int) -> dict[str, Any]:
    """Time lost to imbalance, per GPU (the mean over participants, comparable with one GPU's span, as the
    diagnosis compares it): the collective wait when NCCL collectives matched across participants (ranks
    waiting for the slowest), else the spread of GPU work, (max work - work) per participant. The work of
    ranks whose captures differ in length (shortest under CAPTURE_LENGTH_AGREEMENT of the longest) measures
    the captures, not a split of the work: without a matched collective ``lost_ns`` is then null, with a
    ``reason``."""
    work_ns = work["work_ns"].astype("int64").to_numpy() if not work.empty else np.zeros(0, np.int64)
    spread = int((work_ns.max() - work_ns).sum()) if work_ns.size >= 2 else 0
    mean = float(work_ns.mean()) if work_ns.size else 0.0
    participants = max(int(collectives.get("participants") or 0), int(work_ns.size), 1)
    lengths = capture_lengths(work)
    reason = None
    if len(lengths) >= 2 and min(lengths.values()) < CAPTURE_LENGTH_AGREEMENT * max(lengths.values()):
        (short, s_ns), (long, l_ns) = (
            min(lengths.items(), key=lambda kv: (kv[1], kv[0])),
            max(lengths.items(), key=lambda kv: (kv[1], -kv[0])),
        )
        reason = (
            f"the ranks' captures differ in length (rank {short}: {fmt_ns(s_ns)}, rank {long}: "
            f"{fmt_ns(l_ns)}) and no NCCL collective matched across them: their GPU work cannot be compared"
        )
    total: int | None
    if collectives.get("matched"):
        total, basis, reason = int(collectives["wait_ns"]), "collective_wait", None
    elif work_ns.size >= 2:
        total, basis = (None, "work_spread") if reason else (spread, "work_spread")
    else:
        total, basis = 0, "single_participant"
    fraction = (total / span_total_ns if span_total_ns > 0 else 0.0) if total is not None else None
    return {
        "lost_ns": int(round(total / participants)) if total is not None else None,
        "total_lost_ns": total,
        "basis": basis,
        "lost_fraction": fraction,
        "reason": reason,
        "collective_wait_ns": int(collectives.get("wait_ns", 0)),
        "work_spread_ns": spread,
        "max_over_mean_work": float(work_ns.max() / mean) if mean > 0 else None,
        "participants": participants,
        "verdict": None
        if fraction is None
        else ("imbalanced" if fraction >= IMBALANCE_SIGNIFICANT_FRACTION else "balanced"),
    }
