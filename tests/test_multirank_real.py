"""Multi-rank analyses on real traces and on ranks synthesized from them with a known injected delay.

Expectations come from walking the trace JSON directly (step and NCCL kernel timestamps) and from the
injected delay, never from the multirank code under test.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import SHARED_TRACES, shared_params

import tracelens
from tracelens import run as runs
from tracelens.cli import main
from tracelens.trace import EVENT_COLUMNS, Trace, build_events

NCCL_2RANK = SHARED_TRACES / "pytorch" / "a100_nccl_2rank_rank0_2024.json.gz"
V100_NS = SHARED_TRACES / "pytorch" / "v100_ns_resolution_2024.json.gz"
TF_8GPU = SHARED_TRACES / "tf" / "v100x8_tf2.4_bert_multiworker.xplane.pb"
NSYS_2GPU = SHARED_TRACES / "nsys" / "h100x2_fastvideo_window_nsys2026.2.sqlite"

needs_shared = pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces not present")


def json_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def host_step_ts(events: list[dict]) -> dict[int, float]:
    """Host ProfilerStep#N start (µs, as the file writes it)."""
    return {
        int(e["name"].split("#")[1]): float(e["ts"])
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")
    }


def nccl_kernels(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()]


def synthesize(
    trace: Trace,
    *,
    rank: int,
    world_size: int,
    after_ns: int = 0,
    shift_ns: int = 0,
    stretch_nccl_ns: int = 0,
    origin_shift_ns: int = 0,
) -> Trace:
    """A copy of ``trace`` as another rank: events starting at or after ``after_ns`` shifted by ``shift_ns``
    (a rank that falls behind), NCCL kernels starting there made ``stretch_nccl_ns`` longer (a rank
    waiting for the straggler), and the clock origin moved by ``origin_shift_ns`` (a late start)."""
    events = trace.events
    start, end = events.column("start_ns"), events.column("end_ns")
    after = pc.greater_equal(start, pa.scalar(after_ns, pa.int64()))
    if stretch_nccl_ns:
        names = pc.cast(events.column("name"), pa.string())
        is_nccl = pc.and_(
            pc.equal(events.column("kind").cast(pa.string()), "kernel"),
            pc.match_substring(names, "nccl", ignore_case=True),
        )
        end = pc.if_else(pc.and_(after, pc.fill_null(is_nccl, False)), pc.add(end, stretch_nccl_ns), end)
    if shift_ns:
        start = pc.if_else(after, pc.add(start, shift_ns), start)
        end = pc.if_else(after, pc.add(end, shift_ns), end)
    columns = {name: events.column(name) for name in EVENT_COLUMNS}
    columns["start_ns"], columns["end_ns"] = start, end
    meta = dataclasses.replace(
        trace.metadata,
        rank=rank,
        world_size=world_size,
        time_origin_ns=trace.metadata.time_origin_ns + origin_shift_ns,
    )
    return Trace(events=build_events(columns), devices=trace.devices, metadata=meta)


@needs_shared
def test_two_rank_nccl_run_straggler_and_collective_wait(tmp_path: Path) -> None:
    """Rank 0 is the real file; rank 1 its copy falling D behind from step 5 on. Rank 0's NCCL kernels
    from step 5 on last D longer (it waits for rank 1 at each collective)."""
    delay = 20_000_000  # 20 ms, ~9% of a step
    events = json_events(NCCL_2RANK)
    steps = host_step_ts(events)
    assert sorted(steps) == [4, 5, 6]
    kernels = nccl_kernels(events)
    late_kernels = [k for k in kernels if float(k["ts"]) >= steps[5]]
    assert late_kernels, "the trace has NCCL kernels after step 5"

    trace = tracelens.load(NCCL_2RANK)
    after = int(trace.df.query("kind == 'step' and step == 5")["start_ns"].min())
    synthesize(trace, rank=0, world_size=2, after_ns=after, stretch_nccl_ns=delay).save(
        tmp_path / "rank0.parquet"
    )
    synthesize(trace, rank=1, world_size=2, after_ns=after, shift_ns=delay).save(tmp_path / "rank1.parquet")
    doc, failures = runs.analyze_run(
        [tmp_path / "rank0.parquet", tmp_path / "rank1.parquet"], workers=2, cache_dir=tmp_path / "cache"
    )
    assert failures == []

    straggler = doc["stragglers"]["steps"]["straggler"]
    # steps 4, 5, 6: rank 1 is 0, D, D late against rank 0 -> mean 2D/3, max D
    assert straggler["rank"] == 1 and straggler["significant"]
    assert straggler["delay_ns"] == pytest.approx(2 * delay / 3, rel=0.05)
    assert straggler["max_lateness_ns"] == pytest.approx(delay, rel=0.05)

    ranks = {r["rank"]: r for r in doc["ranks"]}
    rank_doc = json.loads(Path(ranks[0]["parquet"] + ".doc.json").read_text())
    idle = sum(d["idle_ns"] for d in rank_doc["attribution"]["devices"])
    assert sum(ranks[0]["idle_by_cause"].values()) == idle  # the causes split the idle time exactly
    transfer_ns = sum(float(k["dur"]) for k in kernels) * 1000  # the unstretched durations, from the file
    assert ranks[0]["collective_wait_ns"] == pytest.approx(delay * len(late_kernels), rel=0.05)
    assert ranks[1]["collective_wait_ns"] == 0
    for r in (0, 1):
        assert ranks[r]["collective_transfer_ns"] == pytest.approx(transfer_ns, rel=0.001)
    assert doc["collectives"]["matched"] == len(kernels)
    coll = doc["stragglers"]["collectives"]["straggler"]
    assert coll["rank"] == 1
    assert coll["delay_ns"] == pytest.approx(delay * len(late_kernels) / len(kernels), rel=0.05)
    assert doc["imbalance"]["basis"] == "collective_wait"
    assert doc["imbalance"]["total_lost_ns"] == pytest.approx(delay * len(late_kernels), rel=0.05)
    assert doc["imbalance"]["lost_ns"] == pytest.approx(delay * len(late_kernels) / 2, rel=0.05)  # per GPU
    causes = {c["cause"]: c for c in doc["diagnosis"]["causes"]}
    assert causes["multi_gpu_imbalance"]["evidence"]["across_ranks_ns"] == doc["imbalance"]["lost_ns"]
    assert doc["representative_rank"] == 0  # the rank that waited
    assert doc["imbalance"]["straggler_rank"] == 1
    assert doc["source"]["world_size"] == 2


@needs_shared
def test_eight_ranks_from_a_real_trace_find_the_late_one(tmp_path: Path) -> None:
    """8 copies of a real single-GPU trace; rank i starts i µs late, rank 5 another D later."""
    delay = 3_000_000  # 3 ms
    jitter = [i * 1000 for i in range(8)]
    trace = tracelens.load(V100_NS)
    step_numbers = sorted(int(s) for s in trace.df.query("kind == 'step'")["step"].dropna().unique())
    assert len(step_numbers) >= 2
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(8):
        shift = jitter[rank] + (delay if rank == 5 else 0)
        synthesize(trace, rank=rank, world_size=8, origin_shift_ns=shift).save(
            run / f"trace_rank-{rank}.parquet"
        )
    doc, failures = runs.analyze_run([run], workers=2, cache_dir=tmp_path / "cache")
    assert failures == [] and [r["rank"] for r in doc["ranks"]] == list(range(8))
    expected = delay + jitter[5] - statistics.median(jitter[:5] + jitter[6:])
    straggler = doc["stragglers"]["steps"]["straggler"]
    assert straggler["rank"] == 5
    assert straggler["delay_ns"] == pytest.approx(expected, rel=0.05)
    assert doc["stragglers"]["steps"]["compared"] == len(step_numbers)
    # identical copies: identical utilization and step times on every rank
    utils = {r["utilization"] for r in doc["ranks"]}
    assert len(utils) == 1
    assert doc["imbalance"]["lost_ns"] == 0 and doc["imbalance"]["verdict"] == "balanced"
    # the run's replay: no NCCL kernel to join the ranks at; each rank replays as recorded, the run's span is the
    # late rank's end - the first rank's start on the run's clock
    error = doc["whatif"]["replay_error"]
    assert not error["joined"] and "no collective" in error["join_reason"]
    assert error["span_error"] == 0 and all(r["span_error"] == 0 for r in error["per_rank"])
    assert error["recorded_span_ns"] == error["per_rank"][0]["recorded_span_ns"] + delay + jitter[5]


def union_ns(ops: pd.DataFrame) -> int:
    """Length of the union of the ops' [start, end) intervals, by brute force over the sorted intervals."""
    total, reach = 0, None
    for s, e in sorted(zip(ops["start_ns"].astype("int64"), ops["end_ns"].astype("int64"), strict=True)):
        if reach is None or s >= reach:
            total, reach = total + (e - s), e
        elif e > reach:
            total, reach = total + (e - reach), e
    return int(total)


@needs_shared
def test_eight_gpu_tf_trace_compares_its_gpus(tmp_path: Path) -> None:
    """One TF multi-worker host trace listing 8 GPUs, two of them active: each active GPU is a participant."""
    doc, failures = runs.analyze_run([TF_8GPU], workers=1, cache_dir=tmp_path / "cache")
    assert failures == []
    trace = tracelens.load(TF_8GPU)
    gpu = trace.df[trace.df["kind"].isin(["kernel", "memcpy", "memset"])]
    work = np.array([union_ns(g) for _, g in gpu.groupby(gpu["device"].astype(int))], np.int64)
    assert doc["imbalance"]["participants"] == len(work) >= 2
    assert doc["imbalance"]["basis"] == "work_spread"
    assert doc["imbalance"]["work_spread_ns"] == int((work.max() - work).sum())
    assert doc["imbalance"]["lost_ns"] == round((work.max() - work).sum() / len(work))
    assert sorted(d["id"] for d in doc["devices"]) == sorted(int(d) for d in gpu["device"].unique())


@needs_shared
def test_mixed_formats_in_one_run(tmp_path: Path) -> None:
    doc, failures = runs.analyze_run([NCCL_2RANK, NSYS_2GPU, TF_8GPU], workers=2, cache_dir=tmp_path / "c")
    assert failures == []
    formats = {r["format"] for r in doc["ranks"]}
    assert formats == {"kineto", "nsys", "xplane"}
    # rank 0 from distributedInfo; the others have none: numbered by position, with a warning
    assert sorted(r["rank"] for r in doc["ranks"]) == [0, 1, 2]
    assert any("clocks" in w for w in doc["source"]["warnings"])
    # clocks that disagree: the run's replay runs each rank on its own, and says why
    error = doc["whatif"]["replay_error"]
    assert doc["whatif"]["reason"] is None and not error["joined"] and "clocks" in error["join_reason"]
    assert "multi_gpu_imbalance" in doc["whatif"]["not_modeled"]
    assert all(abs(r["span_error"]) < 0.02 for r in error["per_rank"])
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("path", shared_params("pytorch", "*.json.gz"))
def test_cli_analyzes_a_run_of_real_traces(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    run.mkdir()
    for rank in range(2):
        (run / f"rank{rank}.json.gz").write_bytes(path.read_bytes())
    code = main(["analyze", str(run), "--format", "json", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert doc["ranks"][0]["utilization"] == doc["ranks"][1]["utilization"]
    # the run's replay of two identical ranks (joined at their NCCL kernels where they have them) is within 2%
    error = doc["whatif"]["replay_error"]
    assert doc["whatif"]["reason"] is None
    assert abs(error["span_error"]) < 0.02 and all(abs(r["span_error"]) < 0.02 for r in error["per_rank"])
    assert error["joined"] == (error["collectives_joined"] > 0)
    assert (Path(doc["source"]["cache_dir"]) / runs.MANIFEST_NAME).is_file()
    assert not (run / runs.CACHE_DIRNAME).exists()  # nothing written beside the traces
