"""MIG: a Multi-Instance GPU slice is a CUDA device of its own (its uuid "MIG-..."), with the SMs of its slice
(cudaDeviceProp.multiProcessorCount: 14 on an A100 1g.5gb), while TARGET_INFO_GPU describes the physical GPU
(108 SMs on an A100). Grid fill and occupancy were judged against the whole GPU's SMs: the handmade export's
80-block gemm, 5.7 blocks per SM of a 14-SM slice, read "fewer blocks than the GPU's 108 SMs", low_occupancy 7.78 µs.
The device's SM count is the CUDA device's own (TARGET_INFO_CUDA_DEVICE.numMultiprocessors), its other properties
the physical GPU's it runs on; every expectation is SQL over the edited export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.nsys_handmade_export import edited_copy, query
from tracelens.cli import main

CUDA_DEVICE = (
    "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, "
    "uuid TEXT, numMultiprocessors INTEGER)"
)


def _devices(path: Path, capsys: pytest.CaptureFixture) -> dict:
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    return {d["device"]: d for d in doc["occupancy"]["per_device"]}


def test_a_mig_slice_is_judged_against_its_own_sms(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = edited_copy(
        tmp_path / "mig.sqlite",
        CUDA_DEVICE,
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'MIG-aaaa', 14)",
    )
    ((slice_sms, gpu_sms, major, minor),) = query(
        path,
        "SELECT c.numMultiprocessors, g.smCount, g.computeMajor, g.computeMinor FROM TARGET_INFO_CUDA_DEVICE c "
        "JOIN TARGET_INFO_GPU g ON g.id = c.gpuId",
    )
    assert (slice_sms, gpu_sms) == (14, 108)
    # every kernel has at least as many blocks as the slice has SMs: none is under-filled
    (fewest,) = query(path, "SELECT min(gridX * gridY * gridZ) FROM CUPTI_ACTIVITY_KIND_KERNEL")[0]
    assert fewest >= slice_sms
    dev = _devices(path, capsys)[0]
    assert dev["sm_count"] == slice_sms
    assert dev["compute_capability"] == f"{major}.{minor}"
    assert dev["under_filled_count"] == 0 and dev["under_filled_lost_ns"] == 0


def test_two_slices_of_one_gpu_each_keep_their_sms(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # one process on two slices (CUDA devices 0 and 1 on GPU 0): the devices stay as exported (CUDA ids), and
    # device 1 had no properties at all (the table keyed by gpuId, 0) while device 0 took the whole GPU's
    path = edited_copy(
        tmp_path / "mig2.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE correlationId = 104",
        CUDA_DEVICE,
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'MIG-aaaa', 14), (0, 1, 4242, 'MIG-bbbb', 42)",
    )
    sms = dict(query(path, "SELECT cudaId, numMultiprocessors FROM TARGET_INFO_CUDA_DEVICE"))
    ((major, minor),) = query(path, "SELECT computeMajor, computeMinor FROM TARGET_INFO_GPU WHERE id = 0")
    devices = _devices(path, capsys)
    assert {d: devices[d]["sm_count"] for d in devices} == sms
    assert {devices[d]["compute_capability"] for d in devices} == {f"{major}.{minor}"}


def test_slices_of_two_processes_are_two_devices(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # two ranks, each on a slice of its own (CUDA_VISIBLE_DEVICES=MIG-...), each calling it CUDA device 0: the
    # ranks were one "GPU 0" (6 kernels, 70 µs of kernel time in a 40.8 µs busy union). Each slice is a device.
    from test_nsys_processes import PID2, _two_processes

    path = _two_processes(tmp_path, device=0)
    conn = sqlite3.connect(path)
    conn.execute(CUDA_DEVICE)
    conn.execute(
        f"INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'MIG-aaaa', 14), (0, 0, {PID2}, 'MIG-bbbb', 28)"
    )
    conn.commit()
    conn.close()
    per_process = query(
        path,
        "SELECT c.uuid, c.numMultiprocessors, count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN TARGET_INFO_CUDA_DEVICE c ON c.pid = (k.globalPid >> 24) & 16777215 AND c.cudaId = k.deviceId "
        "GROUP BY c.uuid ORDER BY c.uuid",
    )
    assert len(per_process) == 2
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = sorted(
        (d["kernel_count"], d["kernel_ns"], occ["sm_count"])
        for d in doc["devices"]
        for occ in doc["occupancy"]["per_device"]
        if occ["device"] == d["id"]
    )
    assert got == sorted((n, ns, sms) for _, sms, n, ns in per_process)
