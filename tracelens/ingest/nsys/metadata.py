"""What an Nsight Systems export says about itself: export metadata and schema checks, the device table,
the framework, thread and process names, and the other ``metadata.extra`` entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from ...trace import EventStore, build_devices
from ..profiler_log import profiler_drops
from .columns import MASK24
from .database import Database
from .queries import TABLE_KERNEL, TABLE_NVTX, TABLE_OSRT, TABLE_RUNTIME
from .strings import Strings

# Schema majors this reader was written against (2 = nsys 2021-2023, 3 = 2024-2026).
KNOWN_SCHEMA_MAJOR = 3


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def device_id(value: Any) -> int | None:
    """A device id cell as an int, None where it is no id the device column (int32) holds: a lookup-table row
    of another type or size is left out (a damaged export), not a refused file."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31 else None


def export_metadata(db: Database) -> dict[str, str]:
    """The export's EXPORT_META_DATA (or META_DATA_EXPORT) as name -> value."""
    meta: dict[str, str] = {}
    for table in ("EXPORT_META_DATA", "META_DATA_EXPORT"):
        if table in db.tables and {"name", "value"} <= set(db.columns(table)):
            meta.update(
                {
                    str(k): str(v)
                    for k, v in db.small(f"SELECT name, value FROM {table}")
                    if k is not None and v is not None
                }
            )
    return meta


def check_is_nsys(db: Database, meta: dict[str, str], path: Path) -> None:
    """Raise InputError when the database has none of the tables or metadata an nsys export has."""
    # nvprof's SQLite profiles (.nvvp) share table names with nsys (CUPTI_ACTIVITY_KIND_RUNTIME, _MEMCPY) but
    # keep kernels in CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL and strings in StringTable: read as an export, the
    # copies were the whole GPU side (100% busy, memcpy-bound) and the kernels unseen.
    if (
        not meta
        and "StringIds" not in db.tables
        and {"StringTable", "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL"} & db.tables
    ):
        raise InputError(
            "an nvprof profile (StringTable, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), not an Nsight Systems export:"
            " record with nsys profile and export with nsys export --type sqlite",
            path=path,
        )
    known = {"StringIds", TABLE_KERNEL, TABLE_RUNTIME, TABLE_NVTX, TABLE_OSRT, "TARGET_INFO_GPU"}
    if not meta and not (known & db.tables):
        raise InputError(
            "SQLite database is not an Nsight Systems export (no StringIds, CUPTI_ACTIVITY_KIND_*"
            " or NVTX_EVENTS tables, no export metadata)",
            path=path,
        )


def schema_version_warning(meta: dict[str, str]) -> str | None:
    """A warning when the export's schema is newer than any this reader knows (None otherwise)."""
    # the full version's major first: the one the warning names (a damaged _MAJOR row disagreeing with it
    # made "export schema 3.24.14 is newer than any ... (major 3)")
    major = meta.get("EXPORT_SCHEMA_VERSION", "").split(".")[0] or meta.get("EXPORT_SCHEMA_VERSION_MAJOR", "")
    try:
        major_number = int(major)
    except ValueError:
        return None
    if major_number > KNOWN_SCHEMA_MAJOR:
        return (
            f"export schema {meta.get('EXPORT_SCHEMA_VERSION', major)} is newer than any this tracelens "
            f"knows (major {KNOWN_SCHEMA_MAJOR}); reading the tables and columns that match"
        )
    return None


def devices(db: Database, events: EventStore, gpus: dict[tuple[int, int], int]) -> pa.Table:
    """The device table: TARGET_INFO_GPU, the CUDA devices of TARGET_INFO_CUDA_DEVICE (:func:`cuda_device_rows`;
    ``gpus`` maps the events' devices as :func:`.processes.cuda_device_gpus` did), and every device a row names."""
    rows: dict[int, dict[str, Any]] = {}
    if "TARGET_INFO_GPU" in db.tables:
        have = set(db.columns("TARGET_INFO_GPU"))
        wanted = [
            "id",
            "name",
            "smCount",
            "computeMajor",
            "computeMinor",
            "threadsPerWarp",
            "maxWarpsPerSm",
            "maxThreadsPerBlock",
            "maxBlocksPerSm",
            "maxRegistersPerSm",
            "maxRegistersPerBlock",
            "maxShmemPerSm",
            "maxShmemPerBlock",
            "maxShmemPerBlockOptin",
            "totalMemory",
            "memoryBandwidth",
            "clockRate",
        ]
        if "id" in have:
            sql = ", ".join(f'"{c}"' if c in have else "NULL" for c in wanted)
            for values in db.small(f"SELECT {sql} FROM TARGET_INFO_GPU"):
                # Cells of another type than nsys writes (a damaged export) are left out.
                g = {
                    k: v if (isinstance(v, str) if k == "name" else _is_number(v)) else None
                    for k, v in zip(wanted, values, strict=True)
                }
                gpu = device_id(g["id"])
                if gpu is None:
                    continue
                warps, warp = g["maxWarpsPerSm"], g["threadsPerWarp"]
                rows[gpu] = {
                    "id": gpu,
                    "name": g["name"],
                    "vendor": "nvidia",
                    "sm_count": g["smCount"],
                    "compute_major": g["computeMajor"],
                    "compute_minor": g["computeMinor"],
                    "warp_size": warp,
                    "max_threads_per_sm": warps * warp if warps and warp else None,
                    "max_threads_per_block": g["maxThreadsPerBlock"],
                    "max_blocks_per_sm": g["maxBlocksPerSm"],
                    "regs_per_sm": g["maxRegistersPerSm"],
                    "regs_per_block": g["maxRegistersPerBlock"],
                    "shared_mem_per_sm": g["maxShmemPerSm"],
                    "shared_mem_per_block": g["maxShmemPerBlock"],
                    "shared_mem_per_block_optin": g["maxShmemPerBlockOptin"],
                    "total_memory_bytes": g["totalMemory"],
                    "memory_bandwidth_bytes_per_s": float(g["memoryBandwidth"])
                    if g["memoryBandwidth"]
                    else None,
                    "clock_rate_khz": int(g["clockRate"]) // 1000 if g["clockRate"] else None,
                }
    for key, row in cuda_device_rows(db, rows, gpus).items():
        rows[key] = row
    for dev in events.unique("device"):
        rows.setdefault(int(dev), {"id": int(dev), "vendor": "nvidia"})
    return build_devices([rows[k] for k in sorted(rows)])


def cuda_device_rows(
    db: Database, gpu_rows: dict[int, dict[str, Any]], gpus: dict[tuple[int, int], int]
) -> dict[int, dict[str, Any]]:
    """Device rows from TARGET_INFO_CUDA_DEVICE, keyed as the events' devices are: the GPU ``gpus`` maps the
    (pid, cudaId) to, else the CUDA id as exported. A row takes the properties of the physical GPU its CUDA
    devices run on (``gpu_rows``, TARGET_INFO_GPU by id) and their own SM count (``numMultiprocessors``, what
    cudaGetDeviceProperties gave the process): a MIG slice has the SMs of its slice (14 of an A100's 108 for a
    1g.5gb), and judged against the whole GPU's its kernels read as under-filled. Where the CUDA devices of one
    key disagree (GPU or SM count), that property is not taken from them."""
    table = "TARGET_INFO_CUDA_DEVICE"
    if table not in db.tables or not {"cudaId", "numMultiprocessors"} <= set(db.columns(table)):
        return {}
    have = set(db.columns(table))
    gpu_col, pid_col = ("gpuId" if "gpuId" in have else "NULL"), ("pid" if "pid" in have else "NULL")
    parents: dict[int, set[Any]] = {}
    counts: dict[int, set[Any]] = {}
    for gpu_id, cuda_id, pid, sms in db.small(
        f"SELECT DISTINCT {gpu_col}, cudaId, {pid_col}, numMultiprocessors FROM {table}"
    ):
        cuda = device_id(cuda_id)
        if cuda is None:
            continue
        key = gpus.get((pid, cuda), cuda) if device_id(pid) is not None else cuda
        parents.setdefault(key, set()).add(device_id(gpu_id))
        counts.setdefault(key, set()).add(sms if _is_number(sms) and sms > 0 else None)
    rows: dict[int, dict[str, Any]] = {}
    for key in parents:
        (parent,) = parents[key] if len(parents[key]) == 1 else (None,)
        # the physical GPU's properties (where the table names none, or two: the GPU of the device's own id)
        row = dict(gpu_rows.get(parent if parent is not None else key, {"vendor": "nvidia"}), id=key)
        (sms,) = counts[key] if len(counts[key]) == 1 else (None,)
        if sms is not None:
            row["sm_count"] = sms
        rows[key] = row
    return rows


def detect_framework(
    strings: Strings,
    row_counts: dict[str, int],
    nvtx_names: pa.Array | None,
    short_names: dict[str, str],
    threads: dict[str, str],
) -> str:
    """ "pytorch" when NVTX ranges, kernel names or thread names show PyTorch, else "cuda"."""
    if nvtx_names is not None and len(nvtx_names):
        if pc.any(pc.starts_with(nvtx_names, "aten::")).as_py():
            return "pytorch"
    kernel_names = list(short_names)
    if row_counts.get(TABLE_KERNEL) and len(strings.values):
        if pc.any(pc.match_substring(strings.values, "at::native::")).as_py() or any(
            "at::native::" in k for k in kernel_names
        ):
            return "pytorch"
    for name in threads.values():
        if name.startswith("pt_") or "torch" in name.lower():
            return "pytorch"
    return "cuda"


def thread_names(db: Database, strings: Strings) -> dict[str, str]:
    """ThreadNames as "pid:tid" -> name."""
    threads: dict[str, str] = {}
    if "ThreadNames" in db.tables and {"nameId", "globalTid"} <= set(db.columns("ThreadNames")):
        for name_id, gtid in db.small("SELECT nameId, globalTid FROM ThreadNames"):
            name = strings.get(name_id)
            if isinstance(gtid, int) and name:
                threads[f"{(gtid >> 24) & MASK24}:{gtid & MASK24}"] = name
    return threads


def extra(
    db: Database,
    meta: dict[str, str],
    row_counts: dict[str, int],
    events: EventStore,
    threads: dict[str, str],
    nvtx_domains: dict[int, str],
    short_names: dict[str, str],
) -> dict[str, Any]:
    """``metadata.extra``: export metadata, thread, process and domain names, tables read, nsys's drops."""
    extra: dict[str, Any] = {
        "nsys_export": {
            k: v
            for k, v in meta.items()
            if k.startswith("EXPORT_") and "PATH" not in k and k not in ("EXPORT_USER", "EXPORT_HOST")
        },
        "thread_names": threads,
        "nvtx_domains": {str(k): v for k, v in nvtx_domains.items()},
        "kernel_short_names": short_names,
        "tables_read": {name: n for name, n in sorted(row_counts.items())},
    }
    if "PROCESSES" in db.tables and {"globalPid", "pid", "name"} <= set(db.columns("PROCESSES")):
        pids = set(events.unique("pid"))
        extra["process_names"] = {
            str(pid): name
            for _, pid, name in db.small("SELECT globalPid, pid, name FROM PROCESSES")
            if pid in pids and name
        }
    if "TARGET_INFO_SESSION_START_TIME" in db.tables and "utcEpochNs" in db.columns(
        "TARGET_INFO_SESSION_START_TIME"
    ):
        row = db.small("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        if row and isinstance(row[0][0], int):
            extra["session_start_utc_epoch_ns"] = row[0][0]
    if "DIAGNOSTIC_EVENT" in db.tables and "text" in db.columns("DIAGNOSTIC_EVENT"):
        # nsys's own diagnostics (tens of rows): what it says it dropped or lost.
        drops = profiler_drops(text for (text,) in db.small("SELECT text FROM DIAGNOSTIC_EVENT"))
        if drops:
            extra["profiler_drops"] = drops
    return extra
