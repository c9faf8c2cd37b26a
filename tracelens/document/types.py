"""The analysis document's types: one :class:`~typing.TypedDict` per JSON object of the document, as
``docs/json.md`` documents it, and :class:`DeviceUtilization` (a GPU's ``devices`` row, which ``analyses/devices.py``
fills).

Declarations only, no logic, each section's types together, then the summary, the document and the run
document. Its length (about 900 lines) is the document's size: a module per section would spread one reading of
docs/json.md over fifteen files and their cross-imports (sections share types such as ``NotComputed``).
"""

# No `from __future__ import annotations` here: with it every field's annotation is a string, which TypedDict turns
# into a ForwardRef by compiling it (~620 compiles, 4-5 ms of every process that imports the document, the CLI's
# included); evaluated as written they cost nothing. A type used before its definition needs quotes.
from typing import Any, TypedDict

from .device_utilization import DeviceUtilization as DeviceUtilization  # re-exported: a document type

# The schema version these types describe (analyses.JSON_SCHEMA_VERSION, which the document layer cannot import;
# tests/test_document_types.py holds the two equal): a saved document of this version is checked against them.
SCHEMA_VERSION = "1.1"


class Source(TypedDict):
    path: str | None
    format: str | None
    producer: str | None
    producer_version: str | None
    format_version: str | None
    framework: str | None
    rank: int | None
    world_size: int | None
    event_count: int
    warnings: list[str]


class _DeviceFields(TypedDict):
    """DeviceUtilization as a dict, field for field (written out so that mypy reads the renderers' use of it;
    tests/test_document_types.py checks that the two declare the same fields and types)."""

    id: int
    name: str | None
    busy_ns: int
    span_ns: int
    utilization: float
    first_start_ns: int
    last_end_ns: int
    kernel_count: int
    kernel_ns: int
    memcpy_count: int
    memcpy_ns: int
    memset_count: int
    memset_ns: int
    kernel_union_ns: int
    copies_only_ns: int
    memsets_only_ns: int


# One GPU: DeviceUtilization's fields plus ``rank`` in a multi-rank run document. (Optional keys by a total=False
# subclass: typing.NotRequired is 3.11+.)


class Device(_DeviceFields, total=False):
    rank: int  # run documents only


# The sections, key for key as docs/json.md lists them (tests/test_document_types.py checks every key of
# the output against these types, and every required key here against the output). Keys that are data
# (a host category, a cause) are dict[str, ...]; a cause's evidence, whose keys depend on the cause, is
# dict[str, Any] (its keys are in docs/json.md, per cause).


class KernelRow(TypedDict):
    name: str
    count: int
    total_ns: int
    avg_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    stdev_ns: float
    time_fraction: float


class Kernels(TypedDict):
    count: int
    total_ns: int
    distinct_names: int
    by_name: list[KernelRow]


class HostKind(TypedDict):
    kind: str
    count: int
    total_ns: int


class HostRow(TypedDict):
    kind: str
    name: str
    count: int
    total_ns: int
    names: int


class Host(TypedDict):
    span_ns: int
    threads: int
    by_kind: list[HostKind]
    top: list[HostRow]
    thread_bootstrap_rows: int
    has_gpu_activity: bool


class GapBucket(TypedDict):
    bucket: str
    min_ns: int
    max_ns: int | None
    count: int
    total_ns: int


class Gap(TypedDict):
    start_ns: int
    duration_ns: int


class GapTimeline(TypedDict):
    start_ns: int
    edges_ns: list[int]
    utilization: list[float]


class GapDevice(TypedDict):
    device: int
    span_ns: int
    busy_ns: int
    idle_ns: int
    gap_count: int
    histogram: list[GapBucket]
    largest: list[Gap]
    timeline: GapTimeline


class Gaps(TypedDict):
    bucket_edges_ns: list[int]
    devices: list[GapDevice]


class StepGpuBusy(TypedDict):
    device: int
    busy_ns: int


class StepRow(TypedDict):
    step: int
    start_ns: int
    end_ns: int
    duration_ns: int
    gpu_busy: list[StepGpuBusy]
    host: dict[str, int]


class StepsGpuBusy(TypedDict):
    device: int
    busy_ns: int
    utilization: float


class StepSummary(TypedDict):
    total_ns: int
    mean_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    host_ns: dict[str, int]
    host_share: dict[str, float]
    gpu_busy: list[StepsGpuBusy]


class _StepsFields(TypedDict):
    count: int
    steps: list[StepRow]
    summary: StepSummary | None


class Steps(_StepsFields, total=False):
    listed: int  # absent without steps


class IdleGaps(TypedDict):
    count: int
    idle_ns: int


class AttributedGap(TypedDict):
    start_ns: int
    duration_ns: int
    by_cause: dict[str, int]


class AttributionDevice(TypedDict):
    device: int
    idle_ns: int
    gap_count: int
    feeding_threads: list[list[int]]
    feeding_thread_count: int
    feeding_threads_from: str
    by_cause: dict[str, int]
    sync_copy_ns: int
    after_sync: IdleGaps
    late_launch: IdleGaps
    queued: IdleGaps
    queued_launch: IdleGaps
    largest: list[AttributedGap]


class Attribution(TypedDict):
    priority: list[str]
    devices: list[AttributionDevice]
    total_by_cause: dict[str, int]
    mean_by_cause: dict[str, float]
    sync_copy_ns: int


class LaunchLatency(TypedDict):
    count: int
    mean_ns: float | None
    max_ns: int | None
    p50_ns: int | None
    p90_ns: int | None
    p99_ns: int | None
    negative_count: int


class LaunchShortKernels(TypedDict):
    count: int
    kernel_ns: int
    of_matched_kernels: int


class LaunchSmallKernels(TypedDict):
    threshold_ns: int
    count: int
    kernel_ns: int
    total_kernel_ns: int
    share: float
    count_share: float


class LaunchRates(TypedDict):
    launch_calls: int
    issue_span_ns: int
    issue_per_s: float | None
    gpu_busy_ns: int
    execution_per_s: float | None
    gpus: float
    issue_to_execution: float | None


class QueueDepth(TypedDict):
    device: int
    stream: int
    max: int
    mean: float
    ops: int


class CudaGraphs(TypedDict):
    in_use: bool
    graph_launch_calls: int
    graph_ops: int


class Launch(TypedDict):
    gpu_ops: int
    matched_ops: int
    latency: LaunchLatency
    short_kernels: LaunchShortKernels
    small_kernels: LaunchSmallKernels
    rates: LaunchRates
    queue_depth: list[QueueDepth]
    cuda_graphs: CudaGraphs


class SyncCall(TypedDict):
    name: str
    count: int
    total_ns: int


class SyncBlocking(TypedDict):
    count: int
    total_ns: int
    by_name: list[SyncCall]


class SyncStep(TypedDict):
    step: int
    count: int
    total_ns: int


class SyncStepMean(TypedDict):
    count: float
    total_ns: float


class ItemPatternOp(TypedDict):
    name: str
    count: int


class SyncItemPattern(TypedDict):
    count: int
    sync_calls: int
    wait_ns: int
    max_bytes: int
    top_ops: list[ItemPatternOp]
    per_step: list[int]
    by_device: dict[str, int]  # per GPU (the copies' device as a string key): its occurrences


class GpuWait(TypedDict):
    sync_kind: str
    count: int
    total_ns: int


class Sync(TypedDict):
    blocking: SyncBlocking
    per_step: list[SyncStep]
    per_step_mean: SyncStepMean | None
    item_pattern: SyncItemPattern
    gpu_waits: list[GpuWait]
    stream_wait_event_calls: int


class RangeRow(TypedDict):
    name: str
    count: int
    texts: int
    cpu_ns: int
    gpu_ops: int
    gpu_op_ns: int
    projected_ns: int
    gpu_idle_ns: int
    instances_with_gpu: int


class Ranges(TypedDict):
    count: int
    names: int
    texts: int
    ranges: list[RangeRow]


class MemcpyKind(TypedDict):
    kind: str
    count: int
    bytes: int
    duration_ns: int
    device_mean_exposed_ns: float
    pageable_count: int
    pageable_ns: int
    pinned_count: int
    pinned_ns: int
    managed_count: int
    unknown_memory_count: int
    sync_count: int
    sync_ns: int
    async_count: int
    async_ns: int
    graph_count: int
    unknown_launch_count: int
    zero_duration_count: int
    unknown_bytes_count: int
    small_count: int
    small_ns: int
    measured_count: int
    achieved_bytes_per_s: float | None
    p10_bytes_per_s: float | None
    p50_bytes_per_s: float | None
    p90_bytes_per_s: float | None
    max_bytes_per_s: float | None


class MemcpyDeviceKind(TypedDict):
    kind: str
    count: int
    bytes: int
    duration_ns: int
    union_ns: int
    exposed_ns: int
    pageable_ns: int
    pinned_ns: int
    sync_ns: int
    async_ns: int
    busy_share: float | None  # null where the device's busy_ns (span_ns) is 0: zero-length ops only
    span_share: float | None
    achieved_bytes_per_s: float | None
    large_copy_count: int
    unknown_bytes_count: int  # copies whose size the trace does not record (ROCm's Kineto copies)
    large_achieved_bytes_per_s: float | None
    expected_bytes_per_s: float | None
    expected_link: str | None
    expected_source: str | None
    achieved_fraction: float | None
    large_achieved_fraction: float | None


class MemcpyDevice(TypedDict):
    device: int
    name: str | None
    count: int
    bytes: int
    duration_ns: int
    union_ns: int
    exposed_ns: int
    busy_ns: int
    span_ns: int
    busy_share: float | None  # null where the device's busy_ns (span_ns) is 0: zero-length ops only
    span_share: float | None
    exposed_span_share: float | None
    by_kind: list[MemcpyDeviceKind]


class MemcpyHostMemory(TypedDict):
    pageable_count: int
    pinned_count: int
    managed_count: int
    device_count: int
    unknown_count: int
    host_copies_unknown_count: int
    basis: str


class MemcpyLaunch(TypedDict):
    sync_count: int
    async_count: int
    graph_count: int
    unknown_count: int
    async_pageable_count: int
    sync_ns: int
    basis: str


class CopyBurst(TypedDict):
    device: int
    start_ns: int
    end_ns: int
    count: int
    bytes: int
    duration_ns: int


class MemcpySmallCopies(TypedDict):
    threshold_bytes: int
    count: int
    bytes: int
    duration_ns: int
    burst_min_copies: int
    burst_max_gap_ns: int
    burst_count: int
    burst_copy_count: int
    burst_ns: int
    largest_bursts: list[CopyBurst]


class MemcpyFinding(TypedDict):
    id: str
    evidence: dict[str, Any]
    remedy: str


class Memcpy(TypedDict):
    count: int
    bytes: int
    duration_ns: int
    device_mean_union_ns: float
    device_mean_exposed_ns: float
    by_kind: list[MemcpyKind]
    per_device: list[MemcpyDevice]
    host_memory: MemcpyHostMemory
    launch: MemcpyLaunch
    small_copies: MemcpySmallCopies
    findings: list[MemcpyFinding]


class OccupancyDevice(TypedDict):
    device: int
    name: str | None
    compute_capability: str | None
    sm_count: int | None
    limits_source: list[str]
    kernel_count: int
    kernel_ns: int
    computed_count: int
    computed_kernel_ns: int
    not_computed_reason: str | None
    basis: str
    time_weighted_theoretical: float | None
    time_weighted_estimated_achieved: float | None
    time_weighted_reported: float | None
    low_count: int
    low_ns: int
    under_filled_count: int
    under_filled_ns: int
    block_shape_limited_count: int
    block_shape_limited_ns: int
    register_or_shared_limited_ns: int
    collective_kernel_ns: int
    library_kernel_ns: int
    library_under_filled_ns: int
    lost_ns: int
    under_filled_lost_ns: int
    block_shape_lost_ns: int
    limiter_ns: dict[str, int]


class NotComputed(TypedDict):
    device: int | None
    reason: str
    kernel_count: int


class LowOccupancyKernel(TypedDict):
    name: str
    device: int
    count: int
    total_ns: int
    lost_ns: int
    sm_fill: float | None
    grid_blocks: float | None
    occupancy: float | None
    theoretical: float | None
    shape_occupancy: float | None
    waves: float | None
    under_filled_count: int
    block_shape_limited: bool
    limiter: str | None
    threads_per_block: int | None
    registers_per_thread: int | None
    shared_bytes_per_block: int | None
    context_sm_count: int | None


class Occupancy(TypedDict):
    low_threshold: float
    kernel_count: int
    computed_count: int
    lost_ns: int
    under_filled_lost_ns: int
    block_shape_lost_ns: int
    per_device: list[OccupancyDevice]
    not_computed: list[NotComputed]
    top_low_occupancy_kernels: list[LowOccupancyKernel]


class Cause(TypedDict):
    cause: str
    lost_ns: int
    share: float
    evidence: dict[str, Any]
    fix: str | None
    predicted_gain_ns: int | None
    predicted_step_ns: float | None
    gain_basis: str | None
    gain_reason: str | None
    rank_basis: str | None
    rank_ns: int
    rank_share: float


class CollectiveType(TypedDict):
    type: str
    count: int
    time_ns: int
    bytes: int | None
    algbw_bytes_per_s: float | None
    busbw_bytes_per_s: float | None
    exposed_ns: int
    measured_count: int
    measured_ns: int


class DeviceBreakdown(TypedDict):
    """A device's span in parts that add up to it (``communication.devices[].breakdown``)."""

    span_ns: int
    computation_only_ns: int
    communication_overlapped_ns: int
    communication_exposed_ns: int
    memcpy_exposed_ns: int
    idle_ns: int


class ProcessGroup(TypedDict):
    name: str | None
    ranks: str | None
    group_size: int | None
    count: int
    time_ns: int


class CommunicationDevice(TypedDict):
    device: int
    collective_count: int
    collective_ns: int
    exposed_ns: int
    overlap_share: float | None
    breakdown: DeviceBreakdown
    by_type: list[CollectiveType]
    on_compute_stream_count: int
    on_compute_stream_ns: int
    process_groups: list[ProcessGroup]


class Communication(TypedDict):
    collective_count: int
    devices: list[CommunicationDevice]


class OpRow(TypedDict):
    name: str
    count: int
    gpu_ns: int
    copy_ns: int
    cpu_ns: int
    flops: float | None


class InnermostRow(TypedDict):
    name: str
    kernels: int
    gpu_ns: int
    copy_ns: int


class ModuleRow(TypedDict):
    path: str
    kernels: int
    gpu_ns: int
    copy_ns: int
    flops: float | None


class RooflineOp(TypedDict):
    name: str
    gpu_ns: int
    flops: float
    bytes: float
    achieved_flops_per_s: float
    intensity_flops_per_byte: float
    bound: str
    attainable_flops_per_s: float
    efficiency: float
    lost_ns: int


class Roofline(TypedDict):
    peak_flops_per_s: float
    memory_bytes_per_s: float
    memory_source: str
    ridge_flops_per_byte: float
    ops: list[RooflineOp]


class Compute(TypedDict):
    flops: float | None
    flops_by_class: dict[str, float] | None
    flops_by_dtype: dict[str, float] | None
    coverage: float | None
    span_ns: int | None
    achieved_flops_per_s: float | None
    device_model: str | None
    peak_flops_per_s: float | None
    peak_source: str | None
    mfu: float | None
    mfu_is_lower_bound: bool | None
    reason: str | None


class Ops(TypedDict):
    op_count: int
    names: int
    kernel_ns: int
    attributed_kernel_ns: int
    copy_ns: int
    attributed_copy_ns: int
    unattributed_count: int
    by_name: list[OpRow]
    by_innermost: list[InnermostRow]
    by_module: list[ModuleRow] | None
    compute: Compute
    roofline: Roofline | None


class CompletenessProblem(TypedDict):
    kind: str
    blocking: bool
    evidence: dict[str, Any]
    fix: str


class Completeness(TypedDict):
    """``diagnosis.completeness``: can the trace answer (analyses/completeness.py)."""

    complete: bool
    answerable: bool
    recorder: str
    problems: list[CompletenessProblem]


class DiagnosisCriticalPath(TypedDict):
    on_host: bool
    host_share: float | None


class Diagnosis(TypedDict):
    primary: Cause
    causes: list[Cause]
    span_ns: int
    threshold: float
    busy_share: float | None
    healthy_min_busy: float
    has_gpu_activity: bool
    framework: str
    unexplained_idle_ns: int
    completeness: Completeness
    critical_path: DiagnosisCriticalPath | None


class StepStats(TypedDict):
    count: int
    mean_ns: float
    min_ns: int
    max_ns: int


class UtilizationByKind(TypedDict):
    """``summary.utilization_by_kind``: the share of the GPUs' time (Σ part / Σ span_ns, GPU-time weighted) with a
    kernel running, with copies and no kernel, with memsets and nothing else; they add up to
    ``summary.gpu_utilization``."""

    kernels: float
    copies_only: float
    memsets_only: float


class Summary(TypedDict):
    """Headline figures, computed once from the sections (``docs/json.md``, "summary"). Durations are
    device-means (``device_mean_*``: each GPU's own figure summed over the GPUs with activity / n_eff, the GPUs
    counted by GPU time, docs/analyses.md "GPU-time weighting"), so none exceeds the GPUs' window; counts and bytes
    are totals over the devices."""

    device_count: int
    gpu_utilization: float | None  # Σ busy_ns / Σ span_ns (GPU-time weighted); null without GPU activity
    utilization_by_kind: UtilizationByKind | None  # its split by what runs; sums to gpu_utilization
    device_mean_busy_ns: float | None
    device_mean_span_ns: float | None
    kernel_count: int | None
    device_mean_kernel_ns: float | None
    kernel_names: int | None
    memcpy_count: int | None
    device_mean_memcpy_ns: float | None
    memcpy_bytes: int | None
    device_mean_memcpy_exposed_ns: float | None
    device_mean_memset_ns: float | None
    steps: StepStats | None  # count, mean, min and max step time; null without steps
    step_host_ns: dict[str, float] | None  # mean host time per step by category
    primary_cause: str | None
    device_mean_primary_lost_ns: int | None  # diagnosis.primary.lost_ns (a device-mean already)
    device_mean_idle_by_cause: dict[str, float] | None  # GPU idle ns by host activity, device-mean
    flops: float | None  # ops.compute.flops: counted FLOPs; null when the trace records no shapes or flops
    mfu: float | None  # ops.compute.mfu


class _ReplayErrorFields(TypedDict):
    points: int
    blocking_calls: int
    recorded_span_ns: int
    replayed_span_ns: int
    span_error: float | None
    steps: int
    recorded_step_ns: float | None
    replayed_step_ns: float | None
    step_error: float | None
    model_span_error: float | None
    model_step_error: float | None
    unlaunched_gpu_ops: int
    gpu_ops: int


class ReplayError(_ReplayErrorFields, total=False):
    """The unchanged replay against the recording (``whatif.replay_error``). The model's split by lag is one
    trace's: a run document's replay (docs/multirank.md) has neither key."""

    model_error_by_lag: dict[str, dict[str, float | None]] | None
    model_reason: str | None


class Remedy(TypedDict):
    """One cause's remedy replayed (``whatif.remedies[]``)."""

    cause: str
    remedy: str
    predicted_span_ns: int
    predicted_step_ns: float | None
    gain_ns: int
    gain_share: float | None
    step_gain_share: float | None
    assumptions: str


class CriticalPathName(TypedDict):
    name: str | None
    ns: int


class CriticalPathStep(TypedDict):
    step: int
    length_ns: int
    ns: dict[str, int]
    on_host: bool
    bound: str | None


class CriticalPath(TypedDict):
    """What sets the replayed end (``whatif.critical_path``)."""

    length_ns: int
    ns: dict[str, int]
    shares: dict[str, float | None]
    on_host: bool
    host_side_share: float | None
    bound: str | None
    top_kernels: list[CriticalPathName]
    top_host_calls: list[CriticalPathName]
    per_step: list[CriticalPathStep]


class Whatif(TypedDict):
    """The ``whatif`` section: the replay of the trace's dependency graph, unchanged and with each remedy."""

    replay_error: ReplayError | None
    remedies: list[Remedy]
    not_modeled: list[str]
    not_modeled_reasons: dict[str, str]
    critical_path: CriticalPath | None
    reason: str | None


class Document(TypedDict, total=False):
    """The analyze document. ``schema_version`` and ``source`` are always there; a section is there when it
    was computed (``analyze(trace, sections=[...])`` may leave some out)."""

    schema_version: str
    source: Source
    summary: Summary
    devices: list[Device]
    kernels: Kernels
    host: Host
    gaps: Gaps
    steps: Steps
    attribution: Attribution
    launch: Launch
    sync: Sync
    ranges: Ranges
    memcpy: Memcpy
    occupancy: Occupancy
    communication: Communication
    ops: Ops
    whatif: Whatif
    diagnosis: Diagnosis


class RankRow(TypedDict):
    """One rank of a run document (``ranks[]``, ``docs/multirank.md``)."""

    rank: int
    path: str
    format: str
    framework: str
    events: int
    gpus: int
    busy_ns: int
    span_ns: int
    utilization: float | None
    step_count: int
    mean_step_ns: int | None
    median_step_ns: int | None
    mean_step_lateness_ns: int | None
    collective_ns: int
    collective_transfer_ns: int
    collective_wait_ns: int
    idle_by_cause: dict[str, int] | None
    blocking_problems: list[str]
    cached: bool
    worker_peak_rss_bytes: int | None
    parquet: str


class RunDocument(Document, total=False):
    """A multi-rank run document (``tracelens.run.analyze_run``): a document whose ``devices`` carry their
    ``rank``, whose ``host`` and ``diagnosis`` come from the representative rank, plus the cross-rank keys."""

    ranks: list[RankRow]
    stragglers: dict[str, Any]  # steps / collectives: basis, per_rank lateness, straggler
    collectives: dict[str, Any]
    imbalance: dict[str, Any]
    representative_rank: int
