"""The analysis document as a typed value: what ``tracelens.analyze`` returns and ``--format json`` writes.

The document is a plain dict (JSON-ready) whose shape is given as :class:`~typing.TypedDict` s, one per
section, so code that reads it (renderers, ``diff``, the multi-rank run) names keys the type checker knows
instead of guessing at spellings. Every key of every section is typed, as ``docs/json.md`` documents it;
only maps whose keys are data and a cause's evidence (keys per cause) are ``dict[str, ...]``.

The package, one job a module (every name is importable from ``tracelens.document``):
    types    the TypedDicts (``Document``, one per section, ``Summary``, ``RunDocument``) and ``DeviceUtilization``
    summary  :func:`summarize`: the ``summary`` block (the headline figures every renderer and ``diff`` need),
             computed once from the sections; ``analyze`` and the multi-rank run document both call it
    saved    :func:`dumps` writes a document as ``tracelens analyze --format json`` does; :func:`load_document`
             reads one back
"""

from __future__ import annotations

from .saved import dumps, is_document, load_document, looks_like_document
from .summary import is_current_summary, summarize, summary_of
from .types import (
    AttributedGap,
    Attribution,
    AttributionDevice,
    Cause,
    CollectiveType,
    Communication,
    CommunicationDevice,
    Completeness,
    CompletenessProblem,
    Compute,
    CopyBurst,
    CriticalPath,
    CriticalPathName,
    CriticalPathStep,
    CudaGraphs,
    Device,
    DeviceBreakdown,
    DeviceUtilization,
    Diagnosis,
    DiagnosisCriticalPath,
    Document,
    Gap,
    GapBucket,
    GapDevice,
    Gaps,
    GapTimeline,
    GpuWait,
    Host,
    HostKind,
    HostRow,
    IdleGaps,
    InnermostRow,
    ItemPatternOp,
    KernelRow,
    Kernels,
    Launch,
    LaunchLatency,
    LaunchRates,
    LaunchShortKernels,
    LaunchSmallKernels,
    LowOccupancyKernel,
    Memcpy,
    MemcpyDevice,
    MemcpyDeviceKind,
    MemcpyFinding,
    MemcpyHostMemory,
    MemcpyKind,
    MemcpyLaunch,
    MemcpySmallCopies,
    ModuleRow,
    NotComputed,
    Occupancy,
    OccupancyDevice,
    OpRow,
    Ops,
    ProcessGroup,
    QueueDepth,
    RangeRow,
    Ranges,
    RankRow,
    Remedy,
    ReplayError,
    Roofline,
    RooflineOp,
    RunDocument,
    Source,
    StepGpuBusy,
    StepRow,
    Steps,
    StepsGpuBusy,
    StepStats,
    StepSummary,
    Summary,
    Sync,
    SyncBlocking,
    SyncCall,
    SyncItemPattern,
    SyncStep,
    SyncStepMean,
    UtilizationByKind,
    Whatif,
)

__all__ = [
    "AttributedGap", "Attribution", "AttributionDevice", "Cause", "CollectiveType", "Communication",
    "CommunicationDevice", "Completeness", "CompletenessProblem", "Compute", "CopyBurst", "CriticalPath",
    "CriticalPathName", "CriticalPathStep", "CudaGraphs", "Device", "DeviceBreakdown", "DeviceUtilization",
    "Diagnosis", "DiagnosisCriticalPath", "Document", "Gap", "GapBucket", "GapDevice", "GapTimeline", "Gaps", "GpuWait", "Host",
    "HostKind", "HostRow", "IdleGaps", "InnermostRow", "ItemPatternOp", "KernelRow", "Kernels", "Launch",
    "LaunchLatency", "LaunchRates", "LaunchShortKernels", "LaunchSmallKernels", "LowOccupancyKernel",
    "Memcpy", "MemcpyDevice", "MemcpyDeviceKind", "MemcpyFinding", "MemcpyHostMemory", "MemcpyKind",
    "MemcpyLaunch", "MemcpySmallCopies", "ModuleRow", "NotComputed", "Occupancy", "OccupancyDevice", "OpRow",
    "Ops", "ProcessGroup", "QueueDepth", "RangeRow", "Ranges", "RankRow", "Remedy", "ReplayError", "Roofline",
    "RooflineOp", "RunDocument", "Source", "StepGpuBusy", "StepRow", "StepStats", "StepSummary", "Steps",
    "StepsGpuBusy", "Summary", "Sync", "SyncBlocking", "SyncCall", "SyncItemPattern", "SyncStep",
    "SyncStepMean", "UtilizationByKind", "Whatif", "dumps", "is_current_summary",
    "is_document", "load_document", "looks_like_document", "summarize", "summary_of",
]
