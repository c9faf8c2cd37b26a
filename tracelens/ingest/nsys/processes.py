"""Exports of several processes (MPI ranks, DDP workers under one ``nsys profile``): what CUPTI numbers per
process is made unique across the export before the parts are assembled.

- Correlation ids: CUPTI counts each process's API calls from 1, so ranks repeat each other's ids; joined on the
  id alone, a rank's kernels took another rank's launch calls (wrong latencies, ops "enqueued" by one call as if
  graph launches, NVTX ranges credited with another rank's GPU time). Where rows of more than one process carry
  correlation ids, ``correlation_id = pid * 2^32 + correlationId`` (CUPTI's id is 32-bit: no two keys meet).
- Devices: a GPU row's ``deviceId`` is the CUDA device ordinal inside its process; with ``CUDA_VISIBLE_DEVICES``
  set per rank every rank runs on its "device 0", and a rank limited to GPU 3 calls it 0 too. Read as exported,
  the ranks' GPUs were one device (one busy union over several GPUs). ``TARGET_INFO_CUDA_DEVICE (gpuId, cudaId,
  pid)`` says which GPU (``TARGET_INFO_GPU.id``) each process's CUDA device is: ``device`` is that ``gpuId``
  where the table names one, else ``deviceId`` as exported.
- A process whose GPU side is missing: its launch calls are in the export and not one GPU row of it (a rank's
  CUPTI buffers lost, a process not traced with CUDA activity). The figures then cover the other processes'
  GPUs only, silently: a warning names the process (:func:`processes_without_gpu_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import Part, int64_numpy
from .database import Database
from .metadata import device_id

PROCESS_SHIFT = 1 << 32  # above every 32-bit CUPTI correlation id


def _correlated_pids(part: Part) -> np.ndarray:
    """The distinct pids of the part's rows that carry a correlation id (null pids left out)."""
    corr, pid = part.columns.get("correlation_id"), part.columns.get("pid")
    if corr is None or pid is None or not len(corr):
        return np.empty(0, np.int64)
    kept = (
        pid if not corr.null_count else pid.filter(corr.is_valid())
    )  # (no filter where every row has an id)
    return np.asarray(pc.unique(kept).drop_null().cast(pa.int64()), np.int64)


def _ids_without_pid(part: Part) -> bool:
    """Whether some row of the part carries a correlation id and no pid."""
    corr, pid = part.columns.get("correlation_id"), part.columns.get("pid")
    if corr is None or corr.null_count == len(corr):
        return False
    if pid is None or pid.null_count == len(pid):
        return True
    return bool(pid.null_count) and bool(pc.any(pc.and_(corr.is_valid(), pid.is_null())).as_py())


def key_correlation_ids_by_process(parts: list[Part]) -> bool:
    """Make correlation ids unique per process where rows of several processes carry them (in place); whether
    they were. One process: the ids stay as exported."""
    pids = np.unique(np.concatenate([_correlated_pids(p) for p in parts] or [np.empty(0, np.int64)]))
    if pids.size < 2 or any(_ids_without_pid(p) for p in parts):
        # one process; or rows with an id and no pid (a GPU table without globalPid): keyed, the calls would
        # join none of them, so the ids stay as exported
        return False
    for part in parts:
        corr, pid = part.columns.get("correlation_id"), part.columns.get("pid")
        if corr is None or pid is None:
            continue
        wide = corr.cast(pa.int64())
        keyed = pc.add(pc.multiply(pid.cast(pa.int64()), PROCESS_SHIFT), wide)
        # (no row has an id and no pid here: a null pid's row has a null id, kept null)
        part.columns["correlation_id"] = (
            keyed if not pid.null_count else pc.if_else(pid.is_null(), wide, keyed)
        )
    return True


def cuda_device_gpus(db: Database) -> dict[tuple[int, int], int]:
    """(pid, CUDA device ordinal) -> the GPU's ``TARGET_INFO_GPU.id``, from ``TARGET_INFO_CUDA_DEVICE``; empty
    without the table or its columns. A pair the table maps to two GPUs (a damaged export) is left out."""
    table = "TARGET_INFO_CUDA_DEVICE"
    if table not in db.tables or not {"gpuId", "cudaId", "pid"} <= set(db.columns(table)):
        return {}
    uuid = "uuid" if "uuid" in db.columns(table) else "NULL"
    gpus: dict[tuple[int, int], set[int]] = {}
    devices_of: dict[int, set[Any]] = {}  # per GPU, the CUDA devices (by uuid) that are it
    uuids: dict[tuple[int, int], Any] = {}  # (pid, CUDA device) -> its uuid (None where two or none)
    for gpu, cuda, pid, name in db.small(f"SELECT DISTINCT gpuId, cudaId, pid, {uuid} FROM {table}"):
        if all(device_id(v) is not None for v in (gpu, cuda, pid)):  # ids the int32 columns hold
            gpus.setdefault((pid, cuda), set()).add(gpu)
            uuids[(pid, cuda)] = name if uuids.get((pid, cuda), name) == name else None
            devices_of.setdefault(gpu, set()).add(name if isinstance(name, str) and name else (pid, cuda))
    mapped = {key: next(iter(found)) for key, found in gpus.items() if len(found) == 1}
    # Two CUDA devices of one process on one GPU, or two devices of distinct uuids on one GPU, are not the GPU
    # whole (MIG instances are CUDA devices of their own): merged into one device, their work would be one busy
    # union. Each such device is then a device of its own (mig_slices), else they stay as exported.
    per_process: dict[tuple[int, int], int] = {}
    for (pid, _), gpu in mapped.items():
        per_process[(pid, gpu)] = per_process.get((pid, gpu), 0) + 1
    named = [{d for d in found if isinstance(d, str)} for found in devices_of.values()]
    if any(n > 1 for n in per_process.values()) or any(len(u) > 1 for u in named):
        return mig_slices(mapped, uuids)
    return mapped


def mig_slices(
    mapped: dict[tuple[int, int], int], uuids: dict[tuple[int, int], Any]
) -> dict[tuple[int, int], int]:
    """(pid, CUDA device) -> a device of its own per CUDA device uuid (a MIG slice, or a whole GPU), where the
    GPU of each pair is known (``mapped``) and every pair has a uuid; empty otherwise (the devices stay as
    exported). Where the CUDA ids already tell the uuids apart (one id per uuid, distinct), they are kept; else
    (ranks each calling their own slice "device 0", which as exported were one device) the devices are numbered
    0, 1, ... in (GPU, uuid) order."""
    if not mapped or any(not isinstance(uuids.get(key), str) for key in mapped):
        return {}
    slices = sorted({(gpu, uuids[key]) for key, gpu in mapped.items()})
    cuda_of: dict[tuple[int, str], set[int]] = {}
    for key, gpu in mapped.items():
        cuda_of.setdefault((gpu, uuids[key]), set()).add(key[1])
    ids = [next(iter(c)) for c in cuda_of.values()]
    if all(len(c) == 1 for c in cuda_of.values()) and len(set(ids)) == len(ids):
        return {key: key[1] for key in mapped}
    number = {s: i for i, s in enumerate(slices)}
    return {key: number[(gpu, uuids[key])] for key, gpu in mapped.items()}


def map_devices_to_gpus(parts: list[Part], gpus: dict[tuple[int, int], int]) -> bool:
    """Set each GPU row's ``device`` to the GPU its process's CUDA device is (:func:`cuda_device_gpus`), in
    place; whether any row's device changed. Rows of a pair the mapping lacks keep their ``deviceId``."""
    if not gpus or all(gpu == cuda for (_, cuda), gpu in gpus.items()):
        return False
    pairs = sorted(gpus)
    keys = np.array([pid * PROCESS_SHIFT + cuda for pid, cuda in pairs], np.int64)
    values = np.array([gpus[k] for k in pairs], np.int64)
    changed = False
    for part in parts:
        device, pid = part.columns.get("device"), part.columns.get("pid")
        if part.host or device is None or pid is None or not len(device):
            continue
        dev, proc = int64_numpy(device, fill=-1), int64_numpy(pid, fill=-1)
        key = proc * PROCESS_SHIFT + dev
        at = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        hit = (keys[at] == key) & (dev >= 0) & (proc >= 0)
        if not hit.any():
            continue
        mapped = np.where(hit, values[at], dev)
        changed |= bool((mapped != dev).any())
        nulls = np.asarray(device.is_null())
        part.columns["device"] = pa.array(mapped, pa.int64(), mask=nulls if nulls.any() else None)
    return changed


def ordinals_shared_by_processes(parts: list[Part], gpus: dict[tuple[int, int], int]) -> dict[int, list[int]]:
    """CUDA device ordinal -> the processes (sorted) that run GPU ops on it, where more than one does and the export
    names no GPU for those (pid, ordinal) pairs (``gpus``: :func:`cuda_device_gpus`). Read as one device: with
    CUDA_VISIBLE_DEVICES set per rank, each rank's "device 0" is a GPU of its own, merged here into one busy union
    (twice the kernel time of one GPU); or the processes shared one GPU. The export cannot tell which."""
    pids, devices = [], []
    for part in parts:
        device, pid = part.columns.get("device"), part.columns.get("pid")
        if part.host or "sync_kind" in part.columns or device is None or pid is None or not part.n:
            continue
        pids.append(int64_numpy(pid, fill=-1))
        devices.append(int64_numpy(device, fill=-1))
    if not pids:
        return {}
    pid, device = np.concatenate(pids), np.concatenate(devices)
    known = (pid >= 0) & (device >= 0)
    if gpus:  # the pairs the export maps to a GPU are that GPU (map_devices_to_gpus)
        mapped = np.array([p * PROCESS_SHIFT + c for p, c in gpus], np.int64)
        known &= ~np.isin(pid * PROCESS_SHIFT + device, mapped)
    pairs = pa.table({"device": device[known], "pid": pid[known]}).group_by(["device", "pid"]).aggregate([])
    shared: dict[int, list[int]] = {}
    for dev, proc in zip(pairs.column("device").to_pylist(), pairs.column("pid").to_pylist(), strict=True):
        shared.setdefault(dev, []).append(proc)  # (a loop over distinct pairs: processes x devices)
    return {dev: sorted(procs) for dev, procs in sorted(shared.items()) if len(procs) > 1}


# API calls that enqueue GPU work, by name: kernel and graph launches, copies and memsets (runtime and driver).
_ENQUEUING_CALL = r"^(cuda|cu|hip)\w*(Launch|Memcpy|Memset)"


def processes_without_gpu_rows(parts: list[Part]) -> dict[int, int]:
    """{pid: its calls that enqueue GPU work} of the processes with such calls and no GPU row, where other
    processes do have GPU rows (an export without any GPU row gets its own warning)."""
    gpu_pids: set[int] = set()
    for part in parts:
        pid = part.columns.get("pid")
        if not part.host and pid is not None and len(pid):
            gpu_pids.update(int(p) for p in pc.unique(pid).drop_null().to_pylist())
    if not gpu_pids:
        return {}
    calls: dict[int, int] = {}
    for part in parts:
        pid, name = part.columns.get("pid"), part.columns.get("name")
        if not part.host or pid is None or not len(pid) or part.columns.get("correlation_id") is None:
            continue  # not the API calls (GPU rows; NVTX, OS runtime, overhead rows carry no correlation id)
        if not isinstance(name, pa.DictionaryArray):
            continue
        if {int(p) for p in pc.unique(pid).drop_null().to_pylist()} <= gpu_pids:
            continue  # every process of these calls has GPU rows (the usual case: no name is read)
        enqueuing = pc.match_substring_regex(name.dictionary.cast(pa.string()), _ENQUEUING_CALL)
        mask = pc.fill_null(pc.take(enqueuing, name.indices), False)
        pids, counts = np.unique(np.asarray(pid.filter(mask).drop_null(), np.int64), return_counts=True)
        for p, n in zip(pids.tolist(), counts.tolist(), strict=True):
            calls[p] = calls.get(p, 0) + n
    return {p: n for p, n in sorted(calls.items()) if p not in gpu_pids}


def sync_devices_from_ops(parts: list[Part]) -> int:
    """Set each synchronization row's ``device`` (in place) to the one device its process runs its stream's GPU ops
    on, else the one device its process runs any GPU op on, else leave it as exported; how many rows changed.
    CUPTI's synchronization record has no device, and nsys writes 0: every SYNCHRONIZATION row of the h100x2 window
    export says device 0, a process's whose every op runs on device 1 too."""
    ops = [p for p in parts if not p.host and "sync_kind" not in p.columns and p.n]
    syncs = [p for p in parts if "sync_kind" in p.columns and p.n]
    if not ops or not syncs:
        return 0

    def column(part: Part, name: str) -> np.ndarray:
        values = part.columns.get(name)
        return int64_numpy(values, fill=-1) if values is not None else np.full(part.n, -1, np.int64)

    pid = np.concatenate([column(p, "pid") for p in ops])
    stream = np.concatenate([column(p, "stream") for p in ops])
    device = np.concatenate([column(p, "device") for p in ops])
    known = (pid >= 0) & (device >= 0)
    pid, stream, device = pid[known], stream[known], device[known]

    def one_device(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The keys whose ops all run on one device (sorted), and that device."""
        # Arrow's hash aggregation, one pass: np.unique(axis=1) over the (key, device) pairs sorted every op
        # (7.5 s of the x1512 export's 13.7 s load; this: ~0.2 s)
        spread = (
            pa.table({"key": keys, "device": device})
            .group_by("key")
            .aggregate([("device", "min"), ("device", "max")])
        )
        key = spread.column("key").to_numpy()
        low, high = spread.column("device_min").to_numpy(), spread.column("device_max").to_numpy()
        order = np.argsort(key)
        single = (low == high)[order]
        return key[order][single], low[order][single]

    # stream ids are per process: the key is (pid, stream) as one int64 (pid < 2^24, stream ids < 2^39 here)
    stream_key = pid * (1 << 39) + np.where((stream >= 0) & (stream < 1 << 39), stream, (1 << 39) - 1)
    stream_keys, stream_devices = one_device(stream_key)
    pid_keys, pid_devices = one_device(pid)

    def lookup(keys: np.ndarray, values: np.ndarray, want: np.ndarray) -> np.ndarray:
        if keys.size == 0:
            return np.full(want.size, -1, np.int64)
        at = np.minimum(np.searchsorted(keys, want), keys.size - 1)
        return np.where(keys[at] == want, values[at], -1)

    changed = 0
    for part in syncs:
        p, s, d = column(part, "pid"), column(part, "stream"), column(part, "device")
        key = p * (1 << 39) + np.where((s >= 0) & (s < 1 << 39), s, (1 << 39) - 1)
        found = lookup(stream_keys, stream_devices, np.where(s >= 0, key, -1))
        found = np.where(found >= 0, found, lookup(pid_keys, pid_devices, p))
        found = np.where((found >= 0) & (p >= 0), found, d)
        if (found != d).any():
            changed += int((found != d).sum())
            nulls = found < 0
            part.columns["device"] = pa.array(found, pa.int64(), mask=nulls if nulls.any() else None)
    return changed
