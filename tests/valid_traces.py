"""Generators of VALID traces, for the property test (tests/test_valid_traces.py).

A :class:`Scenario` says what a profiler recorded, in one format-free form: host threads running framework
ops, launch calls and annotations, and the GPU work those launches queued (kernels, copies, memsets, CUDA-graph
replays), over any combination real traces show (no framework ops, kernels without launches, launches without
kernels, copies or memsets only, graph launches (a few kernels or dozens, on one stream or several), several
devices and streams, kernels starting at one instant on several streams, GPU work before the host's first record
or after its last, zero-length ops and ranges, 0-byte copies, a device with only memsets, stream, event and
device synchronizations with or without their GPU-side records, event waits, correlation ids near 2**31, 2**32
and above, colliding between two processes, steps or none, shapes with and without a FLOP model, modules with
and without launches, NCCL only, ROCm names, NVTX only). :func:`scenarios`
is the hypothesis strategy; :func:`write_kineto`, :func:`write_nsys` and :func:`write_xplane` write one
scenario in each format, built here by hand (JSON, SQL, protobuf wire via ``test_xplane_helpers``),
independently of the readers.

Times are integer microseconds from 0; every GPU op lies after its launch call, ops on one stream never
overlap, host ops on one thread nest or are disjoint (as profilers record them).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import test_xplane_helpers as pb
from hypothesis import strategies as st

KERNEL, MEMCPY, MEMSET = "kernel", "memcpy", "memset"

# Op names: with a FLOP formula (and the shapes it reads), without one, and one no model knows.
MODELLED_OPS = {
    "aten::mm": [[64, 128], [128, 32]],
    "aten::addmm": [[32], [64, 128], [128, 32]],
    "aten::conv2d": [[8, 3, 32, 32], [16, 3, 3, 3], [16]],
    "aten::conv1d": [[3, 100], [8, 3, 5], [8]],
}  # unbatched input (torch >= 1.11)
UNMODELLED_OPS = {
    "aten::relu": [[32, 1024]],
    "aten::add": [[16, 16], [16, 16]],
    "aten::copy_": [[4096], [4096]],
}
CUDA_KERNELS = [
    "ampere_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4>(float*)",
    "triton_poi_fused_add_0",
    "void cudnn::conv2d_fprop<float>(Params)",
]
ROCM_KERNELS = [
    "Cijk_Ailk_Bljk_SB_MT64x64x16",
    "void at::native::elementwise_kernel<128, 4>(int)",
    "__amd_rocclr_fillBufferAligned",
]
NCCL_KERNELS = [
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t",
    "ncclDevKernel_Generic",
]


@dataclass
class GpuOp:
    kind: str  # KERNEL, MEMCPY, MEMSET
    name: str
    device: int
    stream: int
    start: int
    dur: int
    correlation: int | None  # None: no launch recorded for it
    bytes: int = 0
    copy: str = "HtoD"  # MEMCPY: HtoD, DtoH, DtoD
    graph: bool = False
    process: int = 0  # 1: launched by the second process (Nsight: its globalPid)


@dataclass
class HostEvent:
    kind: str  # "op", "launch", "annotation", "module", "step", "sync"
    name: str
    tid: int
    start: int
    dur: int
    correlation: int | None = None
    dims: list[Any] | None = None
    flops: int | None = None


@dataclass
class GpuSync:
    """A GPU-side record of a synchronization (Kineto cuda_sync, Nsight SYNCHRONIZATION), tied to its host call
    by the correlation id."""

    kind: str  # "stream_sync", "event_sync", "stream_wait_event", "context_sync"
    device: int
    stream: int
    start: int
    dur: int
    correlation: int | None
    wait_on_stream: int | None = None  # stream_wait_event: the stream the event was recorded on
    record_correlation: int | None = None  # event_sync, stream_wait_event: the cudaEventRecord call's id
    process: int = 0  # 1: called by the second process


@dataclass
class Scenario:
    rocm: bool
    devices: list[int]
    device_props: bool
    # How the Kineto writer spells it: ac2g flow events or only correlation args; the oldest (2021)
    # categories and "stream N" thread ids (Nsight: a 2022 export, only the tables with rows); fractional-µs
    # (ns resolution) timestamps
    flows: bool = True
    old_format: bool = False
    fractional: bool = False
    # Kineto's side records: [memory] instant events, steps projected on the GPU (gpu_user_annotation),
    # cuda_sync rows on the GPU for each synchronize
    extras: bool = False
    # xplane: an "XLA Ops" line per device repeating each kernel as an HLO op, with a flops stat on some
    xla_ops: bool = False
    # Nsight: API names with their version suffix (cudaLaunchKernel_v7000), as exports from 2024 on write them
    versioned_names: bool = False
    # Kineto: absolute epoch timestamps (2021-2023 traces), the second thread in another process
    epoch: bool = False
    two_processes: bool = False
    host: list[HostEvent] = field(default_factory=list)
    gpu: list[GpuOp] = field(default_factory=list)
    syncs: list[GpuSync] = field(default_factory=list)

    @property
    def kernels(self) -> list[GpuOp]:
        return [g for g in self.gpu if g.kind == KERNEL]

    @property
    def empty(self) -> bool:
        return not self.host and not self.gpu


# ------------------------------------------------------------------------------------------ strategy

# What one unit of host work records; a scenario is a sequence of units on one or two threads.
UNITS = [
    "op_kernels",
    "op_no_launch",
    "graph",
    "copy",
    "memset",
    "kernel_no_launch",
    "launch_no_gpu",
    "nccl",
    "sync",
    "annotation",
    "gap",
    "concurrent",
    "stream_sync",
    "event_sync",
    "event_wait",
]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    rocm = draw(st.booleans())
    n_devices = draw(st.integers(1, 3))
    devices = sorted(draw(st.sets(st.integers(0, 7), min_size=n_devices, max_size=n_devices)))
    # 0: the legacy default stream; 2**32 - 1: a stream id at the top of Nsight's uint32 range
    streams = draw(
        st.lists(st.sampled_from([7, 13, 20, 21, 0, 2**32 - 1]), min_size=1, max_size=3, unique=True)
    )
    scen = Scenario(
        rocm=rocm,
        devices=devices,
        device_props=draw(st.booleans()),
        flows=draw(st.booleans()),
        old_format=draw(st.booleans()),
        fractional=draw(st.booleans()),
        extras=draw(st.booleans()),
        xla_ops=draw(st.booleans()),
        versioned_names=draw(st.booleans()),
        epoch=draw(st.booleans()),
        two_processes=draw(st.booleans()),
    )
    units = draw(st.lists(st.sampled_from(UNITS), min_size=0, max_size=14))
    with_steps = draw(st.booleans())
    with_modules = draw(st.booleans())
    # a thread id near Linux's pid_max (2**22)
    threads = draw(st.sampled_from([[101], [101, 102], [101, 4194000]]))
    launch_api = "hipLaunchKernel" if rocm else draw(st.sampled_from(["cudaLaunchKernel", "cuLaunchKernel"]))
    kernel_names = ROCM_KERNELS if rocm else CUDA_KERNELS
    # A device that only ever gets memsets (a buffer zeroed on a spare GPU), beside the devices doing the work.
    memset_devices = devices
    if len(devices) > 1 and draw(st.integers(0, 3)) == 0:
        memset_devices, devices = devices[-1:], devices[:-1]
    stream_free: dict[tuple[int, int], int] = {}
    # 600: the host's first record comes after GPU work already running (kernels with no launch)
    cursor = {tid: draw(st.sampled_from([10, 600])) for tid in threads}
    # Correlation ids from 1000, or near 2**31 / 2**32 (CUPTI's are uint32) / far above (xplane's are 64-bit).
    first_id = draw(st.sampled_from([1000, 2**31 - 8, 2**32 - 8, 2**40]))
    # Two processes number their launches each from the same start (CUPTI's ids are per process): ids collide.
    collide = scen.two_processes and len(threads) > 1 and draw(st.booleans())
    corr = {tid: [first_id] for tid in threads} if collide else dict.fromkeys(threads, [first_id])
    boundaries = [0]  # times between units on the first thread: where a step may end

    def gpu(
        kind: str, name: str, launched_at: int | None, on: tuple[int, int] | None = None, **kw: Any
    ) -> GpuOp:
        pool = memset_devices if kind == MEMSET else devices
        device, stream = on or (draw(st.sampled_from(pool)), draw(st.sampled_from(streams)))
        # -3: clocks skewed, the GPU op starts just before its launch call returns (seen in real traces)
        at = (launched_at if launched_at is not None else draw(st.integers(0, 400))) + draw(
            st.integers(-3, 30)
        )
        start = max(at, stream_free.get((device, stream), 0), 0)
        dur = draw(st.integers(0, 200))  # real traces hold zero-length GPU ops
        stream_free[(device, stream)] = start + dur
        op = GpuOp(kind, name, device, stream, start, dur, None, **kw)
        scen.gpu.append(op)
        return op

    def next_id(tid: int) -> int:
        counter = corr[tid]
        counter[0] += 1
        return counter[0]

    def launch(tid: int, t: int, api: str) -> tuple[int, int]:
        c = next_id(tid)
        dur = draw(st.integers(0, 8))
        # a launch whose correlation id the profiler lost: its GPU op has none either
        lost = draw(st.integers(0, 9)) == 0
        scen.host.append(HostEvent("launch", api, tid, t, dur, correlation=None if lost else c))
        return (None if lost else c), t + dur

    def copy_op(tid: int, t: int) -> int:
        direction = draw(st.sampled_from(["HtoD", "DtoH", "DtoD", "PtoP"]))
        blocking = draw(st.booleans())  # cudaMemcpy: the call returns after the copy
        api = "hipMemcpyWithStream" if rocm else ("cudaMemcpy" if blocking else "cudaMemcpyAsync")
        c, end = launch(tid, t, api)
        op = gpu(MEMCPY, f"Memcpy {direction}", t, bytes=draw(st.integers(0, 1 << 26)), copy=direction)
        op.correlation = c
        if blocking:
            call = scen.host[-1] if scen.host[-1].kind == "launch" else None
            if call is not None and call.tid == tid and call.start == t:
                call.dur = max(call.dur, op.start + op.dur + 1 - t)
                end = call.start + call.dur
        return end

    for unit in units:
        tid = draw(st.sampled_from(threads))
        t0 = t = cursor[tid]
        first_op, first_sync = len(scen.gpu), len(scen.syncs)
        if unit in ("op_kernels", "op_no_launch"):
            modelled = draw(st.booleans())
            table = MODELLED_OPS if modelled else UNMODELLED_OPS
            name = draw(st.sampled_from(sorted(table)))
            dims = table[name] if draw(st.booleans()) else None
            flops = draw(st.sampled_from([None, None, 0, 2 * 64 * 128 * 32]))
            n = draw(st.integers(1, 3)) if unit == "op_kernels" else 0
            inner_t = t + 2
            for _ in range(n):
                c, inner_t = launch(tid, inner_t + 1, launch_api)
                gpu(KERNEL, draw(st.sampled_from(kernel_names)), inner_t).correlation = c
            # rounding in real traces: the last call inside may end just after its op (crossing, not nested);
            # an op with nothing inside may last 0 µs
            op_end = inner_t - 1 if n and draw(st.integers(0, 4)) == 0 else inner_t + 3
            if not n and draw(st.integers(0, 3)) == 0:
                op_end = t
            scen.host.append(HostEvent("op", name, tid, t, op_end - t, dims=dims, flops=flops))
            t = max(op_end, inner_t)
        elif unit == "graph":
            c, t = launch(tid, t, "hipGraphLaunch" if rocm else "cudaGraphLaunch")
            device = draw(st.sampled_from(devices))
            # a graph on one stream, or with parallel branches (its kernels spread over the streams); a few
            # kernels per replay, or many (a whole captured step)
            branches = draw(st.booleans())
            n = draw(st.integers(1, 4)) if draw(st.integers(0, 4)) else draw(st.integers(5, 40))
            on = (device, draw(st.sampled_from(streams)))
            for _ in range(n):
                where = (device, draw(st.sampled_from(streams))) if branches else on
                op = gpu(KERNEL, draw(st.sampled_from(kernel_names)), t, where, graph=True)
                op.correlation = c
        elif unit == "concurrent":
            # one launch per stream, the kernels starting at the same instant on every stream of one device
            device = draw(st.sampled_from(devices))
            calls = []
            for stream in streams:
                c, t = launch(tid, t, launch_api)
                calls.append((stream, c))
            at = max([t, *(stream_free.get((device, s), 0) for s in streams)])
            for stream, c in calls:
                dur = draw(st.sampled_from([0, 5, 40]))
                stream_free[(device, stream)] = at + dur
                scen.gpu.append(
                    GpuOp(KERNEL, draw(st.sampled_from(kernel_names)), device, stream, at, dur, c)
                )
        elif unit == "copy":
            t = copy_op(tid, t)
        elif unit == "memset":
            c, t = launch(tid, t, "hipMemsetAsync" if rocm else "cudaMemsetAsync")
            gpu(MEMSET, "Memset (Device)", t, bytes=draw(st.integers(0, 1 << 20))).correlation = c
        elif unit == "kernel_no_launch":
            gpu(KERNEL, draw(st.sampled_from(kernel_names)), None)
        elif unit == "launch_no_gpu":
            _, t = launch(tid, t, launch_api)
        elif unit == "nccl":
            c, t = launch(tid, t, launch_api)
            gpu(KERNEL, draw(st.sampled_from(NCCL_KERNELS)), t).correlation = c
        elif unit == "sync":
            dur = draw(st.integers(0, 300))
            # no correlation id (older traces), or one with the device's Context Sync record at the call's end
            c = next_id(tid) if draw(st.booleans()) else None
            scen.host.append(
                HostEvent(
                    "sync",
                    "hipDeviceSynchronize" if rocm else "cudaDeviceSynchronize",
                    tid,
                    t,
                    dur,
                    correlation=c,
                )
            )
            if c is not None and scen.gpu:
                device = draw(st.sampled_from(sorted({g.device for g in scen.gpu})))
                scen.syncs.append(GpuSync("context_sync", device, -1, t + max(dur - 2, 0), min(dur, 2), c))
            t += dur
        elif unit in ("stream_sync", "event_sync", "event_wait"):
            # cudaStreamSynchronize; cudaEventRecord then cudaEventSynchronize; cudaEventRecord then
            # cudaStreamWaitEvent (another stream waits for the event): each with its GPU-side record or not
            used = sorted({(g.device, g.stream) for g in scen.gpu})
            device, stream = draw(st.sampled_from(used)) if used else (devices[0], streams[0])
            prefix = "hip" if rocm else "cuda"
            record = None
            if unit != "stream_sync":
                record, t = launch(tid, t, f"{prefix}EventRecord")
            api = {
                "stream_sync": "StreamSynchronize",
                "event_sync": "EventSynchronize",
                "event_wait": "StreamWaitEvent",
            }
            c = next_id(tid)
            waited = max(stream_free.get((device, stream), 0) - t, 0) if unit != "event_wait" else 0
            dur = waited + draw(st.integers(0, 8))
            scen.host.append(HostEvent("sync", prefix + api[unit], tid, t, dur, correlation=c))
            if used and draw(st.booleans()):
                kind = {
                    "stream_sync": "stream_sync",
                    "event_sync": "event_sync",
                    "event_wait": "stream_wait_event",
                }
                on = draw(st.sampled_from(streams)) if unit == "event_wait" else stream
                scen.syncs.append(
                    GpuSync(
                        kind[unit],
                        device,
                        on,
                        t + max(dur - 2, 0),
                        min(dur, 2),
                        c,
                        wait_on_stream=stream if unit == "event_wait" else None,
                        record_correlation=record,
                    )
                )
            t += dur
        elif unit == "annotation":
            dur = draw(st.integers(0, 50))
            scen.host.append(
                HostEvent("annotation", draw(st.sampled_from(["forward", "backward", "data"])), tid, t, dur)
            )
            t += dur
        else:  # gap: the host does nothing recorded
            t += draw(st.integers(1, 500))
        if with_modules and t > t0 and unit in ("op_kernels", "op_no_launch", "graph"):
            # A module around this unit only (modules nest or are disjoint, like the ops inside them).
            scen.host.append(
                HostEvent(
                    "module",
                    f"nn.Module: {draw(st.sampled_from(['Linear', 'Block']))}_0",
                    tid,
                    t0 - 1 if t0 > 0 else t0,
                    t - t0 + 1 + (1 if t0 > 0 else 0),
                )
            )
            t += 1
        if scen.two_processes and tid != threads[0]:
            for op in scen.gpu[first_op:]:
                op.process = 1
            for sync in scen.syncs[first_sync:]:
                sync.process = 1
        cursor[tid] = t + draw(st.integers(1, 20))
        if tid == threads[0]:
            boundaries.append(cursor[tid] - 1)
    if draw(st.integers(0, 4)) == 0:
        # GPU work still running after the host's last record (no launch: before the profiler's window)
        host_end = max((h.start + h.dur for h in scen.host), default=0)
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from([KERNEL, MEMCPY, MEMSET]))
            name = (
                draw(st.sampled_from(kernel_names))
                if kind == KERNEL
                else {MEMCPY: "Memcpy DtoH", MEMSET: "Memset (Device)"}[kind]
            )
            extra = {"bytes": draw(st.integers(0, 4096))} if kind != KERNEL else {}
            if kind == MEMCPY:
                extra["copy"] = "DtoH"
            gpu(kind, name, host_end + draw(st.integers(1, 500)), **extra)
    if with_steps and scen.host:
        # Steps: consecutive ranges on the first thread around whole units, the last to the end of the host work.
        end = max(h.start + h.dur for h in scen.host) + 1
        cuts = sorted(set(draw(st.lists(st.sampled_from(boundaries), max_size=2)) + [0])) + [end]
        for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            if b > a:
                scen.host.append(HostEvent("step", f"ProfilerStep#{i}", threads[0], a, b - a))
    return scen


# ------------------------------------------------------------------------------------------ Kineto JSON

PID = 4242


def kineto_document(scen: Scenario) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    old = scen.old_format
    cat = {
        "op": "Operator" if old else "cpu_op",
        "launch": "Runtime" if old else "cuda_runtime",
        "annotation": "user_annotation",
        "module": "python_function",
        "step": "user_annotation",
        "sync": "Runtime" if old else "cuda_runtime",
    }
    ext = "external id" if old else "External id"

    base = 1_690_000_000_000_000 if scen.epoch else 0  # absolute µs since the epoch

    def ts(us: int) -> float | int:
        return base + us + 0.125 if scen.fractional else base + us  # ns resolution: a fraction of a µs

    def pid(tid: int) -> int:
        return PID + 1 if scen.two_processes and tid != 101 else PID

    for h in scen.host:
        args: dict[str, Any] = {}
        if h.correlation is not None:
            args["correlation"] = h.correlation
            args[ext] = h.correlation
        if h.dims is not None:
            args["Input Dims"] = h.dims
            args["Input type"] = ["float"] * len(h.dims)
        if h.flops is not None:
            args["flops"] = h.flops
        kind = (
            "cuda_driver"
            if h.kind == "launch" and h.name.startswith("cu") and not h.name.startswith("cuda") and not old
            else cat[h.kind]
        )
        events.append(
            {
                "ph": "X",
                "cat": kind,
                "name": h.name,
                "pid": pid(h.tid),
                "tid": h.tid,
                "ts": ts(h.start),
                "dur": h.dur,
                "args": args,
            }
        )
        if scen.flows and h.correlation is not None:
            events.append(
                {
                    "ph": "s",
                    "id": h.correlation,
                    "pid": pid(h.tid),
                    "tid": h.tid,
                    "ts": ts(h.start),
                    "cat": "async" if old else "ac2g",
                    "name": "launch" if old else "ac2g",
                }
            )
    for g in scen.gpu:
        args = {"device": g.device, "stream": g.stream, "context": 1}
        if g.correlation is not None:
            args["correlation"] = g.correlation
            args[ext] = g.correlation
        if g.kind == KERNEL:
            gcat, name = "Kernel" if old else "kernel", g.name
            if not scen.rocm:
                args.update(
                    {
                        "registers per thread": 32,
                        "shared memory": 0,
                        "grid": [64, 1, 1],
                        "block": [128, 1, 1],
                        "blocks per SM": 0.5,
                        "warps per SM": 2.0,
                        "est. achieved occupancy %": 6,
                    }
                )
            if g.name.startswith("nccl"):
                args["Collective name"] = "allreduce"
        elif g.kind == MEMCPY:
            gcat = "Memcpy" if old else "gpu_memcpy"
            kinds = {
                "HtoD": "(Pageable -> Device)",
                "DtoH": "(Device -> Pinned)",
                "DtoD": "(Device -> Device)",
                "PtoP": "(Device -> Device)",
            }
            host_kinds = {**kinds, "HtoD": "(Host -> Device)", "DtoH": "(Device -> Host)"}
            name = f"Memcpy {g.copy} {(host_kinds if scen.rocm else kinds)[g.copy]}"
            args["bytes"] = g.bytes
        else:
            gcat, name = "Memset" if old else "gpu_memset", g.name
            args["bytes"] = g.bytes
        tid: int | str = f"stream {g.stream}" if old else g.stream
        events.append(
            {
                "ph": "X",
                "cat": gcat,
                "name": name,
                "pid": g.device,
                "tid": tid,
                "ts": ts(g.start),
                "dur": g.dur,
                "args": args,
            }
        )
        if scen.flows and g.correlation is not None:
            events.append(
                {
                    "ph": "f",
                    "id": g.correlation,
                    "pid": g.device,
                    "tid": tid,
                    "ts": ts(g.start),
                    "cat": "async" if old else "ac2g",
                    "name": "launch" if old else "ac2g",
                    "bp": "e",
                }
            )
    if scen.extras and not old:
        gpus = sorted({(g.device, g.stream) for g in scen.gpu})
        for h in scen.host:
            if h.kind == "op":
                events.append(
                    {
                        "ph": "i",
                        "cat": "cpu_instant_event",
                        "s": "t",
                        "name": "[memory]",
                        "pid": pid(h.tid),
                        "tid": h.tid,
                        "ts": ts(h.start),
                        "args": {"Total Reserved": 2097152, "Bytes": 4096, "Device Id": 0},
                    }
                )
            elif h.kind == "step":
                events.extend(
                    {
                        "ph": "X",
                        "cat": "gpu_user_annotation",
                        "name": h.name,
                        "pid": d,
                        "tid": st_,
                        "ts": ts(h.start),
                        "dur": h.dur,
                        "args": {"External id": 0},
                    }
                    for d, st_ in gpus
                )
            elif h.kind == "sync" and h.name.endswith("DeviceSynchronize") and h.correlation is None and gpus:
                d, st_ = gpus[0]
                events.append(
                    {
                        "ph": "X",
                        "cat": "cuda_sync",
                        "name": "Device Synchronize",
                        "pid": d,
                        "tid": st_,
                        "ts": ts(h.start),
                        "dur": h.dur,
                        "args": {"device": d, "stream": -1, "cuda_sync_kind": "Device Synchronize"},
                    }
                )
    sync_names = {
        "stream_sync": "Stream Sync",
        "event_sync": "Event Sync",
        "stream_wait_event": "Stream Wait Event",
        "context_sync": "Context Sync",
    }
    for s in scen.syncs if not old else []:
        # a context sync: thread -1 and stream 2**32 - 1 (as CUPTI writes "no stream")
        stream = 2**32 - 1 if s.kind == "context_sync" else s.stream
        sync_args: dict[str, Any] = {
            ext: s.correlation,
            "cuda_sync_kind": sync_names[s.kind],
            "stream": stream,
            "correlation": s.correlation,
            "device": s.device,
            "context": 1,
        }
        if s.wait_on_stream is not None:
            sync_args["wait_on_stream"] = s.wait_on_stream
        if s.record_correlation is not None:
            sync_args["wait_on_cuda_event_record_corr_id"] = s.record_correlation
        events.append(
            {
                "ph": "X",
                "cat": "cuda_sync",
                "name": sync_names[s.kind],
                "pid": s.device,
                "tid": -1 if s.kind == "context_sync" else s.stream,
                "ts": ts(s.start),
                "dur": s.dur,
                "args": sync_args,
            }
        )
    doc: dict[str, Any] = {"schemaVersion": 1, "traceEvents": events}
    if scen.device_props and not old:
        doc["deviceProperties"] = [
            {
                "id": d,
                "name": "AMD Instinct MI250X" if scen.rocm else "NVIDIA A100-SXM4-40GB",
                "totalGlobalMem": 42298834944,
                "computeMajor": 9 if scen.rocm else 8,
                "computeMinor": 0,
                "maxThreadsPerBlock": 1024,
                "maxThreadsPerMultiprocessor": 2048,
                "regsPerBlock": 65536,
                "regsPerMultiprocessor": 65536,
                "warpSize": 64 if scen.rocm else 32,
                "sharedMemPerBlock": 49152,
                "sharedMemPerMultiprocessor": 167936,
                "numSms": 110 if scen.rocm else 108,
                "sharedMemPerBlockOptin": 166912,
            }
            for d in scen.devices
        ]
    return doc


def write_kineto(scen: Scenario, folder: Path) -> Path:
    path = folder / "trace.pt.trace.json"
    path.write_text(json.dumps(kineto_document(scen)), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ Nsight SQLite

_NSYS_SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER,
    shortName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER,
    blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER, dynamicSharedMemory INTEGER,
    graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, bytes INTEGER,
    copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
    contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER, value INTEGER,
    bytes INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL, eventSyncId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
    category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
    domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
    int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT, isDiscrete INTEGER,
    l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER,
    computeMajor INTEGER, computeMinor INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER,
    maxRegistersPerSm INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerSm INTEGER, maxShmemPerBlock INTEGER,
    threadsPerWarp INTEGER, cuDevice INTEGER);
"""
_COPY_KIND = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "PtoP": 10}
_GLOBAL_PID = PID << 24
_NS = 1000  # µs -> ns; a fixed session offset keeps times positive and large like real exports
_T0 = 1_000_000_000


def write_nsys(scen: Scenario, folder: Path, *, gpu_tables: bool = True) -> Path:
    """An export with the tables the reader uses, created by hand SQL; framework ops become NVTX ranges
    (``emit_nvtx`` style, ``sizes = [...]`` when shapes were recorded), as nsys records them."""
    path = folder / "trace.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_NSYS_SCHEMA)
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    db.executemany(
        "INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
        [("EXPORT_SCHEMA_VERSION", "3.11.1"), ("EXPORT_PRODUCT_VERSION", "2024.2.1")],
    )
    for g in scen.gpu if gpu_tables else []:
        common = (
            _T0 + g.start * _NS,
            _T0 + (g.start + g.dur) * _NS,
            g.device,
            1,
            g.stream,
            g.correlation,
            _GLOBAL_PID + (g.process << 24),
        )
        if g.kind == KERNEL:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *common,
                    sid(g.name),
                    sid(g.name.split("(")[0][-20:]),
                    64,
                    1,
                    1,
                    128,
                    1,
                    1,
                    32,
                    0,
                    0,
                    7 if g.graph else None,
                ),
            )
        elif g.kind == MEMCPY:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    *common,
                    g.bytes,
                    _COPY_KIND[g.copy],
                    0 if g.copy == "HtoD" else 2,
                    1 if g.copy == "DtoH" else 2,
                ),
            )
        else:
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,?,?,?,?,?,?,?)",
                (*common, 0, g.bytes, 2),
            )
    sync_type = {"event_sync": 1, "stream_wait_event": 2, "stream_sync": 3, "context_sync": 4}
    for s in scen.syncs if gpu_tables else []:
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                _T0 + s.start * _NS,
                _T0 + (s.start + s.dur) * _NS,
                s.device,
                1,
                2**32 - 1 if s.kind == "context_sync" else s.stream,
                s.correlation,
                _GLOBAL_PID + (s.process << 24),
                sync_type[s.kind],
                7 if s.record_correlation is not None else 0,
                s.record_correlation,
            ),
        )
    for h in scen.host:
        start, end = _T0 + h.start * _NS, _T0 + (h.start + h.dur) * _NS
        gtid = _GLOBAL_PID + (1 << 24 if scen.two_processes and h.tid != 101 else 0) + h.tid
        if h.kind in ("launch", "sync"):
            # eventClass 0: runtime; 1: driver (cu* calls)
            driver = h.name.startswith("cu") and not h.name.startswith("cuda")
            name = f"{h.name}_v{7000 + len(h.name)}" if scen.versioned_names else h.name
            db.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,0)",
                (start, end, 1 if driver else 0, gtid, h.correlation or 0, sid(name)),
            )
        else:
            text = h.name
            if h.kind == "op":
                text = f"{h.name}, seq = {h.start}" + (f", sizes = {h.dims}" if h.dims is not None else "")
            elif h.kind == "step":
                text = f"tracelens/step#{h.name.split('#')[1]}"
            db.execute(
                "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                "VALUES (?,?,59,?,?,0)",
                (start, end, text, gtid),
            )
    if scen.device_props:
        db.executemany(
            "INSERT INTO TARGET_INFO_GPU (id, name, smCount, computeMajor, computeMinor, "
            "maxWarpsPerSm, maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm, threadsPerWarp, "
            "cuDevice) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [(d, "NVIDIA A100-SXM4-40GB", 108, 8, 0, 64, 32, 65536, 167936, 32, d) for d in scen.devices],
        )
    db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in strings.items()])
    if scen.old_format:
        # Like a 2022 export: EXPORT_META_DATA, and tables created only when they have rows.
        db.execute("ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA")
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            if (
                table != "EXPORT_META_DATA"
                and not db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            ):
                db.execute(f'DROP TABLE "{table}"')
    db.commit()
    db.close()
    return path


# ------------------------------------------------------------------------------------------ xplane

_PS = 1_000_000  # µs -> ps


def write_xplane(scen: Scenario, folder: Path) -> Path:
    """A raw XSpace: one /host:CPU plane (a line per thread: ops, launch calls with correlation_id, step
    markers), one /device:GPU:N plane per device (a ``Stream #N`` line per stream: kernels with
    kernel_details, copies with memcpy_details, memsets with memset_details), device properties as plane
    stats when the scenario has them."""
    host_names: dict[str, int] = {}
    stat_names = {
        1: "correlation_id",
        2: "kernel_details",
        3: "memcpy_details",
        4: "memset_details",
        5: "step_num",
        6: "core_count",
        7: "compute_cap_major",
        8: "compute_cap_minor",
        9: "flops",
    }

    def name_id(names: dict[str, int], text: str) -> int:
        return names.setdefault(text, len(names) + 1)

    lines = []
    for tid in sorted({h.tid for h in scen.host}):
        events = []
        for h in sorted((h for h in scen.host if h.tid == tid), key=lambda h: (h.start, -h.dur)):
            stats = []
            name = h.name
            if h.correlation is not None:
                stats.append(pb.stat(1, int64=h.correlation))
            if h.kind == "step":
                stats.append(pb.stat(5, int64=int(h.name.split("#")[1])))
                name = "train_step"
            elif h.kind == "module":
                name = f"$model.py:10 {h.name.split(': ')[1]}.forward"
            if h.flops is not None and h.kind == "op":
                stats.append(pb.stat(9, uint64=h.flops))
            events.append(pb.event(name_id(host_names, name), h.start * _PS, h.dur * _PS, stats))
        lines.append(pb.line(tid, f"thread {tid}", 0, events))
    planes = []
    if lines:
        planes.append(pb.plane(0, "/host:CPU", lines, {v: k for k, v in host_names.items()}, stat_names))
    for index, device in enumerate(scen.devices):
        gpu_names: dict[str, int] = {}
        dev_lines = []
        ops = [g for g in scen.gpu if g.device == device]
        for stream in sorted({g.stream for g in ops}):
            events = []
            for g in sorted((g for g in ops if g.stream == stream), key=lambda g: g.start):
                stats = [pb.stat(1, int64=g.correlation)] if g.correlation is not None else []
                if g.kind == KERNEL:
                    detail = (
                        "grid:64,1,1 block:128,1,1 private_mem:0 group_mem:0"
                        if scen.rocm
                        else "regs:32 static_shared:0 dynamic_shared:0 grid:64,1,1 block:128,1,1 occ_pct:50"
                    )
                    stats.append(pb.stat(2, string=detail))
                    name = g.name
                elif g.kind == MEMCPY:
                    name = {
                        "HtoD": "MemcpyH2D",
                        "DtoH": "MemcpyD2H",
                        "DtoD": "MemcpyD2D",
                        "PtoP": "MemcpyP2P",
                    }[g.copy]
                    stats.append(pb.stat(3, string=f"kind_src:pinned kind_dst:device size:{g.bytes} async:1"))
                else:
                    name = "Memset"
                    stats.append(pb.stat(4, string=f"kind:device size:{g.bytes} async:1"))
                events.append(pb.event(name_id(gpu_names, name), g.start * _PS, g.dur * _PS, stats))
            dev_lines.append(pb.line(stream, f"Stream #{stream}(Compute)", 0, events))
        kernels = sorted((g for g in ops if g.kind == KERNEL), key=lambda g: g.start)
        if scen.xla_ops and kernels:
            # one HLO op per kernel, on a line of its own (ops of several streams may overlap there)
            xla = [
                pb.event(
                    name_id(gpu_names, f"fusion.{i}" if i % 2 else f"dot.{i}"),
                    g.start * _PS,
                    g.dur * _PS,
                    [pb.stat(9, uint64=1_000_000 * (i + 1))] if i % 3 else [],
                )
                for i, g in enumerate(kernels)
            ]
            dev_lines.append(pb.line(-559038735, "XLA Ops", 0, xla))
        props = [pb.stat(6, int64=108), pb.stat(7, int64=8), pb.stat(8, int64=0)] if scen.device_props else []
        if dev_lines or props:
            planes.append(
                pb.plane(
                    index + 1,
                    f"/device:GPU:{device}",
                    dev_lines,
                    {v: k for k, v in gpu_names.items()},
                    stat_names,
                    props,
                )
            )
    path = folder / "host0.xplane.pb"
    path.write_bytes(pb.space(planes, ["host0"]))
    return path


WRITERS = {"kineto": write_kineto, "nsys": write_nsys, "xplane": write_xplane}
