"""The run's what-if replay (tracelens/replay/run_join.py, tracelens/run/whatif.py): hand-built 2- and 3-rank runs
whose joined replay and remedies are worked out by hand below, clocks that do not agree, the run document's
``whatif`` and diagnosis, and a run built from the shared 2-rank NCCL trace."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SHARED_TRACES

import tracelens
from tests.test_replay import reference_solve
from tracelens import run as runs
from tracelens.replay import engine
from tracelens.replay.remedies import REMEDIES, Context
from tracelens.replay.run_join import BARRIER, RunReplay, rank_part
from tracelens.report import render
from tracelens.run.crossrank import match_collectives
from tracelens.run.whatif import run_whatif
from tracelens.trace import Trace, TraceMetadata

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
INPUT_NAME = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
ORIGIN = 10**18
SKEW = (
    7  # rank r's clock origin is r x SKEW earlier and its table times r x SKEW later: the same absolute times
)


def host(kind: str, name: str, start: int, end: int, **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "start_ns": start, "end_ns": end, "pid": 1, "tid": 1, **extra}


def kernel(start: int, end: int, corr: int, name: str = "gemm") -> dict[str, Any]:
    return {
        "kind": "kernel",
        "name": name,
        "start_ns": start,
        "end_ns": end,
        "device": 0,
        "stream": 7,
        "pid": 0,
        "correlation_id": corr,
    }


def launch(start: int, end: int, corr: int) -> dict[str, Any]:
    return host("runtime", "cudaLaunchKernel", start, end, correlation_id=corr)


def rank_trace(rank: int, rows: list[dict[str, Any]], clock: str = "unix", world: int = 2) -> Trace:
    """A rank's trace on its own clock: the rows' absolute times written SKEW x rank later in the table."""
    moved = [
        {**r, "start_ns": r["start_ns"] + rank * SKEW, "end_ns": r["end_ns"] + rank * SKEW} for r in rows
    ]
    meta = TraceMetadata(
        source_format="handmade",
        clock=clock,
        time_origin_ns=ORIGIN - rank * SKEW,
        rank=rank,
        world_size=world,
    )
    return Trace.from_rows(moved, metadata=meta)


# --- run A: 2 ranks, no steps. Each rank: compute K [10_000, k_end], its all-reduce C queued on the same stream
# (1_000 behind K), the next compute Kb (1 ms) queued after C, a device synchronize (2_000 wake-up). Rank 1 is the
# straggler (K 3 ms, rank 0's 1 ms): C arrives at 1_011_000 on rank 0 and 3_011_000 on rank 1; both C end at
# 3_511_000 (the last arrival + 500_000 transfer), both Kb run [3_512_000, 4_512_000], the syncs end at 4_514_000.
def overlap_rows(k_end: int) -> list[dict[str, Any]]:
    return [
        launch(0, 5_000, 1),
        kernel(10_000, k_end, 1),
        launch(6_000, 11_000, 2),
        kernel(k_end + 1_000, 3_511_000, 2, name=NCCL),
        launch(12_000, 17_000, 3),
        kernel(3_512_000, 4_512_000, 3),
        host("runtime", "cudaDeviceSynchronize", 18_000, 4_514_000),
    ]


def run_a(clock: str = "unix") -> list[Trace]:
    return [rank_trace(0, overlap_rows(1_010_000), clock), rank_trace(1, overlap_rows(3_010_000), clock)]


def by_cause(block: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["cause"]: r for r in block["remedies"]}


def op_at(ctx: Context, rank: int, start: int) -> int:
    """The GPU op of a rank's graph that starts at ``start`` (absolute)."""
    g = ctx.graph
    return int(np.flatnonzero(g.time[g.op_start] == start + rank * SKEW)[0])


def joined_run_a() -> tuple[RunReplay, list[Context]]:
    """Run A joined by hand: the two C kernels are collective 0; rank 1's table times are SKEW later."""
    parts = [rank_part(r, t, {}, shift) for r, t, shift in zip((0, 1), run_a(), (0, -SKEW), strict=True)]
    contexts = [p.ctx for p in parts]
    collective = []
    for rank, (ctx, c_start) in enumerate(zip(contexts, (1_011_000, 3_011_000), strict=True)):
        ids = np.full(ctx.graph.op_row.size, -1, np.int64)
        ids[op_at(ctx, rank, c_start)] = 0
        collective.append(ids)
    return RunReplay(parts, collective), contexts


def test_joined_graph_by_hand() -> None:
    replay, contexts = joined_run_a()
    g = replay.graph
    # one arrival point, at the last participant's start (rank 1's C: 3_011_000 on the run's clock)
    assert replay.barriers == 1 and replay.unjoined == 0
    barrier = int(np.flatnonzero(g.kind == BARRIER)[0])
    assert g.time[barrier] == 3_011_000 and g.chain_first[barrier]
    into = sorted(
        (int(g.time[s]), int(lag))
        for s, d, lag in zip(g.edge_src, g.edge_dst, g.edge_lag, strict=True)
        if d == barrier
    )
    out = sorted(
        (int(g.time[d]), int(lag))
        for s, d, lag in zip(g.edge_src, g.edge_dst, g.edge_lag, strict=True)
        if s == barrier
    )
    assert into == [(1_011_000, 0), (3_011_000, 0)]  # every participant's start
    assert out == [(3_511_000, 500_000), (3_511_000, 500_000)]  # every end, by its own transfer
    c0_end = int(contexts[0].graph.op_end[op_at(contexts[0], 0, 1_011_000)])
    assert g.lag[c0_end] == 500_000  # rank 0's C: 2.5 ms recorded, 2 ms of it waiting
    t = engine.solve(g)
    assert np.array_equal(t, g.time)
    # rank 1's K at 1 ms: its C arrives at 1_011_000; rank 0's C, which waited for it, ends at 1_511_000
    k1_end = int(replay.point_off[1] + contexts[1].graph.op_end[op_at(contexts[1], 1, 10_000)])
    lag = g.lag.copy()
    lag[k1_end] = 1_000_000
    t = engine.solve(g.with_changes(lag=lag))
    assert t[c0_end] == 1_511_000


def test_run_a_replay_and_remedies_by_hand() -> None:
    block = run_whatif(run_a(), [0, 1], True)
    error = block["replay_error"]
    assert error["joined"] and error["join_reason"] is None
    assert (error["collectives_matched"], error["collectives_joined"], error["collectives_unjoined"]) == (
        1,
        1,
        0,
    )
    assert error["recorded_span_ns"] == error["replayed_span_ns"] == 4_514_000
    assert error["span_error"] == 0
    assert [(r["rank"], r["recorded_span_ns"], r["span_error"]) for r in error["per_rank"]] == [
        (0, 4_514_000, 0),
        (1, 4_514_000, 0),
    ]
    assert "multi_gpu_imbalance" not in block["not_modeled"]
    remedies = by_cause(block)
    # Balanced: each K takes the mean of 1 and 3 ms = 2 ms (the Kb after the collective: 1 ms each, unchanged).
    # Both C arrive at 2_011_000, end at 2_511_000; Kb [2_512_000, 3_512_000]; syncs end at 3_514_000.
    imbalance = remedies["multi_gpu_imbalance"]
    assert imbalance["gain_ns"] == 1_000_000
    assert imbalance["predicted_span_ns"] == 3_514_000
    assert imbalance["gain_share"] == pytest.approx(1_000_000 / 4_514_000)
    assert imbalance["ranks"] == [0, 1]
    assert "mean" in imbalance["assumptions"]
    # Overlapped on both ranks: C is a placeholder on each stream, Kb follows it (rank 0: [1_012_000, 2_012_000],
    # rank 1: [3_012_000, 4_012_000]); each sync waits for C's completion = the last arrival 3_011_000 + 500_000
    # (+ 2_000 wake-up) and its Kb: rank 0 3_513_000, rank 1 4_014_000. Span 4_514_000 -> 4_014_000.
    communication = remedies["communication"]
    assert communication["gain_ns"] == 500_000
    assert communication["predicted_span_ns"] == 4_014_000
    assert communication["ranks"] == [0, 1]


def test_communication_remedy_times_on_each_rank() -> None:
    replay, contexts = joined_run_a()
    changed, placeholders, events = replay.communication()
    assert changed is not None and (placeholders, events) == (2, 0)
    t = engine.solve(changed)
    g = replay.graph
    kb = [int(replay.point_off[r] + c.graph.op_start[op_at(c, r, 3_512_000)]) for r, c in enumerate(contexts)]
    assert [int(t[p]) for p in kb] == [1_012_000, 3_012_000]
    sync_end = [int(replay.point_off[r] + c.graph.call_end[-1]) for r, c in enumerate(contexts)]
    assert [int(t[p]) for p in sync_end] == [3_513_000, 4_014_000]
    assert int(t[: replay.rank_points].max() - g.time.min()) == 4_014_000


# --- run B: 3 ranks, 2 steps. Rank r, step s starting at S (marker): launch K [S+1_000, S+6_000] -> K [S+10_000,
# S+10_000+k_r]; launch C [S+7_000, S+12_000] -> C 1_000 after K, ending 500_000 after the last arrival; a device
# synchronize [S+13_000, C end + 2_000]; the next step 10_000 after it. k = 1, 2, 3 ms (rank 2 the straggler):
# last arrival S + 3_011_000, C end S + 3_511_000, sync S + 3_513_000; S1 = 3_523_000; the run ends at 7_036_000.
# Mean step (end of step 1's work - end of step 0's) = 7_036_000 - 3_513_000 = 3_523_000 on every rank.
K_NS = (1_000_000, 2_000_000, 3_000_000)


def step_rows(k_ns: int, k_max: int = 3_000_000, steps: int = 2) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    start = 0
    for s in range(steps):
        last = start + 10_000 + k_max + 1_000
        c_end = last + 500_000
        rows += [
            {**host("step", f"ProfilerStep#{s}", start, c_end + 2_000), "step": s},
            launch(start + 1_000, start + 6_000, 10 * s + 1),
            kernel(start + 10_000, start + 10_000 + k_ns, 10 * s + 1),
            launch(start + 7_000, start + 12_000, 10 * s + 2),
            kernel(start + 10_000 + k_ns + 1_000, c_end, 10 * s + 2, name=NCCL),
            host("runtime", "cudaDeviceSynchronize", start + 13_000, c_end + 2_000),
        ]
        start = c_end + 2_000 + 10_000
    return rows


def run_b() -> list[Trace]:
    return [rank_trace(r, step_rows(k), world=3) for r, k in enumerate(K_NS)]


def test_unified_memory_migrations_are_no_unlaunched_ops() -> None:
    """A migration (Nsight's "Unified Host-to-Device" copy kind, UVM HtoD) is a GPU op no call launches, by design:
    the one-trace replay leaves it out of ``unlaunched_gpu_ops``; the run's replay counted one per rank (2 here)."""
    migration = {
        "kind": "memcpy",
        "name": "Memcpy Unified Host-to-Device",
        "start_ns": 20_000,
        "end_ns": 21_000,
        "device": 0,
        "stream": 9,
        "pid": 0,
        "correlation_id": 77,  # no call's
        "copy_kind": "UVM HtoD",
        "bytes": 65_536,
    }
    traces = [
        rank_trace(r, [*overlap_rows(k_end), migration]) for r, k_end in ((0, 1_010_000), (1, 3_010_000))
    ]
    from tracelens.analyses.whatif import whatif

    assert whatif(traces[0])["replay_error"]["unlaunched_gpu_ops"] == 0
    block = run_whatif(traces, [0, 1], comparable=True)
    assert block["replay_error"]["gpu_ops"] == 8  # 3 kernels and the migration per rank
    assert block["replay_error"]["unlaunched_gpu_ops"] == 0


def test_three_rank_imbalance_by_hand() -> None:
    block = run_whatif(run_b(), [0, 1, 2], True)
    error = block["replay_error"]
    assert error["collectives_joined"] == 2
    assert error["recorded_span_ns"] == error["replayed_span_ns"] == 7_036_000
    assert error["steps"] == 2
    assert error["recorded_step_ns"] == error["replayed_step_ns"] == 3_523_000
    assert all(r["span_error"] == 0 and r["step_error"] == 0 for r in error["per_rank"])
    # Balanced: every K 2 ms (the mean of 1, 2, 3): C arrives at S + 2_011_000 everywhere, ends S + 2_511_000, the
    # sync S + 2_513_000; S1 = 2_523_000, the run ends at 5_036_000; step 5_036_000 - 2_513_000 = 2_523_000.
    imbalance = by_cause(block)["multi_gpu_imbalance"]
    assert imbalance["gain_ns"] == 2_000_000
    assert imbalance["predicted_span_ns"] == 5_036_000
    assert imbalance["predicted_step_ns"] == 2_523_000
    assert imbalance["step_gain_share"] == pytest.approx(1 - 2_523_000 / 3_523_000)
    assert "3 participants, 2 segments" in imbalance["assumptions"]


def test_balanced_run_has_no_imbalance_remedy() -> None:
    traces = [rank_trace(r, step_rows(2_000_000, 2_000_000), world=3) for r in range(3)]
    block = run_whatif(traces, [0, 1, 2], True)
    assert "multi_gpu_imbalance" not in by_cause(block)
    assert block["replay_error"]["span_error"] == 0


# --- run C: 2 ranks, one step each, K 1 ms. Rank 1 first waits 2 ms for its batch (a DataLoader range
# [500, 2_000_500] before its launches, which come 2_000_000 later than rank 0's): C arrives at 1_011_000 on rank 0,
# 3_011_000 on rank 1; both end at 3_511_000, the syncs at 3_513_000.
def input_rows(rank: int) -> list[dict[str, Any]]:
    late = 2_000_000 if rank == 1 else 0
    rows = [
        {**host("step", "ProfilerStep#0", 0, 3_513_000), "step": 0},
        launch(late + 1_000, late + 6_000, 1),
        kernel(late + 10_000, late + 1_010_000, 1),
        launch(late + 7_000, late + 12_000, 2),
        kernel(late + 1_011_000, 3_511_000, 2, name=NCCL),
        host("runtime", "cudaDeviceSynchronize", late + 13_000, 3_513_000),
    ]
    if rank == 1:
        rows.append(host("cpu_op", INPUT_NAME, 500, 2_000_500))
    return rows


def test_a_per_rank_cause_on_one_rank_moves_the_others() -> None:
    # The input remedy changes rank 1 only: its launches follow the step marker by 1_000 as rank 0's do, both C
    # arrive at 1_011_000 and end at 1_511_000; rank 0's sync, which waited for rank 1 at the collective, ends at
    # 1_513_000 too. Span and the one step (marker to work end): 3_513_000 -> 1_513_000.
    traces = [rank_trace(r, input_rows(r)) for r in range(2)]
    block = run_whatif(traces, [0, 1], True)
    assert block["replay_error"]["span_error"] == 0
    remedy = by_cause(block)["input_pipeline"]
    assert remedy["ranks"] == [1]
    assert remedy["gain_ns"] == 2_000_000
    assert remedy["predicted_span_ns"] == 1_513_000
    assert remedy["predicted_step_ns"] == 1_513_000
    assert "ranks 1" in remedy["assumptions"]


def test_clocks_that_disagree_fall_back_to_per_rank_replays() -> None:
    block = run_whatif(run_a(clock="nsys-session"), [0, 1], False)
    error = block["replay_error"]
    assert not error["joined"] and "clocks" in error["join_reason"]
    assert error["collectives_matched"] == 1 and error["collectives_joined"] == 0
    # each rank from 0 on its own: the run's span is the longer rank's, each replayed as recorded
    assert error["recorded_span_ns"] == error["replayed_span_ns"] == 4_514_000
    assert [r["span_error"] for r in error["per_rank"]] == [0, 0]
    assert "multi_gpu_imbalance" in block["not_modeled"]
    assert "clocks" in block["not_modeled_reasons"]["multi_gpu_imbalance"]
    assert "multi_gpu_imbalance" not in by_cause(block)


def joined(traces: list[Trace]) -> RunReplay:
    """A run joined as run_whatif joins it (crossrank's matching on the run's clock)."""
    models = {c: m for c, (_, m) in REMEDIES.items() if c != "communication"}
    parts = [rank_part(r, t, models, -r * SKEW) for r, t in enumerate(traces)]
    collective = []
    for part in parts:
        ids = np.full(part.ctx.graph.op_row.size, -1, np.int64)
        ids[np.flatnonzero(part.nccl)] = np.arange(int(part.nccl.sum()))  # one all-reduce per step, in order
        collective.append(ids)
    return RunReplay(parts, collective)


@pytest.mark.parametrize("traces", [run_a, run_b, lambda: [rank_trace(r, input_rows(r)) for r in range(2)]])
def test_joined_solver_matches_a_reference_fixpoint_under_every_remedy(traces: Any) -> None:
    replay = joined(traces())
    graphs = [replay.graph, replay.graph.at_typical_lags()]
    graphs += [g for g in (replay.per_rank(c)[0] for c in replay.parts[0].remedied) if g is not None]
    graphs += [
        g
        for g in (
            replay.communication()[0],
            replay.balance(~np.concatenate([p.nccl for p in replay.parts]))[0],
        )
        if g is not None
    ]
    assert len(graphs) >= 4
    for graph in graphs:
        assert np.array_equal(engine.solve(graph), reference_solve(graph))


def test_a_collective_whose_clocks_disagree_is_not_joined() -> None:
    # rank 1's trace says its C ended (3_511_000) before rank 0's started: origins 1 ms apart that the clocks do
    # not show. Matched by crossrank's rule, not joined; both replay as recorded.
    traces = [rank_trace(0, overlap_rows(1_010_000)), rank_trace(1, overlap_rows(3_010_000))]
    traces[0] = Trace(
        events=traces[0].events,
        devices=traces[0].devices,
        metadata=dataclasses.replace(traces[0].metadata, time_origin_ns=ORIGIN + 3_000_000),
    )
    block = run_whatif(traces, [0, 1], True)
    error = block["replay_error"]
    assert (error["collectives_matched"], error["collectives_joined"], error["collectives_unjoined"]) == (
        1,
        0,
        1,
    )
    assert not error["joined"] and "disagree" in error["join_reason"]
    assert error["span_error"] == 0 and [r["span_error"] for r in error["per_rank"]] == [0, 0]


def test_match_collectives_is_crossranks_rule() -> None:
    # (rank, device, name): two all-reduces on ranks 0 and 1, one broadcast on rank 0 only (unmatched)
    frame = pd_frame(
        [
            (0, 0, "nccl_allreduce", 10, 20),
            (0, 0, "nccl_allreduce", 30, 40),
            (1, 0, "nccl_allreduce", 12, 20),
            (1, 0, "nccl_allreduce", 33, 40),
            (0, 0, "nccl_broadcast", 50, 60),
        ]
    )
    assert match_collectives(frame).tolist() == [0, 1, 0, 1, -1]


def pd_frame(rows: list[tuple[int, int, str, int, int]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=["rank", "device", "name", "start", "end"])


# --- the run document


def write_run(directory: Path, traces: list[Trace]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for r, trace in enumerate(traces):
        path = directory / f"rank{r}.parquet"
        trace.save(path)
        paths.append(path)
    return paths


def test_run_document_whatif_diagnosis_and_renderers(tmp_path: Path) -> None:
    doc, failures = runs.analyze_run(
        write_run(tmp_path / "run", run_b()), workers=1, cache_dir=tmp_path / "c"
    )
    assert failures == []
    block = doc["whatif"]
    assert block["replay_error"]["recorded_step_ns"] == 3_523_000
    assert by_cause(block)["multi_gpu_imbalance"]["predicted_step_ns"] == 2_523_000
    # the run's diagnosis ranks multi_gpu_imbalance by the run replay's predicted gain, like any cause: the step
    # share of the gain over the diagnosis span (the representative rank's GPU span: its first kernel at 10_000 to
    # its last collective's end at 7_034_000)
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    imbalance = causes["multi_gpu_imbalance"]
    assert doc["diagnosis"]["span_ns"] == 7_024_000
    assert imbalance["gain_reason"] is None and imbalance["gain_basis"] == "step"
    assert imbalance["predicted_gain_ns"] == round((1 - 2_523_000 / 3_523_000) * 7_024_000)
    assert imbalance["rank_ns"] == min(imbalance["lost_ns"], imbalance["predicted_gain_ns"])
    for fmt in ("terminal", "markdown"):
        text = " ".join(render(doc, fmt).replace("\\_", "_").split())  # wrapped lines, markdown escapes
        assert "fixing multi_gpu_imbalance" in text, fmt
        assert "step 3.52 ms → 2.52 ms (−28.4%)" in text, fmt
        assert "(ranks joined at 2 collectives)" in text, fmt
    json.dumps(doc)  # JSON-ready
    # every key of the run's whatif is documented in docs/json.md (the run-only ones marked so)
    from test_report_real import documented_keys, undocumented

    assert undocumented({"whatif": doc["whatif"]}, documented_keys("The analyze document")) == []


# --- a run from the shared 2-rank NCCL trace

NCCL_2RANK = SHARED_TRACES / "pytorch" / "a100_nccl_2rank_rank0_2024.json.gz"


@pytest.mark.skipif(not NCCL_2RANK.is_file(), reason="../shared/traces not present")
def test_nccl_run_replays_within_two_percent(tmp_path: Path) -> None:
    """Rank 0 is the real file with its NCCL kernels from step 5 on 20 ms longer (waiting); rank 1 a copy falling
    20 ms behind from step 5 (test_multirank_real's synthesis): the joined replay reproduces both."""
    from test_multirank_real import synthesize

    delay = 20_000_000
    trace = tracelens.load(NCCL_2RANK)
    after = int(trace.df.query("kind == 'step' and step == 5")["start_ns"].min())
    paths = [tmp_path / "rank0.parquet", tmp_path / "rank1.parquet"]
    synthesize(trace, rank=0, world_size=2, after_ns=after, stretch_nccl_ns=delay).save(paths[0])
    synthesize(trace, rank=1, world_size=2, after_ns=after, shift_ns=delay).save(paths[1])
    doc, failures = runs.analyze_run(paths, workers=1, cache_dir=tmp_path / "cache")
    assert failures == []
    error = doc["whatif"]["replay_error"]
    assert error["joined"]
    assert error["collectives_joined"] == doc["collectives"]["matched"] > 0
    assert abs(error["span_error"]) < 0.02 and abs(error["step_error"]) < 0.02
    assert all(abs(r["span_error"]) < 0.02 and abs(r["step_error"]) < 0.02 for r in error["per_rank"])
    # the run's span: rank 1 ends 20 ms after rank 0's recording (it fell behind); both start together
    assert error["recorded_span_ns"] == max(r["recorded_span_ns"] for r in error["per_rank"])
