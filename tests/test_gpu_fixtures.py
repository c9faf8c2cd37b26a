"""The GPU fixtures (fixtures/gpu/, recorded on an H100 by fixtures/gpu/record_gpu.py): each template
scenario's diagnosis names the cause injected into it, and the numbers it rests on agree with the trace read
directly (JSON), not through tracelens.

These are real CUDA traces of the project's own templates: the verdict is known because the cause was put
there on purpose, and the facts below show it is what happened on the machine.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

import tracelens
from tracelens.templates.scenarios import SCENARIOS

GPU = Path(__file__).resolve().parent.parent / "fixtures" / "gpu"
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")

# The fix each injected cause calls for (diagnosis evidence `remedy`, docs/analyses.md "Fixes follow the evidence").
REMEDY = {
    "slow-input": "single_process",  # DataLoader(num_workers=0): add workers
    "pageable-copies": "pin",
    "sync-every-step": "item",
    "tiny-kernels": "small_kernels",  # 10,000 one-microsecond mul_ kernels: fuse them
    "small-batch": "under_filled",  # a 2-block grid, not a block shape
}


def trace_path(scenario: str) -> Path:
    return GPU / f"pytorch_{scenario}_cuda.pt.trace.json.gz"


@cache
def events(path: Path) -> tuple[dict, ...]:
    with gzip.open(path, "rt") as fh:
        return tuple(json.load(fh)["traceEvents"])


@cache
def document(path: Path) -> dict:
    return tracelens.analyze(tracelens.load(path))


def gpu_union(path: Path) -> list[list[float]]:
    """Merged [start, end) in µs of every kernel, copy and memset."""
    spans = sorted(
        (e["ts"], e["ts"] + e["dur"]) for e in events(path) if e.get("ph") == "X" and e.get("cat") in GPU_CATS
    )
    merged: list[list[float]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def busy_share(path: Path) -> float:
    merged = gpu_union(path)
    return sum(e - s for s, e in merged) / (merged[-1][1] - merged[0][0])


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_each_scenario_is_diagnosed_as_injected(scenario: str) -> None:
    diagnosis = document(trace_path(scenario))["diagnosis"]
    expected = SCENARIOS[scenario].expected_cause or "none"
    assert diagnosis["primary"]["cause"] == expected
    if scenario in REMEDY:
        evidence = diagnosis["primary"]["evidence"]
        assert evidence.get("remedy", evidence.get("loader")) == REMEDY[scenario]


def test_healthy_keeps_the_gpu_busy() -> None:
    path = trace_path("healthy")
    share = busy_share(path)
    assert share > 0.9
    assert document(path)["diagnosis"]["busy_share"] == pytest.approx(share, rel=1e-6)


def test_slow_input_waits_50_ms_per_batch() -> None:
    fetches = [
        e
        for e in events(trace_path("slow-input"))
        if e.get("name") == "tracelens/data" and e.get("cat") == "user_annotation"
    ]
    assert len(fetches) == 10 and min(e["dur"] for e in fetches) >= 50_000  # µs: the injected sleep
    lost = document(trace_path("slow-input"))["diagnosis"]["primary"]["lost_ns"]
    assert 0.8 * 10 * 50e6 <= lost <= sum(e["dur"] for e in fetches) * 1e3


def test_pageable_copies_are_64_mib_from_pageable_memory() -> None:
    copies = [
        e
        for e in events(trace_path("pageable-copies"))
        if e.get("cat") == "gpu_memcpy" and "Pageable" in e["name"] and e["args"].get("bytes", 0) >= 64 << 20
    ]
    assert len(copies) == 10
    lost = document(trace_path("pageable-copies"))["diagnosis"]["primary"]["lost_ns"]
    assert lost >= 0.9 * sum(e["dur"] for e in copies) * 1e3  # the copies overlap nothing: all exposed


def test_sync_every_step_idles_inside_the_readbacks() -> None:
    path = trace_path("sync-every-step")
    evs = events(path)
    assert sum(1 for e in evs if e.get("name") == "aten::item") == 64 * 10
    readbacks = [
        (e["ts"], e["ts"] + e["dur"])
        for e in evs
        if e.get("name") == "sync_readback" and e.get("cat") == "user_annotation"
    ]
    merged = gpu_union(path)
    idle_us = sum((b - a) - sum(max(0.0, min(b, e) - max(a, s)) for s, e in merged) for a, b in readbacks)
    lost = document(path)["diagnosis"]["primary"]["lost_ns"]
    # Most of the GPU's idle time inside the readback loops is the syncs' (the rest is untraced Python).
    assert 0.5 * idle_us * 1e3 <= lost <= 1.05 * idle_us * 1e3


def test_tiny_kernels_launch_ten_thousand_microsecond_kernels() -> None:
    path = trace_path("tiny-kernels")
    evs = events(path)
    assert sum(1 for e in evs if e.get("name") == "aten::mul_") == 1000 * 10
    assert busy_share(path) < 0.5
    evidence = document(path)["diagnosis"]["primary"]["evidence"]
    assert evidence["launching_ops"][0]["name"] == "aten::mul_"


def test_small_batch_scan_runs_two_blocks() -> None:
    path = trace_path("small-batch")
    evs = events(path)
    scans = [e for e in evs if e.get("cat") == "kernel" and "scan_innermost_dim" in e["name"]]
    assert len(scans) == 10 and all(e["args"]["grid"] == [2, 1, 1] for e in scans)
    with gzip.open(path, "rt") as fh:
        sms = json.load(fh)["deviceProperties"][0]["numSms"]
    # Two blocks on `sms` SMs for the scans' whole duration: at least that much SM time is empty, and no more
    # than all kernel time.
    lost = document(path)["diagnosis"]["primary"]["lost_ns"]
    scan_us = sum(e["dur"] for e in scans)
    kernel_us = sum(e["dur"] for e in evs if e.get("cat") == "kernel")
    assert scan_us * (1 - 2 / sms) * 1e3 <= lost <= kernel_us * 1e3


def test_bf16_matmul_flops_and_mfu() -> None:
    path = GPU / "bf16_matmul_cuda.pt.trace.json.gz"
    facts = json.loads((GPU / "bf16_matmul_cuda.facts.json").read_text())
    compute = document(path)["ops"]["compute"]
    flops = facts["count"] * 2 * facts["m"] * facts["n"] * facts["k"]
    assert compute["flops"] == flops
    assert compute["flops_by_class"]["matmul"] == flops
    assert facts["device_name"] == "NVIDIA H100 80GB HBM3"
    assert compute["device_model"] == "H100 SXM"
    assert compute["peak_flops_per_s"] == pytest.approx(989.4e12, rel=1e-3)  # dense BF16, NVIDIA datasheet
    merged = gpu_union(path)
    span_s = (merged[-1][1] - merged[0][0]) * 1e-6
    assert compute["mfu"] == pytest.approx(flops / (span_s * 989.4e12), rel=1e-3)
    # The same rate CUDA events measured around the 20 products in the recording run.
    assert compute["achieved_flops_per_s"] == pytest.approx(flops / (facts["cuda_event_ms"] * 1e-3), rel=0.03)


def test_jax_xplane_is_healthy() -> None:
    diagnosis = document(GPU / "jax_mlp_cuda.xplane.pb")["diagnosis"]
    assert diagnosis["primary"]["cause"] == "none"
    assert diagnosis["busy_share"] > 0.9


def test_transformer_flops_from_the_architecture() -> None:
    # 2 TransformerEncoderLayers, d = 1024, 16 heads (Dh = 64), FFN 4d, batch B = 8, sequence S = 1024, bf16
    # autocast, 3 training steps. Per layer forward, matmuls: QKV 3·2·T·d² + out 2·T·d² + FFN 2·2·T·d·4d =
    # 24·T·d² (T = B·S tokens); backward twice that, except that the input needs no gradient, so layer 0's
    # QKV projection skips its input gradient (6·T·d²): per step 2·72·T·d² − 6·T·d² = 138·T·d².
    # Attention per layer forward 2·B·H·S²·(Dh + Dh), backward 2.5× the forward.
    path = GPU / "transformer_bf16_cuda.pt.trace.json.gz"
    b, s, d, h, steps = 8, 1024, 1024, 16, 3
    t, dh = b * s, d // h
    matmul = steps * 138 * t * d * d
    attention = steps * 2 * 3.5 * (2 * b * h * s * s * 2 * dh)
    compute = document(path)["ops"]["compute"]
    assert compute["flops_by_class"]["matmul"] == matmul
    assert compute["flops_by_class"]["attention"] == attention
    assert compute["flops_by_dtype"] == {"BF16": matmul + attention}
    merged = gpu_union(path)
    span_s = (merged[-1][1] - merged[0][0]) * 1e-6
    assert compute["mfu"] == pytest.approx((matmul + attention) / (span_s * 989.4e12), rel=1e-3)
    paths = {row["path"] for row in document(path)["ops"]["by_module"]}
    assert {
        f"TransformerEncoder_0/TransformerEncoderLayer_{i}/MultiheadAttention_{i}" for i in (0, 1)
    } <= paths


def test_cuda_graph_replays_are_graph_work() -> None:
    path = GPU / "cuda_graph_cuda.pt.trace.json.gz"
    evs = events(path)
    graph_corr = {e["args"]["correlation"] for e in evs if e.get("name") == "cudaGraphLaunch"}
    graph_ops = [e for e in evs if e.get("cat") in GPU_CATS and e["args"].get("correlation") in graph_corr]
    doc = document(path)
    assert doc["launch"]["cuda_graphs"] == {
        "in_use": True,
        "graph_launch_calls": len(graph_corr),
        "graph_ops": len(graph_ops),
    }
    assert len(graph_corr) == 10 and doc["launch"]["gpu_ops"] == len(graph_ops)  # every GPU op is a replay's
    assert doc["diagnosis"]["primary"]["cause"] == "none"


def test_launch_overhead_under_python_tracing_carries_a_caution() -> None:
    path = GPU / "transformer_bf16_cuda.pt.trace.json.gz"
    python_events = sum(1 for e in events(path) if e.get("cat") == "python_function")
    primary = document(path)["diagnosis"]["primary"]
    assert primary["cause"] == "host_launch_overhead"
    assert primary["evidence"]["python_events"] == python_events > 0
    assert "with_stack=True" in primary["fix"] and f"{python_events:,} Python events" in primary["fix"]
    # Without a Python tracer there is no caution.
    tiny = document(trace_path("tiny-kernels"))["diagnosis"]["primary"]
    assert tiny["evidence"]["python_events"] == 0 and "Caution" not in tiny["fix"]
