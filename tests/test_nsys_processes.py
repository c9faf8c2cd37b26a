"""Nsight Systems exports holding several processes (MPI ranks, DDP workers launched under one ``nsys profile``).

CUPTI numbers each process's API calls from 1, so two processes repeat each other's correlation ids; and with
``CUDA_VISIBLE_DEVICES`` set per rank each process sees its GPU as CUDA device 0, so the GPU tables' ``deviceId``
(the CUDA ordinal inside the process) repeats too; ``TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid)`` says which
GPU each process's device is. The exports are the hand-built fixture copied into a second process in tmp_path;
every expectation is SQL written here over that file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_params

from tests.nsys_handmade_export import query
from tracelens.analyses.launch import launch_pairs
from tracelens.cli import main
from tracelens.ingest import load

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "nsys" / "handmade_nsys2026.sqlite"
PID2 = 5151
SHIFT_NS = 300  # the second process runs 300 ns later: its rows overlap the first's
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _two_processes(tmp_path: Path, device: int) -> Path:
    """The fixture with every row of its process 4242 repeated by process PID2 (same correlation ids, GPU rows
    on CUDA device ``device``, SHIFT_NS later)."""
    path = tmp_path / "two_processes.sqlite"
    shutil.copy(FIXTURE, path)
    path.chmod(0o644)
    conn = sqlite3.connect(path)
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
        if "start" not in cols or not {"globalPid", "globalTid"} & set(cols):
            continue
        select = []
        for col in cols:
            if col == "globalPid":
                select.append(f"((globalPid >> 48) << 48) + ({PID2} << 24)")
            elif col in ("globalTid", "endGlobalTid"):
                select.append(
                    f"CASE WHEN {col} IS NULL THEN NULL ELSE (({col} >> 48) << 48) + ({PID2} << 24) + {PID2} END"
                )
            elif col == "deviceId":
                select.append(str(device))
            elif col in ("start", "end"):
                select.append(f'"{col}" + {SHIFT_NS}')
            else:
                select.append(f'"{col}"')
        conn.execute(f'INSERT INTO "{table}" SELECT {", ".join(select)} FROM "{table}"')
    conn.commit()
    conn.close()
    return path


def test_repeated_correlation_ids_join_each_op_to_its_own_process(tmp_path: Path) -> None:
    path = _two_processes(tmp_path, device=1)
    ops = " UNION ALL ".join(f"SELECT start, correlationId, globalPid FROM {t}" for t in GPU_TABLES)
    # Each GPU op's launch call: the runtime row of its own process with its correlation id.
    expected = sorted(
        query(
            path,
            f"""SELECT g.start, r.start, r."end" FROM ({ops}) g JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                ON r.correlationId = g.correlationId AND (r.globalTid >> 24) & 16777215 = (g.globalPid >> 24) & 16777215""",
        )
    )
    assert len(expected) == 12  # 6 GPU ops a process, each launched by one call of its own process
    trace = load(path)
    origin = trace.metadata.time_origin_ns
    pairs = launch_pairs(trace)
    matched = np.asarray(pairs["matched"])
    got = sorted(
        zip(
            (np.asarray(pairs["start"])[matched] + origin).tolist(),
            (np.asarray(pairs["launch_start"])[matched] + origin).tolist(),
            (np.asarray(pairs["launch_end"])[matched] + origin).tolist(),
            strict=True,
        )
    )
    assert got == expected


def test_repeated_correlation_ids_count_one_call_per_op(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Joined across processes, the 12 ops read as enqueued by 6 calls: "graph launches" that are not there.
    path = _two_processes(tmp_path, device=1)
    assert main(["analyze", "-f", "json", str(path)]) == 0
    launch = json.loads(capsys.readouterr().out)["launch"]
    calls = query(
        path,
        "SELECT count(DISTINCT (globalTid >> 24) * 4294967296 + correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        "WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION "
        "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION SELECT correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET)",
    )[0][0]
    assert calls == 12
    assert launch["matched_ops"] == 12
    assert launch["latency"]["count"] == calls
    assert launch["rates"]["launch_calls"] == calls


@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params("nsys", "*.sqlite"))
def test_matched_ops_are_the_join_on_process_and_id(path: Path) -> None:
    # The 2026.2 window holds two processes whose correlation ids overlap (1452809..1479690 and 1477488..1504362):
    # joined on the id alone, 16 of its GPU ops took the other process's call.
    ops = " UNION ALL ".join(
        f"SELECT correlationId AS c, globalPid AS g FROM {t}"
        for t in GPU_TABLES
        if query(path, f"SELECT count(*) FROM sqlite_master WHERE name = '{t}'")[0][0]
    )
    expected = query(
        path,
        f"""SELECT count(*) FROM ({ops}) o WHERE EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r
            WHERE r.correlationId = o.c AND (r.globalTid >> 24) & 16777215 = (o.g >> 24) & 16777215)""",
    )[0][0]
    assert int(np.asarray(launch_pairs(load(path))["matched"]).sum()) == expected


def _cuda_devices(
    path: Path, rows: list[tuple[int, int, int, int]], gpus: list[tuple[int, str, int]]
) -> None:
    """Add TARGET_INFO_CUDA_DEVICE (gpuId, cudaId, pid, numMultiprocessors) rows and TARGET_INFO_GPU rows
    (id, name, smCount) as nsys 2026.1 writes them (the column set of the real 2026.1 export)."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, "
        "uuid TEXT, numMultiprocessors INTEGER)"
    )
    conn.executemany("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, ?, NULL, ?)", rows)
    conn.execute("DELETE FROM TARGET_INFO_GPU")
    conn.executemany("INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES (1, ?, ?, ?)", gpus)
    conn.commit()
    conn.close()


def test_each_process_device_0_is_the_gpu_target_info_names(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # CUDA_VISIBLE_DEVICES per rank: both processes run on their CUDA device 0, which nsys maps to GPUs 0 and 1.
    # Read as one device 0, the two GPUs' work was one union: a headline that mixes two GPUs into one.
    path = _two_processes(tmp_path, device=0)
    _cuda_devices(path, [(0, 0, 4242, 108), (1, 0, PID2, 108)], [(0, "GPU A", 108), (1, "GPU B", 108)])
    ops = " UNION ALL ".join(f'SELECT start, "end", globalPid FROM {t}' for t in GPU_TABLES)
    busy = {}
    for pid, gpu in ((4242, 0), (PID2, 1)):
        rows = query(
            path,
            f'SELECT start, "end" FROM ({ops}) WHERE (globalPid >> 24) & 16777215 = {pid} ORDER BY start',
        )
        merged: list[list[int]] = []
        for s, e in rows:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        busy[gpu] = sum(e - s for s, e in merged)
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["device_count"] == 2
    assert {d["id"]: d["busy_ns"] for d in doc["devices"]} == busy
    assert {d["id"]: d["name"] for d in doc["devices"]} == {0: "GPU A", 1: "GPU B"}
    assert {d["id"]: d["kernel_count"] for d in doc["devices"]} == {0: 3, 1: 3}


def test_a_process_limited_to_one_gpu_reads_as_that_gpu(tmp_path: Path) -> None:
    # CUDA_VISIBLE_DEVICES=3: the process calls the node's GPU 3 its device 0; the device row is GPU 3's.
    path = tmp_path / "one_gpu.sqlite"
    shutil.copy(FIXTURE, path)
    path.chmod(0o644)
    _cuda_devices(path, [(3, 0, 4242, 132)], [(i, f"GPU {i}", 132) for i in range(4)])
    trace = load(path)
    kernels = trace.df[trace.df.kind == "kernel"]
    assert set(kernels.device.astype("int64")) == {3}
    assert query(path, "SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL") == [(0,)]
    devices = trace.devices.to_pylist()
    assert [(d["id"], d["name"]) for d in devices] == [(i, f"GPU {i}") for i in range(4)]


def test_a_process_whose_gpu_side_is_missing_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # Rank PID2's GPU rows lost (its CUPTI buffers, or a process traced without CUDA activity): the figures
    # cover process 4242's GPU alone, which the output said nowhere.
    path = _two_processes(tmp_path, device=1)
    conn = sqlite3.connect(path)
    for table in (*GPU_TABLES, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        conn.execute(f"DELETE FROM {table} WHERE (globalPid >> 24) & 16777215 = {PID2}")
    conn.commit()
    conn.close()
    names = "SELECT id FROM StringIds WHERE value GLOB 'cu*Launch*' OR value GLOB 'cu*Memcpy*' OR value GLOB 'cu*Memset*'"
    calls = query(
        path,
        f"SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE (globalTid >> 24) & 16777215 = {PID2} "
        f"AND nameId IN ({names})",
    )[0][0]
    assert calls == 6  # R1, R2, R3, R4, R6, R7 of the fixture
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["device_count"] == 1
    named = [w for w in doc["source"]["warnings"] if "have no GPU row" in w]
    assert len(named) == 1 and f"{PID2} ({calls} calls)" in named[0] and "4242" not in named[0]


def test_processes_that_all_have_gpu_rows_are_not_named(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _two_processes(tmp_path, device=1)
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert not [w for w in doc["source"]["warnings"] if "have no GPU row" in w]


def test_gpu_tables_without_a_process_keep_the_ids_as_exported(tmp_path: Path) -> None:
    # GPU tables without globalPid (a damaged or trimmed export): the GPU ops' process is unknown, so keyed calls
    # would join none of them; ids stay as exported and join on the id alone (distinct ids here).
    path = _two_processes(tmp_path, device=1)
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = correlationId + 1000 WHERE "
        f"(globalTid >> 24) & 16777215 = {PID2}"
    )
    for table in (*GPU_TABLES, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"):
        conn.execute(
            f"UPDATE {table} SET correlationId = correlationId + 1000 WHERE (globalPid >> 24) & 16777215 = {PID2}"
        )
        conn.execute(f"ALTER TABLE {table} DROP COLUMN globalPid")
    conn.commit()
    conn.close()
    ops = " UNION ALL ".join(f"SELECT correlationId FROM {t}" for t in GPU_TABLES)
    expected = query(
        path,
        f"SELECT count(*) FROM ({ops}) WHERE correlationId IN (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)",
    )[0][0]
    assert expected == 12
    assert int(np.asarray(launch_pairs(load(path))["matched"]).sum()) == expected


def test_a_cuda_device_row_with_an_id_past_int32_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Lookup-table rows of another type or size are left out and the trace read (docs/formats/nsys.md); a gpuId
    # of 2^32 refused the whole file once the device table was keyed by gpuId.
    path = _two_processes(tmp_path, device=0)
    _cuda_devices(path, [(2**32, 0, 4242, 108), (1, 0, PID2, 108)], [(0, "GPU A", 108), (1, "GPU B", 108)])
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    # process 4242's device 0 maps to no usable GPU id: it keeps its CUDA id; PID2's device 0 is GPU 1
    assert {d["id"]: d["kernel_count"] for d in doc["devices"]} == {0: 3, 1: 3}


def test_mig_instances_of_one_gpu_are_not_merged(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # MIG: each instance is a CUDA device of its own (CUPTI), on one physical GPU (one gpuId). A process using two
    # instances (CUDA devices 0 and 1, uuids MIG-...) would have both mapped onto GPU 0, one busy union over two
    # devices: where the table puts several CUDA devices of one process, or devices of distinct uuids, on one GPU,
    # the devices stay as exported.
    path = _two_processes(tmp_path, device=1)
    conn = sqlite3.connect(path)
    shift = (PID2 - 4242) << 24
    for table, column in [(t, "globalPid") for t in (*GPU_TABLES, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")] + [
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid")
    ]:
        # one process: PID2's rows become process 4242's (on its CUDA device 1), with ids of their own
        moved = f"({column} >> 24) & 16777215 = {PID2}"
        conn.execute(f"UPDATE {table} SET correlationId = correlationId + 1000 WHERE {moved}")
        conn.execute(f"UPDATE {table} SET {column} = {column} - {shift} WHERE {moved}")
    conn.execute(
        "CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, "
        "uuid TEXT, numMultiprocessors INTEGER)"
    )
    conn.execute(
        "INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4242, 'MIG-aaaa', 14), (0, 1, 4242, 'MIG-bbbb', 14)"
    )
    conn.commit()
    conn.close()
    kernels = (
        "SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 2"
    )
    assert query(path, kernels) == [(4242, 0), (4242, 1)]
    assert main(["analyze", "-f", "json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {d["id"]: d["kernel_count"] for d in doc["devices"]} == {0: 3, 1: 3}
