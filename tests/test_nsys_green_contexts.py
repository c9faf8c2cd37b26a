"""CUDA green contexts (CUDA 12.4+) in an Nsight Systems export: a context given fewer SMs than its GPU
(``TARGET_INFO_CUDA_CONTEXT_INFO.numMultiprocessors`` where ``isGreenContext`` is 1; a kernel's ``greenContextId``
names its context). Its kernels were judged against the whole GPU's SMs: a grid that fills its 16 SMs five times
over was called "under-filled" (80 blocks on 108 SMs) and its estimated occupancy 9% instead of 50%.

Built in tmp_path from the hand-built 2026 export (one GPU of 108 SMs, compute capability 8.0; its three kernels'
geometry read below by SQL); expected values derived by hand from that geometry."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracelens
from tests.nsys_handmade_export import edited_copy, query
from tracelens.analyses import analyze
from tracelens.analyses.diagnosis.low_occupancy import sentence as low_occupancy_sentence

CONTEXT_TABLE = (
    "CREATE TABLE TARGET_INFO_CUDA_CONTEXT_INFO (nullStreamId INTEGER NOT NULL, hwId INTEGER NOT NULL, "
    "vmId INTEGER NOT NULL, processId INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
    "parentContextId INTEGER, isGreenContext INTEGER, numMultiprocessors INTEGER)"
)
GREEN_SMS = 16


def _green(tmp_path: Path, *extra: str) -> Path:
    # context 1: the primary context (not green, numMultiprocessors 0: "invalid if isGreenContext is 0");
    # context 5: a green context of 16 SMs, in which kernels 102 and 104 ran (106 in the primary context)
    return edited_copy(
        tmp_path / "green.sqlite",
        CONTEXT_TABLE,
        "INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (7, 0, 0, 4242, 0, 1, 0, 0, 0)",
        f"INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (9, 0, 0, 4242, 0, 5, 1, 1, {GREEN_SMS})",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET greenContextId = 5 WHERE correlationId IN (102, 104)",
        *extra,
    )


def _kernels(trace: tracelens.Trace) -> dict[int, dict]:
    return {r["correlation_id"]: r for r in trace.events.to_pylist() if r["kind"] == "kernel"}


def test_green_context_kernels_are_judged_against_the_contexts_sms(tmp_path: Path) -> None:
    path = _green(tmp_path)
    geometry = {
        corr: (grid, threads)
        for corr, grid, threads in query(
            path,
            "SELECT correlationId, gridX * gridY * gridZ, blockX * blockY * blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL",
        )
    }
    sms = dict(
        query(
            path,
            "SELECT k.correlationId, c.numMultiprocessors FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN TARGET_INFO_CUDA_CONTEXT_INFO c ON c.contextId = k.greenContextId AND c.isGreenContext = 1",
        )
    )
    device_sms = query(path, "SELECT smCount FROM TARGET_INFO_GPU")[0][0]
    assert geometry == {102: (80, 256), 104: (160, 128), 106: (80, 256)}
    assert sms == {102: GREEN_SMS, 104: GREEN_SMS} and device_sms == 108
    trace = tracelens.load(path)
    kernels = _kernels(trace)
    # estimated achieved = min(active blocks per SM, grid / SMs) x threads / 2048 (cc 8.0: 64 warps per SM).
    # 102: 64 registers x 256 threads = 16,384 per block, 65,536 per SM: 4 blocks; 80 / 16 = 5 -> 4 x 256 / 2048.
    # 104: 128 threads = 4 warps, 16 blocks by warps (the limit); 160 / 16 = 10 -> 10 x 128 / 2048.
    # 106 (primary context, the GPU's 108 SMs): 80 / 108 blocks per SM -> (80 / 108) x 256 / 2048.
    want = {102: 4 * 256 / 2048, 104: 10 * 128 / 2048, 106: (80 / 108) * 256 / 2048}
    for corr, value in want.items():
        assert kernels[corr]["estimated_achieved_occupancy"] == pytest.approx(value, rel=1e-6), corr
    assert {c: k["context_sm_count"] for c, k in kernels.items()} == {102: 16, 104: 16, 106: None}
    # under-filled: grid blocks < the SMs the kernel may use: only 106 (80 < 108); 102 and 104 fill their 16
    device = analyze(trace, sections=["occupancy"])["occupancy"]["per_device"][0]
    assert device["under_filled_count"] == 1
    assert (
        device["under_filled_ns"]
        == query(path, 'SELECT "end" - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 106')[0][0]
    )


def test_a_context_that_is_not_green_keeps_the_gpus_sms(tmp_path: Path) -> None:
    # isGreenContext 0: numMultiprocessors is not valid (CUPTI), whatever it holds: the GPU's SMs, as before
    path = _green(tmp_path, "UPDATE TARGET_INFO_CUDA_CONTEXT_INFO SET isGreenContext = 0")
    kernels = _kernels(tracelens.load(path))
    assert {c: k["context_sm_count"] for c, k in kernels.items()} == {102: None, 104: None, 106: None}
    assert kernels[102]["estimated_achieved_occupancy"] == pytest.approx((80 / 108) * 256 / 2048, rel=1e-6)


def test_a_green_context_claiming_more_sms_than_its_gpu_is_held_to_the_gpus(tmp_path: Path) -> None:
    # numMultiprocessors past the GPU's smCount (a damaged row): the kernels may use no more than the GPU's 108
    path = _green(
        tmp_path, "UPDATE TARGET_INFO_CUDA_CONTEXT_INFO SET numMultiprocessors = 500 WHERE contextId = 5"
    )
    kernels = _kernels(tracelens.load(path))
    assert kernels[102]["estimated_achieved_occupancy"] == pytest.approx((80 / 108) * 256 / 2048, rel=1e-6)


def _low_occupancy_sentence(trace: tracelens.Trace) -> tuple[str, dict]:
    doc = analyze(trace)
    cause = next(c for c in doc["diagnosis"]["causes"] if c["cause"] == "low_occupancy")
    return low_occupancy_sentence(cause, doc["diagnosis"]), doc["occupancy"]["top_low_occupancy_kernels"][0]


def test_an_under_filled_green_context_kernel_is_said_against_the_contexts_sms(tmp_path: Path) -> None:
    # every kernel 4 blocks, all three in the 16-SM green context: under-filled there (4 < 16). The sentence said
    # "fewer blocks than the GPU's 108 SMs", the SMs they could not use
    path = _green(
        tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 4, gridY = 1, gridZ = 1, greenContextId = 5"
    )
    (context_sms,) = {
        sms
        for (sms,) in query(
            path,
            "SELECT c.numMultiprocessors FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN TARGET_INFO_CUDA_CONTEXT_INFO c ON c.contextId = k.greenContextId AND c.isGreenContext = 1",
        )
    }
    device_sms = query(path, "SELECT smCount FROM TARGET_INFO_GPU")[0][0]
    text, top = _low_occupancy_sentence(tracelens.load(path))
    assert top["context_sm_count"] == context_sms == GREEN_SMS
    assert f"fewer blocks than their CUDA green context's {context_sms} SMs (e.g. " in text
    assert f"4 blocks; the GPU has {device_sms} SMs)" in text


def test_green_and_whole_gpu_kernels_are_told_apart(tmp_path: Path) -> None:
    # 4 blocks each; 102 and 104 in the 16-SM context, 106 on the whole GPU: separate groups (other SMs)
    path = _green(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 4, gridY = 1, gridZ = 1")
    trace = tracelens.load(path)
    kernels = analyze(trace, sections=["occupancy"])["occupancy"]["top_low_occupancy_kernels"]
    assert sorted((k["context_sm_count"] or 0, k["count"]) for k in kernels) == [
        (0, 1),
        (GREEN_SMS, 1),
        (GREEN_SMS, 1),
    ]
    text, _ = _low_occupancy_sentence(trace)
    assert (
        f"fewer blocks than the SMs they may use (the GPU's 108; {GREEN_SMS} in a CUDA green context)" in text
    )
