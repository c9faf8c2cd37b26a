"""The Nsight Systems reader: one export -> one :class:`~tracelens.trace.Trace`.

Checks the export (:mod:`.metadata`), loads its strings (:mod:`.strings`), fetches the event tables
(:mod:`.queries`, :mod:`.fetch`), maps each to rows (:mod:`.mappers`, :mod:`.nvtx`), assembles one event store
(:mod:`.assembly`) and adds the devices, framework and metadata (:mod:`.metadata`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from ...trace import MAX_TIME_NS, OSRT, OVERHEAD, Trace, TraceMetadata
from .assembly import assemble
from .columns import Part, drop_rows_without_device, drop_rows_without_start, drop_untimed_rows
from .contexts import green_context_sms
from .database import Database
from .fetch import Builder, fetch_parts
from .mappers import (
    graph_trace_rows,
    host_named_rows,
    kernel_rows,
    memcpy_rows,
    memset_rows,
    runtime_rows,
    sync_rows,
)
from .metadata import (
    check_is_nsys,
    detect_framework,
    devices,
    export_metadata,
    extra,
    schema_version_warning,
    thread_names,
)
from .nvtx import nvtx_rows
from .processes import (
    cuda_device_gpus,
    key_correlation_ids_by_process,
    map_devices_to_gpus,
    ordinals_shared_by_processes,
    processes_without_gpu_rows,
    sync_devices_from_ops,
)
from .queries import (
    GPU_TABLES,
    TABLE_CUPTI_OVERHEAD,
    TABLE_GRAPH_TRACE,
    TABLE_KERNEL,
    TABLE_MEMCPY,
    TABLE_MEMSET,
    TABLE_NVTX,
    TABLE_OSRT,
    TABLE_PROFILER_OVERHEAD,
    TABLE_RUNTIME,
    TABLE_SYNC,
    payload_schema_entries,
    table_queries,
)
from .rep import export_report, newer_report_warning
from .strings import Strings


def read(path: Path, fmt: str = "nsys", **_: Any) -> Trace:
    """Read an Nsight Systems SQLite export (or a ``.nsys-rep``, exported once into a cache)."""
    path = Path(path)
    if fmt == "nsys-rep" or path.name.endswith((".nsys-rep", ".qdrep")):
        report = path
        path = export_report(report)
        trace = NsysReader(path).read()
        trace.metadata.extra["nsys_report"] = str(report)
        return trace
    return NsysReader(path).read()


class NsysReader:
    """Reads one export into a :class:`Trace`. Use :func:`read`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.warnings: list[str] = []
        # What the tables say besides their rows: kernel short names, NVTX domains and names.
        self._short_names: dict[str, str] = {}
        self._nvtx_domains: dict[int, str] = {}
        self._nvtx_names: pa.Array | None = None
        self._newer_schema = ""  # the export's schema version where it is newer than any known

    def read(self) -> Trace:
        db = Database(self.path)
        try:
            return self._read(db)
        except (pa.ArrowException, OverflowError) as err:
            # SQLite types each cell, not each column: a damaged or hand-edited export can hold text or
            # out-of-range numbers where nsys writes integers, which the Arrow conversion refuses; or a newer
            # schema changed a column's type, which the one line then names.
            schema = (
                f" (export schema {self._newer_schema}, newer than any it knows)"
                if self._newer_schema
                else ""
            )
            raise InputError(
                f"a table holds values of an unexpected type or size{schema} ({err})", path=self.path
            ) from None
        finally:
            db.close()

    def queries(self) -> dict[str, tuple[str, list[str]]]:
        """The SELECTs :meth:`read` runs on this export, per table: ``{table: (sql, column names)}``
        (tables the export lacks are left out). For benchmarks that time the queries alone."""
        db = Database(self.path)
        try:
            return self._queries(db)
        finally:
            db.close()

    def _queries(self, db: Database) -> dict[str, tuple[str, list[str]]]:
        self._payload_entries = payload_schema_entries(db)
        return table_queries(db, self._payload_entries, self.warnings)

    def _read(self, db: Database) -> Trace:
        meta = export_metadata(db)
        check_is_nsys(db, meta, self.path)
        said: list[str] = []  # warnings for stderr too (UserWarning), given once the read succeeded
        newer = schema_version_warning(meta)
        if newer:
            self.warnings.append(newer)
            self._newer_schema = meta.get("EXPORT_SCHEMA_VERSION", "") or meta.get(
                "EXPORT_SCHEMA_VERSION_MAJOR", ""
            )
        stale = newer_report_warning(self.path)
        if stale:
            self.warnings.append(stale)
            said.append(stale)
        strings = Strings.load(db)

        queries = self._queries(db)
        self._check_gpu_side_readable(db, queries, self._newer_schema)
        parts, row_counts = fetch_parts(db, queries, self._builders(db, strings))

        if not any(p.n for p in parts):  # as the other readers: a trace with no timed event is bad input
            raise InputError(
                "the export holds no event tracelens reads (no CUDA activity or API, NVTX, OS runtime or "
                "profiler-overhead rows): record with nsys profile -t cuda,nvtx",
                path=self.path,
            )
        if not any(row_counts.get(t) for t in GPU_TABLES):
            self.warnings.append(
                "no GPU activity: the export has no CUDA kernel, memcpy or memset rows "
                "(was the CUDA trace enabled?)"
            )
        if row_counts.get(TABLE_GRAPH_TRACE):
            self.warnings.append(
                f"{row_counts[TABLE_GRAPH_TRACE]:,} CUDA graph executions recorded whole (nsys "
                "--cuda-graph-trace=graph): each is one GPU op spanning its kernels and the gaps between them; "
                "per-kernel figures need --cuda-graph-trace=node"
            )
        missing = strings.missing_summary()
        if missing:  # one warning per file, however many tables and ids
            self.warnings.append(missing)
            said.append(missing)

        deviceless = drop_rows_without_device(parts)
        if deviceless:  # nsys writes every GPU row's device: a damaged or hand-edited export
            lost = (
                f"{deviceless:,} GPU row(s) have no device (deviceId null, or a value that is no CUDA device "
                "ordinal, such as CUPTI's invalid id 4294967295): left out of the analysis"
            )
            self.warnings.append(lost)
            said.append(lost)
        startless = drop_rows_without_start(parts)
        if startless:  # nsys writes every start: a damaged or hand-edited export
            lost = f"{startless:,} row(s) have no start time (start null): left out of the analysis"
            self.warnings.append(lost)
            said.append(lost)
        untimed = drop_untimed_rows(parts)
        if (
            untimed
        ):  # CUPTI's "no timestamp collected": kept, the GPU idled from the session's start to its first op
            lost = f"{untimed:,} GPU row(s) carry no time (start and end 0: CUPTI collected no timestamps): left out"
            self.warnings.append(lost)
            said.append(lost)
        gpuless = processes_without_gpu_rows(parts)
        if gpuless:  # the figures below cover the other processes' GPUs only: say so
            named = ", ".join(f"{pid} ({n:,} calls)" for pid, n in list(gpuless.items())[:5])
            more = f" and {len(gpuless) - 5} more" if len(gpuless) > 5 else ""
            self.warnings.append(
                f"process(es) {named}{more} made GPU launch, copy or memset calls and have no GPU row in the "
                "export: their GPU side was not recorded; the GPU figures cover the other processes only"
            )
        endless = sum(p.columns["end_ns"].null_count for p in parts if not p.host)
        if endless:  # nsys writes every GPU row's end: a damaged or hand-edited export
            self.warnings.append(f"{endless:,} GPU row(s) have no end: read as zero-length")
        backwards = sum(
            pc.sum(pc.less(p.columns["end_ns"], p.columns["start_ns"])).as_py() or 0
            for p in parts
            if not p.host
        )
        if backwards:  # the assembly clamps an end to its start: said, not silent (kernel time, busy time)
            self.warnings.append(f"{backwards:,} GPU row(s) end before they start: read as zero-length")
        # CUPTI numbers each process's calls from 1: ids made unique per process before anything joins on them
        key_correlation_ids_by_process(parts)
        # deviceId is the CUDA ordinal inside each process: each rank's "device 0" is the GPU nsys maps it to
        gpus = cuda_device_gpus(db)
        shared = ordinals_shared_by_processes(parts, gpus)
        if shared:  # one device as read: say that it may be several GPUs
            named = "; ".join(
                f"CUDA device {d}: processes {', '.join(map(str, p))}" for d, p in shared.items()
            )
            self.warnings.append(
                f"several processes run GPU ops on one CUDA device number and the export does not say which GPU "
                f"each is (no TARGET_INFO_CUDA_DEVICE row): {named}. Each such number is read as one GPU: if each "
                "process had a GPU of its own (CUDA_VISIBLE_DEVICES per rank), the figures merge those GPUs"
            )
        map_devices_to_gpus(parts, gpus)
        # CUPTI's synchronization record has no device (nsys writes 0): its stream's or process's GPU's
        sync_devices_from_ops(parts)
        origin, events = assemble(parts)
        del parts
        # the largest magnitude from the extremes: no absolute copy of the column
        end = events.numpy("end_ns") if events.num_rows else None
        if end is not None and (end.max() >= MAX_TIME_NS or end.min() <= -MAX_TIME_NS):
            raise InputError(
                f"timestamps span more than 2^62 ns ({MAX_TIME_NS / 3.15576e16:.0f} years): a damaged export",
                path=self.path,
            )
        del end
        threads = thread_names(db, strings)
        metadata = TraceMetadata(
            source_format="nsys",
            source_path=str(self.path),
            producer=meta.get("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            producer_version=meta.get("EXPORT_PRODUCT_VERSION", ""),
            format_version=meta.get("EXPORT_SCHEMA_VERSION", ""),
            framework=detect_framework(strings, row_counts, self._nvtx_names, self._short_names, threads),
            time_origin_ns=origin,
            clock="nsys-session",
            warnings=self.warnings,
            extra=extra(db, meta, row_counts, events, threads, self._nvtx_domains, self._short_names),
        )
        # Said on stderr once the file is read: a file refused later gets its one line, not warnings before it.
        for text in ([newer] if newer else []) + said:
            warnings.warn(f"{self.path}: {text}", UserWarning, stacklevel=3)
        return Trace(events=events, devices=devices(db, events, gpus), metadata=metadata)

    def _check_gpu_side_readable(
        self, db: Database, queries: dict[str, tuple[str, list[str]]], newer_schema: str
    ) -> None:
        """Raise InputError where GPU tables hold rows but none can be read (each lacks a column the reader
        needs: a newer schema, a damaged export). Skipped, they left "no GPU activity", and the diagnosis told
        the user to record a GPU side that is there."""

        def has_rows(table: str) -> bool:
            return table in db.tables and bool(db.small(f'SELECT 1 FROM "{table}" LIMIT 1'))

        skipped = [t for t in GPU_TABLES if t not in queries and has_rows(t)]
        if not skipped or any(has_rows(t) for t in GPU_TABLES if t in queries):
            return  # nothing skipped, or GPU rows to read beside the skipped tables (each named in a warning)
        reasons = [w.removesuffix("; table skipped") for w in self.warnings if w.startswith(tuple(skipped))]
        schema = f" (export schema {newer_schema}, newer than any it knows)" if newer_schema else ""
        raise InputError(
            f"the GPU tables hold rows this tracelens cannot read{schema}: {'; '.join(reasons)}",
            path=self.path,
        )

    def _builders(self, db: Database, strings: Strings) -> dict[str, Builder]:
        """Per table, the function that turns its fetched rows into a part (keeping what else they say)."""

        green = green_context_sms(db)

        def kernels(box: list[pa.Table]) -> Part:
            part, self._short_names = kernel_rows(box.pop(), strings, green)
            return part

        def nvtx(box: list[pa.Table]) -> Part | None:
            part, self._nvtx_domains, self._nvtx_names = nvtx_rows(box, strings, self._payload_entries)
            return part

        return {
            TABLE_KERNEL: kernels,
            TABLE_MEMCPY: lambda box: memcpy_rows(box.pop(), db),
            TABLE_MEMSET: lambda box: memset_rows(box.pop(), db),
            TABLE_SYNC: lambda box: sync_rows(box.pop(), db),
            TABLE_GRAPH_TRACE: lambda box: graph_trace_rows(box.pop()),
            TABLE_RUNTIME: lambda box: runtime_rows(box.pop(), strings),
            TABLE_NVTX: nvtx,
            TABLE_OSRT: lambda box: host_named_rows(box.pop(), strings, OSRT),
            TABLE_PROFILER_OVERHEAD: lambda box: host_named_rows(box.pop(), strings, OVERHEAD),
            TABLE_CUPTI_OVERHEAD: lambda box: host_named_rows(box.pop(), strings, OVERHEAD),
        }
