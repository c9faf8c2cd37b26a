"""The replay's collective matching and re-wiring without pandas (replay/joins.py,
collective_edges.collective_ids, collective_edges.collective_edges, collectives.overlap_collectives) against the
pandas code they replace, on random inputs with ties, repeated keys, empty and one-row cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tracelens.analyses.columns import event_columns
from tracelens.replay import collective_edges, remedies
from tracelens.replay.collectives import overlap_collectives, placeholder_waits, placeholders
from tracelens.replay.joins import cumcount, inner_join, run_heads, run_ids
from tracelens.trace import Trace


def _merge_reference(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    merged = pd.DataFrame({"k": left, "li": np.arange(left.size)}).merge(
        pd.DataFrame({"k": right, "ri": np.arange(right.size)}), on="k"
    )
    return merged["li"].to_numpy(np.int64), merged["ri"].to_numpy(np.int64)


@pytest.mark.parametrize("seed", range(40))
def test_inner_join_is_pandas_merge(seed):
    rng = np.random.default_rng(seed)
    n_left, n_right = (int(rng.integers(0, 30)) for _ in range(2))
    keys = int(rng.integers(1, 8))
    left = rng.integers(-2, keys, n_left).astype(np.int64)
    right = rng.integers(-2, keys, n_right).astype(np.int64)
    got = inner_join(left, right)
    want = _merge_reference(left, right)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_inner_join_empty_and_one_row():
    empty = np.zeros(0, np.int64)
    for left, right in ((empty, empty), (np.array([3]), empty), (empty, np.array([3])), (np.array([3]), [3])):
        got = inner_join(np.asarray(left, np.int64), np.asarray(right, np.int64))
        want = _merge_reference(np.asarray(left, np.int64), np.asarray(right, np.int64))
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("seed", range(20))
def test_group_helpers_are_pandas_groupby(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    a, b = np.sort(rng.integers(0, 4, n)), rng.integers(0, 3, n)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    frame = pd.DataFrame({"a": a, "b": b})
    np.testing.assert_array_equal(cumcount(a, b), frame.groupby(["a", "b"]).cumcount().to_numpy())
    np.testing.assert_array_equal(run_ids(a, b), frame.groupby(["a", "b"]).ngroup().to_numpy())
    np.testing.assert_array_equal(run_heads(a), np.r_[True, a[1:] != a[:-1]])


def _collectives_reference(is_collective, name, device, start, end):
    """collective_edges.collective_ids as it was written with pandas."""
    out = np.full(is_collective.size, -1, np.int64)
    ops = np.flatnonzero(is_collective)
    if ops.size == 0:
        return out
    frame = pd.DataFrame(
        {"op": ops, "name": name[ops], "device": device[ops], "start": start[ops], "end": end[ops]}
    )
    frame = frame.sort_values(["name", "device", "start", "end"], kind="stable")
    frame["ordinal"] = frame.groupby(["name", "device"]).cumcount()
    frame["devices"] = frame.groupby("name")["device"].transform("nunique")
    grouped = frame.groupby(["name", "ordinal"])
    frame["count"] = grouped["device"].transform("size")
    frame["last_start"] = grouped["start"].transform("max")
    frame["first_end"] = grouped["end"].transform("min")
    matched = frame[
        (frame["devices"] >= 2)
        & (frame["count"] == frame["devices"])
        & (frame["first_end"] >= frame["last_start"])
    ]
    ids = matched.groupby(["name", "ordinal"]).ngroup().to_numpy(np.int64)
    out[matched["op"].to_numpy(np.int64)] = ids
    return out


def _collective_edges_reference(collective, start, end):
    """Every ordered pair of distinct participants of a collective, by plain Python: collectives in id order, each
    source in op order with its targets in op order (pandas' self-merge order); the lag is the target's end - its
    collective's last start."""
    members: dict[int, list[int]] = {}
    for op, group in enumerate(collective.tolist()):
        if group >= 0:
            members.setdefault(group, []).append(op)
    src, dst, lag = [], [], []
    for group in sorted(members):
        ops = members[group]
        last_start = max(int(start[o]) for o in ops)
        for a in ops:
            for b in ops:
                if a != b:
                    src.append(a)
                    dst.append(b)
                    lag.append(int(end[b]) - last_start)
    return np.array(src, np.int64), np.array(dst, np.int64), np.array(lag, np.int64)


@pytest.mark.parametrize("seed", range(60))
def test_collectives_match_the_pandas_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    is_collective = rng.random(n) < 0.7
    name = rng.integers(0, 3, n).astype(np.int64)
    device = rng.integers(0, int(rng.integers(1, 4)), n).astype(np.int64)
    start = rng.integers(0, 20, n).astype(np.int64)  # ties on purpose
    end = start + rng.integers(0, 30, n)
    got = collective_edges.collective_ids(is_collective, name, device, start, end)
    np.testing.assert_array_equal(got, _collectives_reference(is_collective, name, device, start, end))
    got_edges = collective_edges.collective_edges(got, start, end)
    want_edges = _collective_edges_reference(got, start, end)
    for a, b in zip(got_edges, want_edges, strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.int64


def test_collectives_one_op_and_none():
    one = np.array([True])
    ints = np.array([5], np.int64)
    assert collective_edges.collective_ids(one, ints, ints, ints, ints).tolist() == [-1]
    none = np.zeros(0, bool)
    empty = np.zeros(0, np.int64)
    assert collective_edges.collective_ids(none, empty, empty, empty, empty).size == 0
    assert all(a.size == 0 for a in collective_edges.collective_edges(empty, empty, empty))


def _overlap_reference(g, is_collective):
    """collectives.overlap_collectives' re-wiring as it was written with pandas: (changed graph, placeholders,
    event waits dropped)."""
    ph, drop_event = placeholders(g, is_collective)  # the same choice: only the joins differ
    if ph.size == 0 and not drop_event.any():
        return None, 0, 0
    ph_end = g.op_end[ph]
    into = np.isin(g.edge_dst, ph_end) & g.edge_is_collective
    sources = pd.DataFrame(
        {
            "end": np.concatenate([ph_end, g.edge_dst[into]]),
            "src": np.concatenate([g.op_start[ph], g.edge_src[into]]),
            "lag": np.concatenate([g.lag[ph_end], g.edge_lag[into]]),
        }
    )
    waits, first_src, same_stream = placeholder_waits(g, ph_end)
    waiters = pd.DataFrame({"end": ph_end[same_stream], "w_src": first_src[same_stream]})
    wait_edges = pd.DataFrame(
        {
            "w_src": g.edge_src[waits],
            "dst": g.edge_dst[waits],
            "w_lag": g.edge_lag[waits],
            "w_typ": g.edge_typical[waits],
        }
    )
    targets = waiters.merge(wait_edges, on="w_src")[["end", "dst", "w_lag", "w_typ"]]
    new = sources.merge(targets, on="end")
    moved = g.edge_is_wait & np.isin(g.edge_src, ph_end)
    keep = ~(drop_event | moved | into)
    lag = g.lag.copy()
    lag[ph_end] = 0
    zeros = np.zeros(len(new), bool)
    return (
        g.with_changes(
            lag=lag,
            edge_src=np.concatenate([g.edge_src[keep], new["src"].to_numpy(np.int64)]),
            edge_dst=np.concatenate([g.edge_dst[keep], new["dst"].to_numpy(np.int64)]),
            edge_lag=np.concatenate([g.edge_lag[keep], (new["lag"] + new["w_lag"]).to_numpy(np.int64)]),
            edge_typical=np.concatenate(
                [g.edge_typical[keep], (new["lag"] + new["w_typ"]).to_numpy(np.int64)]
            ),
            edge_is_wait=np.concatenate([g.edge_is_wait[keep], np.ones(len(new), bool)]),
            edge_is_wake=np.concatenate([g.edge_is_wake[keep], zeros]),
            edge_is_collective=np.concatenate([g.edge_is_collective[keep], zeros]),
        ),
        int(ph.size),
        int(drop_event.sum()),
    )


NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _collective_rows(seed: int) -> list[dict]:
    """Two or three devices, each a thread launching compute and all-reduce kernels in a random mix on one or two
    streams, some followed by a device synchronize."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    devices = int(rng.integers(2, 4))
    kinds = rng.random(12) < 0.4  # the same sequence of collectives on every device
    for dev in range(devices):
        t, gpu_t = 0, 10_000
        for i, collective in enumerate(kinds):
            corr = 1000 * dev + i + 1
            rows.append(
                {
                    "kind": "runtime",
                    "name": "cudaLaunchKernel",
                    "start_ns": t,
                    "end_ns": t + 5_000,
                    "pid": 1,
                    "tid": dev + 1,
                    "correlation_id": corr,
                }
            )
            gpu_t += int(rng.integers(500, 3_000))
            duration = int(rng.integers(1_000, 50_000))
            rows.append(
                {
                    "kind": "kernel",
                    "name": NCCL if collective else "my_kernel",
                    "start_ns": gpu_t,
                    "end_ns": gpu_t + duration,
                    "pid": 1,
                    "tid": 7,
                    "device": dev,
                    "stream": 7 + int(collective and rng.random() < 0.5),
                    "correlation_id": corr,
                }
            )
            gpu_t += duration
            t += 6_000
            if rng.random() < 0.3:
                rows.append(
                    {
                        "kind": "runtime",
                        "name": "cudaDeviceSynchronize",
                        "start_ns": t,
                        "end_ns": max(t, gpu_t) + 2_000,
                        "pid": 1,
                        "tid": dev + 1,
                    }
                )
                t = max(t, gpu_t) + 3_000
    return rows


@pytest.mark.parametrize("seed", range(12))
def test_overlap_collectives_matches_the_pandas_reference(seed):
    trace = Trace.from_rows(_collective_rows(seed))
    ctx = remedies.Context(trace)
    g = ctx.graph
    names = event_columns(trace).name[g.op_row]
    is_collective = g.op_is_kernel & (
        names == names[np.flatnonzero(g.op_collective >= 0)[:1]].max(initial=-5)
    )
    got = overlap_collectives(g, is_collective)
    want = _overlap_reference(g, is_collective)
    assert got[1:] == want[1:]
    if want[0] is None:
        assert got[0] is None
        return
    for field in (
        "lag",
        "edge_src",
        "edge_dst",
        "edge_lag",
        "edge_typical",
        "edge_is_wait",
        "edge_is_wake",
        "edge_is_collective",
    ):
        a, b = getattr(got[0], field), getattr(want[0], field)
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
