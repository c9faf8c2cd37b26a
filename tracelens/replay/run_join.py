"""A run's ranks in one replay: each rank's dependency graph (graph.py) side by side on one clock, joined at the
collectives they take part in together; the run's remedies as changes to that joined graph.

Joining (docs/analyses.md, "A run's replay"):
- every rank's points, chains, edges, calls and ops are concatenated; rank r's times are moved by ``shift[r]``
  (its clock origin minus the first rank's, so every point sits on one clock; where the ranks' clocks do
  not agree the caller passes shifts that start every rank at 0 and no collective: per-rank replays side by side);
- a collective that takes part across ranks (the caller matches the NCCL kernels with run/crossrank.py's rule) gets
  one *arrival* point B (its own chain, kind :data:`BARRIER`): B follows every participant's start (lag 0), i.e.
  B is the last participant's arrival, and each participant's end follows B by its own transfer time (recorded
  end - recorded B); the participant's chain lag (its duration) becomes that transfer time too. So no participant's
  transfer starts before every participant arrived, and, replayed unchanged, every end is where it was recorded.
  Two edges per participant, not one per pair (a collective of 1,000 ranks is 2,000 edges, not a million). The
  in-trace collective edges (graph.py: devices of one trace) into a joined participant's end are dropped: the
  arrival point says the same across every participant. A collective whose participants' recorded times are not
  consistent (an end before another participant's start: clocks that disagree by more than the collective) is left
  unjoined and counted.
Everything else about a rank is its own graph, so remedies that change one rank's graph (remedies.py) apply per
rank and the join is rebuilt around them: the other ranks wait at the collectives as the joined edges imply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..analyses.columns import event_columns
from ..analyses.migrations import migration_mask
from ..analyses.names import code_mask, is_collective_kernel
from ..trace import Trace
from .collectives import overlap_collectives
from .engine import Plan, plan, solve
from .graph import NONE, Graph
from .remedies import Context, Outcome, Remedy

BARRIER = 4  # point kind of a joined collective's arrival point (graph.py's kinds are 0-3)

# The edge arrays that say which edges there are: a remedy that keeps them keeps the unchanged join's replay plan.
_EDGE_STRUCTURE = ("edge_src", "edge_dst", "edge_is_wait", "edge_is_wake", "edge_is_collective")
# What no remedy changes: points' recorded facts, calls and ops (the joined arrays are built once).
_FIXED = (
    "time",
    "chain",
    "kind",
    "row",
    "chain_first",
    "call_start",
    "call_end",
    "call_row",
    "call_thread",
    "call_name",
    "call_waits",
    "call_queued",
    "call_waited",
    "call_is_sync",
    "call_is_marker",
    "call_copy_ahead",
    "thread_keys",
    "op_start",
    "op_end",
    "op_row",
    "op_device",
    "op_launch_call",
    "op_is_kernel",
    "op_is_copy",
    "op_graph",
    "op_bytes",
    "op_collective",
    "op_stream_typical",
)


@dataclass
class RunOutcome:
    """A joined replay's times and what they say: the run's span (first to last point over every rank), its step
    (the slowest rank's mean step: the run goes at its pace) and each rank's own outcome."""

    times: np.ndarray
    span_ns: int
    step_ns: float | None
    step_count: int
    per_rank: list[Outcome]


def _offsets(sizes: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(sizes, np.int64))]).astype(np.int64)


def _shifted(values: np.ndarray, shift: int) -> np.ndarray:
    """Times moved by ``shift``, "no constraint" (NONE) kept as it is."""
    return np.where(values > NONE // 2, values + shift, values)


@dataclass
class RankPart:
    """What the run's replay keeps of one rank once its trace is read: the rank's :class:`Context` (its graph and
    step windows), ns added to its times, per GPU op an NCCL kernel (crossrank's definition) and a collective
    kernel (the communication remedy's), and each one-trace remedy's changed graph (None: nothing to change) with
    its assumptions. :func:`rank_part` builds it while the trace is in memory, so the run holds one trace at a time.
    """

    rank: int
    ctx: Context
    shift: int
    nccl: np.ndarray
    nccl_names: np.ndarray  # the NCCL kernels' names, in op order (crossrank matches by name)
    collective_kernel: np.ndarray
    remedied: dict[str, tuple[Graph | None, str]]
    # the rank's GPU ops no call launched that are unified-memory migrations (no call launches one: not counted as
    # ops that lost their launch call, as the one-trace replay_error does not)
    migrations: int = 0


def rank_part(rank: int, trace: Trace, models: dict[str, Remedy], shift: int | None = None) -> RankPart:
    """A rank's part of the run's replay (``shift`` None: the rank starts at 0 on the run's clock). The rank's
    events are released afterwards: past this point the replay reads its graph and step windows only."""
    ctx = Context(trace)
    g, cols = ctx.graph, event_columns(trace)
    codes = cols.name[g.op_row]
    nccl = g.op_is_kernel & code_mask(codes, cols.names, lambda n: "nccl" in n.lower())
    part = RankPart(
        rank=rank,
        ctx=ctx,
        shift=-int(g.time.min()) if shift is None and g.size else int(shift or 0),
        nccl=nccl,
        nccl_names=np.asarray(cols.names, dtype=object)[codes[nccl]],
        collective_kernel=g.op_is_kernel & code_mask(codes, cols.names, is_collective_kernel),
        remedied={cause: model(ctx) for cause, model in models.items()},
        migrations=int((migration_mask(trace, g.op_row) & (g.op_launch_call < 0)).sum()),
    )
    del ctx.trace  # see the docstring: the run keeps every rank's graph, not its events
    return part


class RunReplay:
    """The ranks' graphs joined (see the module docstring). ``collective[r]``: per GPU op of rank r's graph, the id
    of the run's collective it takes part in (-1: none)."""

    def __init__(self, parts: Sequence[RankPart], collective: Sequence[np.ndarray]) -> None:
        self.parts = list(parts)
        self.ranks = [p.rank for p in self.parts]
        self.contexts = [p.ctx for p in self.parts]
        self.shifts = [p.shift for p in self.parts]
        graphs = [c.graph for c in self.contexts]
        self.point_off = _offsets([g.size for g in graphs])
        self.chain_off = _offsets([int(g.chain.max()) + 1 if g.size else 0 for g in graphs])
        self.call_off = _offsets([g.call_row.size for g in graphs])
        self.op_off = _offsets([g.op_row.size for g in graphs])
        self.thread_off = _offsets([g.thread_keys.size for g in graphs])
        self.rank_points = int(self.point_off[-1])
        # per joined op: its rank's index, device, start/end points and recorded times
        self.op_rank = np.repeat(np.arange(len(graphs)), np.diff(self.op_off))
        op_start = np.concatenate([g.op_start + o for g, o in zip(graphs, self.point_off, strict=False)])
        op_end = np.concatenate([g.op_end + o for g, o in zip(graphs, self.point_off, strict=False)])
        time = np.concatenate([g.time + s for g, s in zip(graphs, self.shifts, strict=True)])
        ids = (
            np.concatenate([np.asarray(c, np.int64) for c in collective])
            if collective
            else np.zeros(0, np.int64)
        )
        members = np.flatnonzero(ids >= 0)
        group = ids[members]
        start, end = time[op_start[members]], time[op_end[members]]
        if members.size:
            width = int(group.max()) + 1
            last_start = np.full(width, NONE, np.int64)
            np.maximum.at(last_start, group, start)
            first_end = np.full(width, -NONE, np.int64)
            np.minimum.at(first_end, group, end)
            consistent = first_end >= last_start
            self.unjoined = int((consistent[np.unique(group)] == 0).sum())
            keep = consistent[group]
            members, group, start, end = members[keep], group[keep], start[keep], end[keep]
            dense, group = np.unique(group, return_inverse=True)
            last = last_start[dense]
        else:
            self.unjoined = 0
            last = np.zeros(0, np.int64)
        self.barriers = int(last.size)
        self.op_collective = np.full(ids.size, -1, np.int64)
        self.op_collective[members] = group
        self.member_start = op_start[members]
        self.member_end = op_end[members]
        self.member_barrier = self.rank_points + group.astype(np.int64)
        self.member_transfer = (end - last[group]).astype(np.int64)
        self.barrier_time = last.astype(np.int64)
        self.joined_end = np.zeros(self.rank_points + self.barriers, bool)
        self.joined_end[self.member_end] = True
        self._edge_keep = np.zeros(0, bool)  # which rank edges the join keeps (set by the first join)
        self.graph = self.join(graphs)

    # --- the joined graph
    def join(self, graphs: Sequence[Graph]) -> Graph:
        """The joined graph of per-rank graphs with the structure of this run's (the unchanged ones, or remedied
        copies of them: remedies keep every point, call and op, and change lags and edges). Arrays a remedy left
        as they were are the unchanged join's (no copy, and the unchanged join's replay plan fits)."""
        base = getattr(self, "graph", None)
        n_b, p_off = self.barriers, self.point_off

        def cat(name: str, offsets: np.ndarray | None = None) -> np.ndarray:
            parts = [getattr(g, name) for g in graphs]
            if offsets is not None:
                parts = [np.where(a >= 0, a + o, a) for a, o in zip(parts, offsets, strict=False)]
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)

        def unchanged(*names: str) -> bool:
            return base is not None and all(
                getattr(g, k) is getattr(b, k)
                for g, b in zip(graphs, self._base_graphs, strict=True)
                for k in names
            )

        # edges: each rank's own (the in-trace collective edges into a joined end dropped), then the arrival edges
        m = self.member_start.size
        arrival_lag = np.concatenate([np.zeros(m, np.int64), self.member_transfer])
        if base is not None and unchanged(*_EDGE_STRUCTURE):
            keep = self._edge_keep
            structure = {k: getattr(base, k) for k in _EDGE_STRUCTURE}
        else:
            edge_src, edge_dst = cat("edge_src", p_off), cat("edge_dst", p_off)
            keep = ~(cat("edge_is_collective") & self.joined_end[edge_dst])
            ones, zeros = np.ones(2 * m, bool), np.zeros(2 * m, bool)
            structure = {
                "edge_src": np.concatenate([edge_src[keep], self.member_start, self.member_barrier]),
                "edge_dst": np.concatenate([edge_dst[keep], self.member_barrier, self.member_end]),
                "edge_is_wait": np.concatenate([cat("edge_is_wait")[keep], zeros]),
                "edge_is_wake": np.concatenate([cat("edge_is_wake")[keep], zeros]),
                "edge_is_collective": np.concatenate([cat("edge_is_collective")[keep], ones]),
            }
            if base is None:
                self._edge_keep = keep
        edge_lag = (
            base.edge_lag
            if base is not None and unchanged("edge_lag", *_EDGE_STRUCTURE)
            else np.concatenate([cat("edge_lag")[keep], arrival_lag])
        )
        edge_typical = (
            base.edge_typical
            if base is not None and unchanged("edge_typical", *_EDGE_STRUCTURE)
            else np.concatenate([cat("edge_typical")[keep], arrival_lag])
        )
        if base is not None and unchanged("lag"):
            lag = base.lag
        else:
            lag = np.concatenate([cat("lag"), np.zeros(n_b, np.int64)])
            lag[self.member_end] = np.minimum(lag[self.member_end], self.member_transfer)
        if base is not None:  # points, calls and ops never change in a remedy: the unchanged join's arrays
            fixed = {k: getattr(base, k) for k in _FIXED}
            anchor = base.anchor if unchanged("anchor") else None
        else:
            chain_ids = self.chain_off[-1] + np.arange(n_b, dtype=np.int64)
            fixed = {
                "time": np.concatenate(
                    [*(g.time + s for g, s in zip(graphs, self.shifts, strict=True)), self.barrier_time]
                ),
                "chain": np.concatenate([cat("chain", self.chain_off), chain_ids]),
                "kind": np.concatenate([cat("kind"), np.full(n_b, BARRIER, np.int8)]),
                "row": np.concatenate([cat("row"), np.full(n_b, -1, np.int64)]),
                "chain_first": np.concatenate([cat("chain_first"), np.ones(n_b, bool)]),
                "call_start": cat("call_start", p_off),
                "call_end": cat("call_end", p_off),
                "call_row": cat("call_row"),
                "call_thread": cat("call_thread", self.thread_off),
                "call_name": cat("call_name"),  # per-rank name codes: meaningful with the call's rank only
                "call_waits": cat("call_waits"),
                "call_queued": cat("call_queued"),
                "call_waited": cat("call_waited"),
                "call_is_sync": cat("call_is_sync"),
                "call_is_marker": cat("call_is_marker"),
                # (None where no rank has such a call)
                "call_copy_ahead": None
                if all(g.call_copy_ahead is None for g in graphs)
                else np.concatenate(
                    [
                        np.zeros(g.call_waits.size, bool) if g.call_copy_ahead is None else g.call_copy_ahead
                        for g in graphs
                    ]
                ),
                "thread_keys": cat("thread_keys"),
                "op_start": cat("op_start", p_off),
                "op_end": cat("op_end", p_off),
                "op_row": cat("op_row"),
                "op_device": cat("op_device"),
                "op_launch_call": cat("op_launch_call", self.call_off),
                "op_is_kernel": cat("op_is_kernel"),
                "op_is_copy": cat("op_is_copy"),
                "op_graph": cat("op_graph"),
                "op_bytes": cat("op_bytes"),
                "op_collective": self.op_collective,
                "op_stream_typical": cat("op_stream_typical"),
            }
            anchor = None
        if anchor is None:
            anchor = np.concatenate(
                [
                    *(_shifted(g.anchor, s) for g, s in zip(graphs, self.shifts, strict=True)),
                    np.full(n_b, NONE),
                ]
            ).astype(np.int64)
        return Graph(
            **fixed,
            lag=lag,
            anchor=anchor,
            **structure,
            edge_lag=edge_lag,
            edge_typical=edge_typical,
            typical={},  # per device of each rank: read them from the rank's own graph
        )

    @cached_property
    def _base_graphs(self) -> list[Graph]:
        return [c.graph for c in self.contexts]

    @cached_property
    def plan(self) -> Plan:
        """The unchanged join's batches: remedies that change only lags replay with them."""
        return plan(self.graph)

    # --- replaying
    def rank_slice(self, index: int) -> slice:
        return slice(int(self.point_off[index]), int(self.point_off[index + 1]))

    def outcome(self, graph: Graph | None = None, times: np.ndarray | None = None) -> RunOutcome:
        g = graph or self.graph
        t = solve(g, self.plan) if times is None else times
        per_rank = [ctx.outcome(times=t[self.rank_slice(i)]) for i, ctx in enumerate(self.contexts)]
        ranked = t[: self.rank_points]
        span = int(ranked.max() - ranked.min()) if ranked.size else 0
        stepped = [o for o in per_rank if o.step_ns is not None]
        step = max(o.step_ns for o in stepped if o.step_ns is not None) if stepped else None
        count = min(o.step_count for o in stepped) if stepped else 0
        return RunOutcome(t, span, step, count, per_rank)

    @cached_property
    def base(self) -> RunOutcome:
        return self.outcome()

    def recorded(self) -> RunOutcome:
        return self.outcome(times=self.graph.time)

    # --- remedies
    def per_rank(self, cause: str) -> tuple[Graph | None, str, list[int]]:
        """A one-trace remedy applied on every rank where its model found something to change (the others keep
        their graph): (joined graph or None, the first changed rank's assumptions, the changed ranks)."""
        changed: list[Graph] = []
        ranks: list[int] = []
        text = ""
        for part in self.parts:  # a loop over ranks
            graph, assumptions = part.remedied.get(cause, (None, ""))
            changed.append(part.ctx.graph if graph is None else graph)
            if graph is not None:
                ranks.append(part.rank)
                text = text or assumptions
        if not ranks:
            return None, "", []
        return self.join(changed), text, ranks

    def collective_kernels(self) -> np.ndarray:
        """Per joined op: a collective kernel (NCCL/RCCL, as the one-trace communication remedy reads it)."""
        parts = [p.collective_kernel for p in self.parts]
        return np.concatenate(parts) if parts else np.zeros(0, bool)

    def communication(self) -> tuple[Graph | None, int, int]:
        """Exposed collectives overlapped with the next independent compute, on every rank at once
        (collectives.py on the joined graph: a placeholder's completion is the last participant's arrival + its
        transfer). (graph or None, placeholders, event waits dropped)."""
        return overlap_collectives(self.graph, self.collective_kernels())

    def balance(self, compute: np.ndarray) -> tuple[Graph | None, int, int]:
        """Each participant's (rank, GPU) work between two consecutive joined collectives at the mean over the
        participants (docs/analyses.md, "whatif of a run"). ``compute``: per joined op, work that can move (GPU ops
        other than NCCL kernels). (graph or None, participants, segments)."""
        import pandas as pd

        g = self.graph
        joined = g.op_collective >= 0
        participant = self.op_rank.astype(np.int64) * (2**32) + (g.op_device & 0xFFFFFFFF)
        duration = g.lag[g.op_end]
        taking_part = np.isin(participant, np.unique(participant[joined])) if joined.any() else True
        ops = np.flatnonzero(compute & taking_part & (duration > 0))
        if ops.size == 0:
            return None, 0, 0
        start = g.time[g.op_start]
        work = pd.DataFrame({"op": ops, "p": participant[ops], "t": start[ops]}).sort_values(
            "t", kind="stable"
        )
        cuts = pd.DataFrame(
            {"p": participant[joined], "t": start[joined], "segment": g.op_collective[joined]}
        ).sort_values("t", kind="stable")
        # each op belongs to the segment ended by the next joined collective on its GPU (-1: after the last)
        work = pd.merge_asof(work, cuts, on="t", by="p", direction="forward")
        work["segment"] = work["segment"].fillna(-1).astype(np.int64)
        work["d"] = duration[work["op"].to_numpy(np.int64)]
        total = work.groupby(["p", "segment"])["d"].transform("sum")
        per = work.groupby(["p", "segment"], as_index=False)["d"].sum()
        mean = per.groupby("segment")["d"].mean()
        target = work["segment"].map(mean).to_numpy(np.float64)
        new = np.rint(work["d"].to_numpy(np.float64) * target / total.to_numpy(np.float64)).astype(np.int64)
        if np.array_equal(new, work["d"].to_numpy(np.int64)):
            return None, 0, 0
        lag = g.lag.copy()
        lag[g.op_end[work["op"].to_numpy(np.int64)]] = new
        return g.with_changes(lag=lag), int(per["p"].nunique()), int(per["segment"].nunique())
