"""The run's ``whatif``: every rank's dependency graph joined at the collectives they share (replay/run_join.py),
replayed unchanged (``replay_error``, per rank and for the run) and with each cause's remedy applied on every rank
where it holds; the imbalance remedy balances the GPU work between collectives. Definitions in docs/multirank.md
("What-if of a run") and docs/analyses.md."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..analyses.whatif import (
    MAX_CUTS_WITHOUT_SOLVER,
    graph_points,
    outcome_errors,
    remedy_entry,
    replay_error_fields,
)
from ..replay import engine
from ..replay.remedies import NOT_MODELED_REASONS, REMEDIES
from ..replay.run_join import RankPart, RunOutcome, RunReplay, rank_part
from ..trace import Trace
from .crossrank import match_collectives

# The run's replay holds every rank's graph at once (not its events): the one-trace replay's limit on points.
# The parent holds every rank's graph at once (~120 B a point): 5M points keep it near 0.6 GiB, below the
# single-trace limit (MAX_POINTS, one trace's graph at a time).
MAX_RUN_POINTS = 5_000_000

IMBALANCE = "multi_gpu_imbalance"
IMBALANCE_REMEDY = "GPU work balanced across ranks between collectives"
NOT_JOINED_IMBALANCE = (
    "the ranks' clocks do not agree, so the replay cannot join them at their collectives: how long each rank waits "
    "for the others, and so what balancing gives, is not replayed"
)


def skipped(reason: str) -> dict[str, Any]:
    return {
        "replay_error": None,
        "remedies": [],
        "not_modeled": [IMBALANCE, *[c for c in NOT_MODELED_REASONS if c != IMBALANCE]],
        "not_modeled_reasons": {
            IMBALANCE: reason,
            **{k: v for k, v in NOT_MODELED_REASONS.items() if k != IMBALANCE},
        },
        "critical_path": None,
        "reason": reason,
    }


def _nccl_frame(parts: Sequence[RankPart]) -> pd.DataFrame:
    """One row per NCCL kernel of every rank (crossrank's definition: a kernel with ``nccl`` in its name, any case):
    rank index, device, name, start and end on the run's clock, and its op index in its rank's graph."""
    frames = []
    for index, part in enumerate(parts):  # a loop over ranks
        g = part.ctx.graph
        ops = np.flatnonzero(part.nccl)
        frames.append(
            pd.DataFrame(
                {
                    "index": index,
                    "rank": part.rank,
                    "op": ops,
                    "device": g.op_device[ops],
                    "name": part.nccl_names,
                    "start": g.time[g.op_start[ops]] + part.shift,
                    "end": g.time[g.op_end[ops]] + part.shift,
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def run_whatif(traces: Iterable[Trace], ranks: Sequence[int], comparable: bool) -> dict[str, Any]:
    """The run's ``whatif`` block (keys in docs/multirank.md) from every rank's trace, in ``ranks`` order, read one
    at a time (``traces`` may be a generator: each trace is released once its rank's graphs are built).
    ``comparable``: the ranks' clocks agree (crossrank.COMPARABLE_CLOCKS), so they can be joined."""
    models = {cause: model for cause, (_, model) in REMEDIES.items() if cause != "communication"}
    parts: list[RankPart] = []
    points = 0
    first_origin: int | None = None
    for rank, trace in zip(ranks, traces, strict=True):  # a loop over ranks, one trace in memory at a time
        points += graph_points(trace)
        if points > MAX_RUN_POINTS:
            return skipped(
                f"the run is too large to replay as one: over {MAX_RUN_POINTS:,} graph points by rank {rank}"
            )
        origin = int(trace.metadata.time_origin_ns)
        first_origin = origin if first_origin is None else first_origin
        parts.append(rank_part(rank, trace, models, origin - first_origin if comparable else None))
        del trace
    if not any(p.ctx.graph.op_row.size for p in parts):
        return skipped("no GPU activity: the replay models how host calls and GPU ops wait on each other")
    nccl = _nccl_frame(parts)
    ids = match_collectives(nccl) if len(nccl) else np.zeros(0, np.int64)
    matched = int(np.unique(ids[ids >= 0]).size)
    collective = [np.full(p.ctx.graph.op_row.size, -1, np.int64) for p in parts]
    if comparable and len(nccl):
        for index in range(len(parts)):  # a loop over ranks
            mine = (nccl["index"] == index).to_numpy()
            collective[index][nccl["op"].to_numpy(np.int64)[mine]] = ids[mine]
    replay = RunReplay(parts, collective)
    g = replay.graph
    cuts = engine.cut_count(g) + replay.barriers
    if engine.native_solver() is None and cuts > MAX_CUTS_WITHOUT_SOLVER:
        return skipped(
            f"too many blocking calls and joined collective kernels to replay without the compiled solver: {cuts:,} "
            f"(limit {MAX_CUTS_WITHOUT_SOLVER:,})"
        )
    recorded = replay.recorded()
    base = replay.base
    typical = replay.outcome(g.at_typical_lags())
    join_reason = None
    if not comparable:
        join_reason = (
            "the ranks' clocks do not agree across machines (not all on a clock in COMPARABLE_CLOCKS): each rank is "
            "replayed on its own, started at 0, without cross-rank edges; the run's span and step are the slowest rank's"
        )
    elif not replay.barriers and replay.unjoined:
        join_reason = (
            f"the {replay.unjoined:,} collectives matched across ranks have recorded times that disagree (a "
            "participant ends before another starts: clocks off by more than a collective): the ranks replay side by "
            "side without cross-rank edges"
        )
    elif not replay.barriers:
        join_reason = (
            "no collective matched across ranks: the ranks replay side by side without cross-rank edges"
        )
    replay_error = {
        **replay_error_fields(g, recorded, base, typical, sum(p.migrations for p in parts)),
        "joined": bool(replay.barriers),
        "join_reason": join_reason,
        "collectives_matched": matched,
        "collectives_joined": replay.barriers,
        "collectives_unjoined": replay.unjoined,
        "per_rank": [
            {"rank": int(rank), **outcome_errors(rec, rep)}
            for rank, rec, rep in zip(ranks, recorded.per_rank, base.per_rank, strict=True)
        ],
    }
    remedies = [
        r
        for r in (
            *(_per_rank_remedy(replay, cause, recorded, base) for cause in models),
            _communication(replay, recorded, base),
            _imbalance(replay, recorded, base) if comparable else None,
        )
        if r is not None
    ]
    remedies.sort(key=lambda r: (float(r["predicted_step_ns"] or 0.0), -int(r["gain_ns"])))
    not_modeled = {k: v for k, v in NOT_MODELED_REASONS.items() if k != IMBALANCE}
    if not comparable:
        not_modeled = {IMBALANCE: NOT_JOINED_IMBALANCE, **not_modeled}
    return {
        "replay_error": replay_error,
        "remedies": remedies,
        "not_modeled": list(not_modeled),
        "not_modeled_reasons": not_modeled,
        "critical_path": None,
        "reason": None,
    }


def _remedy(
    cause: str,
    remedy: str,
    out: RunOutcome,
    recorded: RunOutcome,
    base: RunOutcome,
    assumptions: str,
    ranks: Sequence[int],
) -> dict[str, Any]:
    """The remedy's entry: one trace's fields and arithmetic (analyses/whatif.py), over the run, and its ranks."""
    return {**remedy_entry(cause, remedy, out, recorded, base, assumptions), "ranks": [int(r) for r in ranks]}


def _per_rank_remedy(
    replay: RunReplay, cause: str, recorded: RunOutcome, base: RunOutcome
) -> dict[str, Any] | None:
    remedy, _ = REMEDIES[cause]
    changed, text, ranks = replay.per_rank(cause)
    if changed is None:
        return None
    assumptions = (
        f"Applied on every rank where the model finds something to change (ranks {_ranks_text(ranks)}); the "
        "other ranks keep their recorded work and wait at the collectives they share as the joined graph implies. "
        f"Rank {ranks[0]}'s model: {text}"
    )
    return _remedy(cause, remedy, replay.outcome(changed), recorded, base, assumptions, ranks)


def _communication(replay: RunReplay, recorded: RunOutcome, base: RunOutcome) -> dict[str, Any] | None:
    changed, placeholders, events = replay.communication()
    if changed is None:
        return None
    remedy, _ = REMEDIES["communication"]
    ranks = sorted({replay.ranks[i] for i in np.unique(replay.op_rank[replay.collective_kernels()])})
    assumptions = (
        "On every rank at once, exposed collectives overlap the computation after them, as if it did not need their "
        f"result (issued early enough, or on a side stream): {placeholders:,} collective kernels on a stream that "
        f"also runs computation no longer hold the ops after them (they still start after the ops before them), and "
        f"{events:,} waits of other streams on a collective's event go. Host waits still wait for each collective's "
        f"completion: the last participant's arrival (for the {replay.barriers:,} collectives joined across ranks) "
        "plus the collective's own transfer time (collectives are not slowed by the computation beside them, and "
        "collectives moved off one stream do not queue behind each other: an upper bound)."
    )
    return _remedy("communication", remedy, replay.outcome(changed), recorded, base, assumptions, ranks)


def _imbalance(replay: RunReplay, recorded: RunOutcome, base: RunOutcome) -> dict[str, Any] | None:
    compute = ~np.concatenate([p.nccl for p in replay.parts])
    changed, participants, segments = replay.balance(compute)
    if changed is None:
        return None
    assumptions = (
        "The work is split evenly: each participant's (rank, GPU) GPU work between two consecutive collectives "
        "joined across ranks (its kernels, copies and memsets other than NCCL kernels, each assigned by its start to "
        "the next joined collective on its GPU; the work after the last one is one more segment) is scaled to the "
        "mean of that segment over the participants that run work in it (each op's duration x mean / its "
        f"participant's total; {participants:,} participants, {segments:,} segments): the straggler's extra work moves "
        "to the others and the total is kept. Host work, launches and input waits keep their recorded time (a rank "
        "late for host reasons is not balanced by this; its own causes' remedies are), and collectives keep their "
        "transfer time."
    )
    return _remedy(
        IMBALANCE, IMBALANCE_REMEDY, replay.outcome(changed), recorded, base, assumptions, replay.ranks
    )


def _ranks_text(ranks: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in ranks[:16])
    return shown + (f" and {len(ranks) - 16} more" if len(ranks) > 16 else "")
