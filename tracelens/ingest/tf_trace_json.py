"""Legacy TensorFlow profiler trace: ``<host>.trace.json.gz`` written by TF 2.2-2.10 next to the xplane.

Chrome trace JSON: metadata events (``"ph": "M"``) name each process (``process_name``: ``/host:CPU``,
``/device:GPU:N ...``) and thread (``thread_name``: a host thread, or a GPU line such as ``Stream #7(...)``);
complete events (``"ph": "X"``) carry ``ts`` and ``dur`` in microseconds (floats) and the XStats as ``args``.
The mapping follows the xplane reader (``docs/formats/xplane.md``): GPU activity only from ``Stream #`` threads
of ``/device:GPU:N`` processes, kernel details from ``args.kernel_details``, memcpy size from
``args.memcpy_details``, correlation ids from ``args.correlation_id``, steps from ``args.step_num`` on the host.
TF 1.x RunMetadata timelines (``timeline.json``: a process per device and stream, ``<device> Compute``) are read
too (``_TF1_GPU``, ``_TF1_HOST``; docs/formats/xplane.md).

Times: ``start_ns = round(ts * 1000)``, ``end_ns = round((ts + dur) * 1000)``. Timestamps of 1e15 µs or more are
taken as Unix time (``clock`` "unix"), smaller ones as profile-relative (``clock`` "xplane").
"""

from __future__ import annotations

import gzip
import re
import zlib
from codecs import BOM_UTF8
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import InputError
from ..event_names import step_number, strip_api_suffix
from ..trace import (
    ANNOTATION,
    CPU_OP,
    DRIVER,
    KERNEL,
    MEMCPY,
    MEMSET,
    STEP,
    Trace,
    TraceMetadata,
    build_devices,
    build_store,
)
from ..values import int_or_none
from .kineto.stream_order import cut_impossible_ends
from .tf_common import (
    COPY_KIND_LABELS,
    classify_host_name,
    copy_kind_code,
    detect_framework,
    discover,
    extract_int,
    host_unique_ids,
    kernel_columns,
)

_GPU_PROCESS = re.compile(r"^/device:GPU:(\d+)")
_STREAM = re.compile(r"^Stream #(\d+)")
# TF 1.x RunMetadata timelines (tensorflow.python.client.timeline, saved as "timeline.json"): one process per device
# and stream, each named "<device> Compute". "/device:GPU:0/stream:7 Compute" holds the GPU ops of stream 7,
# "/device:GPU:0/memcpy Compute" the copies; "/device:GPU:0/stream:all Compute" every stream's ops again (not
# read); "/job:localhost/replica:0/task:0/device:GPU:0 Compute" (and "device:CPU:0") the host threads that ran
# each op (a GPU op's launch side, the CPU ops), on the thread its tid names.
_TF1_GPU = re.compile(
    r"^/(?:job:[^/]+/replica:\d+/task:\d+/)?device:GPU:(\d+)/(?:stream:(\d+)|(memcpy)) Compute$"
)
_TF1_HOST = re.compile(r"^/job:[^/]+/replica:\d+/task:\d+/device:(?:CPU|GPU):\d+ Compute$")
# The copies of a TF1 timeline record no stream: each direction on a stream of its own, numbered past any
# CUDA stream id (copies of one direction run in order; the two directions may overlap).
_TF1_COPY_STREAM = 1 << 30
_UNIX_US = 1e15


def _load_json(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as plain:
            gzipped = plain.read(2) == b"\x1f\x8b"  # a trace JSON saved uncompressed is read as it is
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as fh:
            data = msgspec.json.decode(fh.read().removeprefix(BOM_UTF8))  # a byte-order mark: ignored
    except (OSError, EOFError, zlib.error) as err:
        raise InputError(f"not a readable gzip file ({err})", path=path) from None
    except msgspec.DecodeError as err:
        raise InputError(f"truncated or invalid JSON ({err})", path=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError("not a TensorFlow trace.json (no traceEvents list)", path=path)
    return data


def _frame(path: Path, host: int) -> tuple[pd.DataFrame, dict[int, str]]:
    data = _load_json(path)
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    complete = []
    for event in data["traceEvents"]:  # legacy files are small (the trace viewer capped them at 1M events)
        if not isinstance(event, dict):
            continue
        phase = event.get("ph")
        if phase == "M":
            name = (event.get("args") or {}).get("name", "")
            if event.get("name") == "process_name":
                processes[event.get("pid")] = str(name)
            elif event.get("name") == "thread_name":
                threads[(event.get("pid"), event.get("tid"))] = str(name)
        elif phase == "X" and "ts" in event:
            complete.append(event)
    rows = []
    gpu_names: dict[int, str] = {}
    for event in complete:
        process = processes.get(event.get("pid"), "")
        thread = threads.get((event.get("pid"), event.get("tid")), "")
        args = event.get("args") or {}
        gpu = _GPU_PROCESS.match(process)
        tf1 = _TF1_GPU.match(process)
        stream_id: int | None = None
        if tf1:
            device = int(tf1.group(1))
            gpu_names.setdefault(device, f"/device:GPU:{device}")
            if tf1.group(2) is not None:
                stream_id = int(tf1.group(2))
            else:
                stream_id = _TF1_COPY_STREAM + max(copy_kind_code(str(event.get("name", ""))), 0)
        elif gpu:
            stream = _STREAM.match(thread)
            if not stream:
                continue  # derived lines (TensorFlow Ops, XLA Ops, Steps, ...)
            device = int(gpu.group(1))
            stream_id = int(stream.group(1))
            gpu_names.setdefault(device, process)
        elif process.startswith("/host:CPU") or _TF1_HOST.match(process):
            device = None
        else:
            continue
        try:
            ts = float(event["ts"])
            dur = float(event.get("dur", 0) or 0)
        except (TypeError, ValueError):
            raise InputError(f"event with a non-numeric ts/dur: {str(event)[:80]}", path=path) from None
        rows.append(
            {
                "name": str(event.get("name", "")),
                "ts": ts,
                "dur": dur,
                "device": device,
                "stream": stream_id,
                "tid": None if device is not None else int_or_none(event.get("tid")),
                "pid": host,
                "correlation_id": int_or_none(args.get("correlation_id")),
                "step_num": int_or_none(args.get("step_num")),
                "kernel_details": args.get("kernel_details"),
                "copy_details": args.get("memcpy_details") or args.get("memset_details"),
                "tracelens_range": args.get("tracelens")
                is not None,  # a tracelens.nvtx range (stat tracelens=1)
            }
        )
    return pd.DataFrame(rows), gpu_names


def read_files(files: Sequence[Path], source: Path, run: str | None = None) -> Trace:
    """Read the ``trace.json.gz`` of each host of a run (pid = host ordinal, devices offset per host).

    As the xplane reader: a file of a several-file run that cannot be read is left out and named
    (``metadata.warnings``, ``metadata.extra["unread_host_files"]``); a lone file or no readable file raises; a
    file with the bytes of an earlier one (a link or a copy) is read once, with a warning."""
    frames, device_rows = [], []
    offset = 0
    host = 0
    unread: list[tuple[Path, InputError]] = []
    seen: dict[bytes, str] = {}  # a file's bytes -> its name: a link or a copy of a host file is read once
    duplicates: list[str] = []
    for path in files:
        try:
            data = path.read_bytes() if len(files) > 1 else b""
        except OSError:
            data = b""  # the read below says why
        if data and data in seen:
            duplicates.append(f"{path.name}: the same profile as {seen[data]} (a link or a copy): read once")
            continue
        if data:
            seen[data] = path.name
        try:
            frame, gpu_names = _frame(path, host)
        except InputError as err:
            if len(files) == 1:
                raise
            unread.append((path, err))
            continue
        host += 1
        if not frame.empty:
            frame["device"] = frame["device"].map(lambda d, o=offset: None if pd.isna(d) else int(d) + o)
            frames.append(frame)
        for index, name in sorted(gpu_names.items()):
            device_rows.append({"id": index + offset, "name": name, "vendor": None})
        offset += (max(gpu_names) + 1) if gpu_names else 0
    if not host:
        shown = "; ".join(f"{f.name}: {err.message}" for f, err in unread[:5])
        more = f"; and {len(unread) - 5} more" if len(unread) > 5 else ""
        raise InputError(f"no host file of the run could be read: {shown}{more}", path=source)
    if not frames:
        raise InputError("trace.json holds no host or GPU events", path=source)
    df = pd.concat(frames, ignore_index=True)
    if host > 1:  # per-process correlation ids: unique over the run's hosts (tf_common.host_unique_ids)
        present = df["correlation_id"].notna().to_numpy()
        ids = np.zeros(len(df), np.int64)
        ids[present] = df["correlation_id"][present].to_numpy(np.int64)
        unique = host_unique_ids(ids, present, df["pid"].to_numpy(np.int64))
        df["correlation_id"] = pd.Series(unique, dtype="Int64", index=df.index).mask(~present)
    # the GPU ops come from CUPTI records as Kineto's do: one outlasting later ops of its stream is cut as there
    trace = cut_impossible_ends(_to_trace(df, device_rows, source, run))
    trace.metadata.warnings.extend(duplicates)
    if unread:
        total = host + len(unread)
        trace.metadata.warnings.extend(
            f"{f.name}: not read ({err.message}): this host is not in any figure ({len(unread)} of {total} "
            "host files)"
            for f, err in unread
        )
        trace.metadata.extra["unread_host_files"] = [{"file": str(f), "error": e.message} for f, e in unread]
        trace.metadata.extra["host_files"] = total
    return trace


def _to_trace(df: pd.DataFrame, device_rows: list[dict[str, Any]], source: Path, run: str | None) -> Trace:
    is_gpu = df["device"].notna().to_numpy()
    names = df["name"].astype(str)
    upper = names.str.upper()
    kind = np.where(
        is_gpu,
        np.where(
            upper.str.startswith("MEMSET"),
            MEMSET,
            np.where(upper.str.startswith("MEMCPY") | df["copy_details"].notna(), MEMCPY, KERNEL),
        ),
        names.map(classify_host_name).to_numpy(dtype=object),
    )
    host_corr = ~is_gpu & df["correlation_id"].notna().to_numpy() & (kind == CPU_OP)
    kind = np.where(host_corr, DRIVER, kind)
    ranges = ~is_gpu & df["tracelens_range"].to_numpy(bool) & (kind == CPU_OP)
    kind = np.where(ranges, ANNOTATION, kind)
    step = df["step_num"].to_numpy(dtype=float, copy=True)
    # A step marker by name (tracelens/step#N, ProfilerStep#N) without a step_num stat: N from the name, as
    # the xplane reader does (only the few marker rows are looked at).
    named = (kind == STEP) & np.isnan(step)
    step[named] = [step_number(name) for name in names[named]]
    kind = np.where(~is_gpu & ~np.isnan(step), STEP, kind)

    start_us = df["ts"].to_numpy(float)
    end_us = start_us + df["dur"].to_numpy(float)
    clock = "unix" if len(start_us) and np.nanmin(start_us) >= _UNIX_US else "xplane"
    start_ns = np.rint(start_us * 1000).astype(np.int64)
    end_ns = np.rint(end_us * 1000).astype(np.int64)

    # one step row per (host, step) like the xplane reader
    step_rows = kind == STEP
    steps = pd.DataFrame(
        {
            "pid": df["pid"][step_rows],
            "step": step[step_rows].astype(np.int64),
            "start": start_ns[step_rows],
            "end": end_ns[step_rows],
        }
    )
    steps = (
        steps.groupby(["pid", "step"], sort=True)
        .agg(start=("start", "min"), end=("end", "max"))
        .reset_index()
    )
    keep = ~step_rows
    origin = int(
        min(
            start_ns[keep].min(initial=np.iinfo(np.int64).max),
            steps["start"].min() if len(steps) else np.iinfo(np.int64).max,
        )
    )

    details = _strings(df["kernel_details"])
    kernel_cols = kernel_columns(details)
    copy_details = _strings(df["copy_details"])
    size = extract_int(copy_details, r"(?:^|\s)size:(?P<v>\d+)")
    copy_kind = [copy_kind_code(n) for n in names]
    copy_kind_names = [
        COPY_KIND_LABELS[c] if c >= 0 and k == MEMCPY else None for c, k in zip(copy_kind, kind, strict=True)
    ]

    columns: dict[str, Any] = {
        "kind": list(kind[keep]) + [STEP] * len(steps),
        "name": list(names[keep].map(strip_api_suffix)) + [f"step#{s}" for s in steps["step"]],
        "start_ns": np.concatenate([start_ns[keep], steps["start"].to_numpy(np.int64)]) - origin,
        "end_ns": np.concatenate([end_ns[keep], steps["end"].to_numpy(np.int64)]) - origin,
        "pid": np.concatenate([df["pid"].to_numpy(np.int64)[keep], steps["pid"].to_numpy(np.int64)]),
        "step": [None] * int(keep.sum()) + steps["step"].tolist(),
    }
    n_steps = len(steps)

    def with_steps(values: Any) -> list[Any]:
        array = np.empty(len(keep), dtype=object)
        array[:] = list(values)  # an object array keeps None as None (pandas would make it NaN)
        return list(array[keep]) + [None] * n_steps

    for col in ("device", "stream", "tid", "correlation_id"):
        columns[col] = [None if pd.isna(v) else int(v) for v in with_steps(df[col].to_numpy(object))]
    is_kernel = kind == KERNEL
    for col, values in kernel_cols.items():
        values = np.where(is_kernel, values, np.nan)
        columns[col] = np.concatenate([values[keep], np.full(n_steps, np.nan)])
    columns["bytes"] = np.concatenate(
        [np.where(np.isin(kind, (MEMCPY, MEMSET)), size, np.nan)[keep], np.full(n_steps, np.nan)]
    )
    columns["copy_kind"] = with_steps(copy_kind_names)
    framework = detect_framework(names[~is_gpu].unique())
    metadata = TraceMetadata(
        source_format="xplane",
        source_path=str(source),
        producer="TensorFlow Profiler (trace.json.gz)",
        format_version="chrome-trace-json",
        framework=framework,
        time_origin_ns=origin,
        clock=clock,
        extra={"run": run, "steps_from": "host step markers" if n_steps else None},
    )
    return Trace(events=build_store(columns), devices=build_devices(device_rows), metadata=metadata)


def _strings(values: pd.Series) -> pa.Array:
    return pa.array([v if isinstance(v, str) else None for v in values], pa.string())


def read(path: Path, fmt: str = "tf-trace-json", run: str | None = None, **_: Any) -> Trace:
    """Read one ``trace.json.gz`` (or a run/logdir holding them: see :func:`.tf_common.discover`)."""
    files, run_name = discover(Path(path), run)
    return read_files(files, source=Path(path), run=run_name)
