"""The markdown report's sections, one drawing function per section key (:data:`DRAW`), and the generic form
for a section without one (:func:`section_generic`); :mod:`tracelens.report.markdown` puts them in the
registry's order under the headline and the findings. Names from the traced program are escaped as
:mod:`tracelens.report.markdown` describes.

About 980 lines as `ruff format` lays them out (about 530 before it spread the table rows one cell a line): one
module on purpose, since its fifteen drawing functions share the table, fold and cell helpers and read as one
report; the layout and the values they share with the terminal already live in `markdown_blocks` and `sections`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from ..analyses import BY_KEY
from ..document.types import Device, Document, Source, StepRow, SyncStepMean
from .budget import limits
from .charts import bar_legend, stacked_bar
from .compute import compute_sentence, fmt_flops, op_flops_cell, roofline_sentence
from .escape import md, md_line_start
from .markdown_blocks import (
    FullNames,
    Lines,
    counted,
    details,
    fmt_rate,
    fmt_rate_bytes,
    fmt_ratio,
    folded_table,
    free_text,
    generic,
    per_second,
    table,
    text_bar,
)
from .sections import (
    STEP_TABLE_ROWS,
    copied_bytes,
    device_mean,
    gpu_count,
    gpu_equivalents_of,
    main_limiter,
    memcpy_checks,
    num,
    objects,
    occupancy_all_unmeasured,
    occupancy_unmeasured,
    ordered_host,
    step_digest,
)
from .units import fmt_bytes, fmt_ns, fmt_pct, plural
from .whatif_text import critical_path_line, is_run_replay, remedy_lines, replay_line, step_basis_line


def gpu_label(device: Device) -> str:
    """ "GPU 3", or "rank 1 GPU 3" in a multi-rank run document (device ids repeat across ranks)."""
    gpu = f"GPU {md(device.get('id'))}"
    return f"rank {md(device['rank'])} {gpu}" if device.get("rank") is not None else gpu


def _devices(doc: Document) -> Lines:
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        return []
    rows = [
        [
            gpu_label(d),
            md(d.get("name") or "-"),
            fmt_pct(d.get("utilization")),
            fmt_ns(d.get("busy_ns")),
            fmt_ns(d.get("span_ns")),
            num(d.get("kernel_count")),
            fmt_ns(d.get("kernel_ns")),
            f"{num(d.get('memcpy_count'))} / {fmt_ns(d.get('memcpy_ns'))}",
            f"{num(d.get('memset_count'))} / {fmt_ns(d.get('memset_ns'))}",
        ]
        for d in devices
    ]
    return [
        "",
        _heading("devices"),
        "",
        *table(
            [
                "GPU",
                "name",
                "utilization",
                "busy",
                "span",
                "kernels",
                "kernel time",
                "memcpy (n / time)",
                "memset (n / time)",
            ],
            rows,
            ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
        ),
    ]


def _kernels(doc: Document) -> Lines:
    kernels = doc.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("by_name"):
        return []
    names = FullNames()
    rows = [
        [
            str(i),
            names.cell(k["name"]),
            fmt_pct(k.get("time_fraction")),
            fmt_ns(k.get("total_ns")),
            num(k.get("count")),
            fmt_ns(k.get("avg_ns")),
            fmt_ns(k.get("median_ns")),
            fmt_ns(k.get("min_ns")),
            fmt_ns(k.get("max_ns")),
            fmt_ns(k.get("stdev_ns")),
        ]
        for i, k in enumerate(kernels["by_name"][: limits().max_rows], start=1)
    ]
    lines = [
        "",
        _heading("kernels"),
        "",
        f"{plural(kernels.get('count', 0), 'launch', 'launches')} of {plural(kernels.get('distinct_names', len(rows)), 'distinct kernel')}, "
        f"{fmt_ns(kernels.get('total_ns'))} summed; Time% is the share of summed kernel time.",
        "",
    ]
    lines.extend(
        folded_table(
            ["#", "kernel", "Time%", "total", "count", "avg", "median", "min", "max", "stdev"],
            rows,
            ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
            "kernels",
            total=len(kernels["by_name"]),
        )
    )
    return lines + names.block()


def _ops(doc: Document) -> Lines:
    ops = doc.get("ops")
    if not isinstance(ops, dict) or not ops.get("by_name"):
        return []
    names = FullNames()
    rows = [
        [
            str(i),
            names.cell(r["name"]),
            num(r.get("count")),
            fmt_ns(r.get("gpu_ns")),
            fmt_ns(r.get("copy_ns")),
            fmt_ns(r.get("cpu_ns")),
        ]
        for i, r in enumerate(ops["by_name"][: limits().max_rows], start=1)
    ]
    lines = [
        "",
        _heading("ops"),
        "",
        f"Kernel and copy time by the outermost framework op that launched it: "
        f"{fmt_ns(ops.get('attributed_kernel_ns'))} of {fmt_ns(ops.get('kernel_ns'))} kernel time attributed "
        f"over {num(ops.get('names'))} op names; {num(ops.get('unattributed_count'))} GPU ops launched outside "
        "any op.",
        "",
    ]
    for line in (compute_sentence(ops.get("compute"), md), roofline_sentence(ops.get("roofline"), md)):
        if line:
            lines.extend([line, ""])
    headers, align = (
        ["#", "op", "count", "kernel time", "copy time", "host time"],
        ["---:", "---", "---:", "---:", "---:", "---:"],
    )
    if any(r.get("flops") is not None for r in ops["by_name"]):  # shapes recorded: a FLOPs column
        headers, align = [*headers, "FLOPs"], [*align, "---:"]
        rows = [[*row, op_flops_cell(r.get("flops"))] for row, r in zip(rows, ops["by_name"], strict=False)]
    lines.extend(folded_table(headers, rows, align, "ops", total=len(ops["by_name"])))
    modules = [m for m in ops.get("by_module") or [] if isinstance(m, dict)]
    if modules:  # the trace records nn.Module rows
        lines.extend(
            ["", "By innermost `nn.Module` at the launch (self time; outer modules first in the path):", ""]
        )
        module_rows = [
            [
                str(i),
                names.cell(m["path"]),
                num(m.get("kernels")),
                fmt_ns(m.get("gpu_ns")),
                fmt_ns(m.get("copy_ns")),
                fmt_flops(m.get("flops")),
            ]
            for i, m in enumerate(modules[: limits().max_rows], start=1)
        ]
        lines.extend(
            folded_table(
                ["#", "module", "kernels", "kernel time", "copy time", "FLOPs"],
                module_rows,
                ["---:", "---", "---:", "---:", "---:", "---:"],
                "modules",
                total=len(modules),
            )
        )
    return lines + names.block()


def _memcpy(doc: Document) -> Lines:
    memcpy = doc.get("memcpy")
    if not isinstance(memcpy, dict):
        return []
    lines = ["", _heading("memcpy"), ""]
    by_kind = [k for k in memcpy.get("by_kind") or [] if isinstance(k, dict)]
    if not by_kind:
        return lines + ["No memory copies."]
    copied = copied_bytes(memcpy)
    lines.append(
        f"{counted(memcpy.get('count'), 'copy', 'copies')}"
        + (f", {fmt_bytes(copied)}, " if copied is not None else " of unknown size, ")
        + f"{fmt_ns(memcpy.get('duration_ns'))} summed; "
        f"{fmt_ns(memcpy.get('device_mean_exposed_ns'))} of copy time not overlapped by compute"
        + (" (per GPU, GPU-time weighted mean)." if len(doc.get("devices") or []) > 1 else ".")
    )
    lines.append("")
    rows = [
        [
            md(k.get("kind")),
            num(k.get("count")),
            fmt_bytes(copied_bytes(k)),
            fmt_ns(k.get("duration_ns")),
            fmt_ns(k.get("device_mean_exposed_ns")),
            fmt_rate_bytes(k.get("achieved_bytes_per_s", per_second(k.get("bytes"), k.get("duration_ns")))),
            fmt_rate_bytes(k.get("p50_bytes_per_s")),
            num(k.get("pageable_count")),
            f"{num(k.get('sync_count'))} / {num(k.get('async_count'))}",
            num(k.get("small_count")),
        ]
        for k in by_kind
    ]
    lines.extend(
        table(
            [
                "direction",
                "count",
                "bytes",
                "time",
                "exposed (GPU mean)",
                "bandwidth",
                "median copy bandwidth",
                "pageable",
                "sync / async",
                "small (< 64 KiB)",
            ],
            rows,
            ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
        )
    )
    links = []
    for dev in memcpy.get("per_device") or []:
        for k in (dev.get("by_kind") or []) if isinstance(dev, dict) else []:
            if isinstance(k, dict) and k.get("expected_bytes_per_s"):
                links.append(
                    [
                        md(dev.get("device")),
                        md(k.get("kind")),
                        fmt_rate_bytes(k.get("achieved_bytes_per_s")),
                        fmt_rate_bytes(k.get("large_achieved_bytes_per_s")),
                        fmt_rate_bytes(k.get("expected_bytes_per_s")),
                        fmt_pct(k.get("achieved_fraction")),
                        md(k.get("expected_link") or "-"),
                        md(k.get("expected_source") or "-"),
                    ]
                )
    if links:
        lines.extend(["", "Achieved vs expected link bandwidth (large copies: ≥ 1 MiB):", ""])
        lines.extend(
            table(
                [
                    "GPU",
                    "direction",
                    "achieved",
                    "achieved (large copies)",
                    "expected",
                    "fraction",
                    "link",
                    "expected from",
                ],
                links,
                ["---", "---", "---:", "---:", "---:", "---:", "---", "---"],
            )
        )
    host = memcpy.get("host_memory")
    if isinstance(host, dict):
        lines.extend(
            [
                "",
                f"Host memory of copies: {num(host.get('pageable_count'))} pageable, "
                f"{num(host.get('pinned_count'))} pinned, {num(host.get('managed_count'))} managed, "
                f"{num(host.get('unknown_count'))} unknown (basis: {md(host.get('basis') or '-')}).",
            ]
        )
    small = memcpy.get("small_copies")
    if isinstance(small, dict) and small.get("count"):
        lines.extend(
            [
                "",
                f"Small copies (< {fmt_bytes(small.get('threshold_bytes'))}): {num(small.get('count'))}, "
                f"{fmt_ns(small.get('duration_ns'))}; {counted(small.get('burst_count'), 'burst')} holding "
                f"{counted(small.get('burst_copy_count'), 'copy', 'copies')}.",
            ]
        )
    src: Source | dict[str, Any] = doc.get("source") or {}
    checks = memcpy_checks(memcpy, src.get("framework"))
    if checks:
        lines.append("")
        lines.extend(
            f"- {md_line_start(text)}" + (f" Fix: {free_text(fix)}" if fix else "") for text, fix in checks
        )
    return lines


def _sync(doc: Document) -> Lines:
    sync = doc.get("sync")
    if not isinstance(sync, dict) or not isinstance(sync.get("blocking"), dict):
        return section_generic("sync")(doc)
    blocking = sync["blocking"]
    lines = ["", _heading("sync"), ""]
    per_step: SyncStepMean | dict[str, Any] = sync.get("per_step_mean") or {}
    lines.append(
        f"- Blocking host syncs: {counted(blocking.get('count'), 'call')}, {fmt_ns(blocking.get('total_ns'))}"
        + (
            f"; per step {counted(per_step.get('count'), 'call')}, {fmt_ns(per_step.get('total_ns'))}"
            if per_step
            else ""
        )
    )
    item = sync.get("item_pattern") or {}
    if item:
        lines.append(
            f"- `.item()` / `.cpu()` pattern (small device-to-host copy, ≤ {fmt_bytes(item.get('max_bytes'))},"
            f" with a blocking wait): {counted(item.get('count'), 'time')}, {fmt_ns(item.get('wait_ns'))} waited"
        )
    if sync.get("stream_wait_event_calls") is not None:
        lines.append(f"- Stream-wait-event calls: {num(sync.get('stream_wait_event_calls'))}")
    names = FullNames()
    by_name = [b for b in blocking.get("by_name") or [] if isinstance(b, dict)]
    if by_name:
        lines.append("")
        lines.extend(
            table(
                ["blocking call", "count", "total"],
                [
                    [names.cell(b.get("name")), num(b.get("count")), fmt_ns(b.get("total_ns"))]
                    for b in by_name
                ],
                ["---", "---:", "---:"],
            )
        )
    ops = [o for o in item.get("top_ops") or [] if isinstance(o, dict)]
    if ops:
        lines.extend(["", "Ops ending in a `.item()`-style sync:", ""])
        lines.extend(
            table(
                ["op", "count"],
                [[names.cell(o.get("name")), num(o.get("count"))] for o in ops],
                ["---", "---:"],
            )
        )
    waits = [w for w in sync.get("gpu_waits") or [] if isinstance(w, dict)]
    if waits:
        lines.extend(["", "GPU-side sync records:", ""])
        lines.extend(
            table(
                ["kind", "count", "total"],
                [[md(w.get("sync_kind")), num(w.get("count")), fmt_ns(w.get("total_ns"))] for w in waits],
                ["---", "---:", "---:"],
            )
        )
    return lines + names.block()


def _occupancy_totals(occ: Mapping[str, Any], mean: Callable[[str], str], gpus: int) -> str:
    return (
        f"{num(occ.get('computed_count'))} of {counted(occ.get('kernel_count'), 'kernel')} with a computed "
        f"occupancy; low means below {fmt_pct(occ.get('low_threshold'))}. Lost time is GPU time with SMs "
        f"left empty by grids smaller than the SM count or by block shapes that cap occupancy: "
        f"{mean('lost_ns')}{' per GPU (GPU-time weighted mean)' if gpus > 1 else ''} "
        f"({mean('under_filled_lost_ns')} under-filled, {mean('block_shape_lost_ns')} block shape). Occupancy limited by registers or shared "
        "memory is shown but not counted: tuned GEMM and convolution kernels run there on purpose."
    )


def _occupancy(doc: Document) -> Lines:
    occ = doc.get("occupancy")
    if not isinstance(occ, dict) or "per_device" not in occ:
        return section_generic("occupancy")(doc)
    lines = ["", _heading("occupancy"), ""]
    # The section's totals sum the GPUs: shown as device-means (the diagnosis' low_occupancy loss) with several.
    gpus, weight = gpu_count(doc), gpu_equivalents_of(doc)

    def mean(key: str) -> str:
        return fmt_ns(device_mean(occ.get(key), weight))

    if occupancy_all_unmeasured(occ):  # nothing known: a "0 ns lost" would be no measurement
        lines.append(
            f"0 of {counted(occ.get('kernel_count'), 'kernel')} with a computed occupancy: no occupancy loss "
            "can be measured (why, per GPU, below)."
        )
    else:
        lines.append(_occupancy_totals(cast("Mapping[str, Any]", occ), mean, gpus))
    devices = [d for d in occ.get("per_device") or [] if isinstance(d, dict)]
    if devices:
        lines.append("")
        rows = []
        for d in devices:
            top = main_limiter(d.get("limiter_ns"))
            rows.append(
                [
                    md(d.get("device")),
                    md(d.get("name") or "-"),
                    md(d.get("compute_capability") or "-"),
                    num(d.get("sm_count")),
                    fmt_pct(d.get("time_weighted_theoretical")),
                    fmt_pct(d.get("time_weighted_estimated_achieved")),
                    fmt_pct(d.get("time_weighted_reported")),
                    *(
                        ["-"] * 5  # nothing computed on this GPU: no time measured
                        if occupancy_unmeasured(d)
                        else [
                            fmt_ns(cast("int | None", d.get(key)))
                            for key in (
                                "low_ns",
                                "register_or_shared_limited_ns",
                                "under_filled_ns",
                                "block_shape_limited_ns",
                                "lost_ns",
                            )
                        ]
                    ),
                    md(top or "-"),
                    md(d.get("not_computed_reason") or ""),
                ]
            )
        lines.extend(
            table(
                [
                    "GPU",
                    "name",
                    "cc",
                    "SMs",
                    "theoretical",
                    "est. achieved",
                    "reported",
                    "low-occupancy time",
                    "register/shared-limited time",
                    "under-filled time",
                    "block-shape-limited time",
                    "lost",
                    "main limiter",
                    "not computed because",
                ],
                rows,
                [
                    "---",
                    "---",
                    "---",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---",
                    "---",
                ],
            )
        )
    kernels = [k for k in occ.get("top_low_occupancy_kernels") or [] if isinstance(k, dict)]
    if kernels:
        names = FullNames()
        rows = [
            [
                names.cell(k.get("name")),
                md(k.get("device")),
                num(k.get("count")),
                fmt_ns(k.get("total_ns")),
                fmt_ns(k.get("lost_ns")),
                fmt_pct(k.get("sm_fill")),
                fmt_ratio(k.get("grid_blocks")),
                fmt_pct(k.get("occupancy")),
                fmt_pct(k.get("shape_occupancy")),
                md(k.get("limiter") or "-"),
                num(k.get("threads_per_block")),
                num(k.get("registers_per_thread")),
                fmt_bytes(k.get("shared_bytes_per_block")),
            ]
            for k in kernels[: limits().max_rows]
        ]
        lines.extend(["", "Kernels leaving the most SM time empty (each launch as if it ran alone):", ""])
        lines.extend(
            folded_table(
                [
                    "kernel",
                    "GPU",
                    "count",
                    "total",
                    "lost",
                    "SM fill",
                    "grid blocks",
                    "est. achieved",
                    "shape allows",
                    "limiter",
                    "threads/block",
                    "regs/thread",
                    "shared/block",
                ],
                rows,
                [
                    "---",
                    "---",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---:",
                    "---",
                    "---:",
                    "---:",
                    "---:",
                ],
                "kernels",
                total=len(kernels),
            )
        )
        lines.extend(names.block())
    missing = [n for n in occ.get("not_computed") or [] if isinstance(n, dict)]
    if missing:
        lines.append("")
        lines.extend(
            f"- Not computed for {counted(n.get('kernel_count'), 'kernel')} on GPU {md(n.get('device'))}: "
            f"{md(n.get('reason'))}"
            for n in missing
        )
    return lines


def _ranges(doc: Document) -> Lines:
    ranges = doc.get("ranges")
    if not isinstance(ranges, dict) or not isinstance(ranges.get("ranges"), list):
        return section_generic("ranges")(doc)
    lines = ["", _heading("ranges"), ""]
    rows_in = [r for r in ranges["ranges"] if isinstance(r, dict)]
    if not rows_in:
        return lines + ["No annotation ranges in this trace."]
    lines.append(
        f"{counted(ranges.get('count'), 'range instance')} of {counted(ranges.get('names'), 'name')}. GPU work belongs "
        "to a range when its launch call lies inside it on the same thread; projected = first op start to "
        "last op end."
    )
    lines.append("")
    names = FullNames()
    rows = [
        [
            names.cell(r.get("name")),
            num(r.get("count")),
            fmt_ns(r.get("cpu_ns")),
            num(r.get("gpu_ops")),
            fmt_ns(r.get("gpu_op_ns")),
            fmt_ns(r.get("projected_ns")),
            fmt_ns(r.get("gpu_idle_ns")),
        ]
        for r in rows_in[: limits().max_rows]
    ]
    lines.extend(
        folded_table(
            ["range", "count", "CPU time", "GPU ops", "GPU op time", "projected GPU span", "GPU idle inside"],
            rows,
            ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
            "ranges",
            total=len(rows_in),
        )
    )
    return lines + names.block()


def _gaps(doc: Document) -> Lines:
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    if not isinstance(devices, list):
        return section_generic("gaps")(doc)
    lines = ["", _heading("gaps"), ""]
    if not devices:
        return lines + ["No GPU activity, so no GPU gaps."]
    for d in devices:
        idle = d.get("idle_ns") or 0
        lines.append(
            f"**GPU {md(d.get('device'))}:** {counted(d.get('gap_count'), 'gap')}, {fmt_ns(idle)} idle of "
            f"{fmt_ns(d.get('span_ns'))} span."
        )
        lines.append("")
        histogram = [h for h in d.get("histogram") or [] if isinstance(h, dict)]
        if histogram:
            rows = [
                [
                    md(h.get("bucket")),
                    num(h.get("count")),
                    fmt_ns(h.get("total_ns")),
                    fmt_pct((h.get("total_ns") or 0) / idle) if idle else "-",
                    text_bar((h.get("total_ns") or 0) / idle if idle else 0.0),
                ]
                for h in histogram
            ]
            lines.extend(
                table(
                    ["gap length", "count", "idle time", "share of idle", ""],
                    rows,
                    ["---", "---:", "---:", "---:", "---"],
                )
            )
        largest = [g for g in d.get("largest") or [] if isinstance(g, dict)]
        if largest:
            lines.extend(
                details(
                    f"GPU {d.get('device')}: {len(largest)} longest gaps",
                    table(
                        ["starts at", "duration"],
                        [[fmt_ns(g.get("start_ns")), fmt_ns(g.get("duration_ns"))] for g in largest],
                        ["---:", "---:"],
                    ),
                )
            )
        lines.append("")
    return lines


def _steps(doc: Document) -> Lines:
    steps = doc.get("steps")
    if not isinstance(steps, dict) or "summary" not in steps:
        return section_generic("steps")(doc)
    lines = ["", _heading("steps"), ""]
    summary = steps.get("summary")
    if not steps.get("count") or not isinstance(summary, dict):
        return lines + ["No step markers in this trace (ProfilerStep#N, TF steps or `tracelens/step#N`)."]
    count = steps["count"]
    lines.append(
        f"{plural(count, 'step')}: mean {fmt_ns(summary.get('mean_ns'))}, median {fmt_ns(summary.get('median_ns'))}, "
        f"min {fmt_ns(summary.get('min_ns'))}, max {fmt_ns(summary.get('max_ns'))}. Host time of the "
        "step threads by category (overlaps go to the first category listed):"
    )
    lines.append("")
    host_ns = summary.get("host_ns") or {}
    share = summary.get("host_share") or {}
    rows = [
        [
            md(k),
            fmt_ns(host_ns[k]),
            fmt_ns(host_ns[k] / count),
            fmt_pct(share.get(k)),
            text_bar(share.get(k) or 0.0),
        ]
        for k in ordered_host(host_ns)
    ]
    lines.extend(
        table(
            ["category", "total", "mean per step", "share of step time", ""],
            rows,
            ["---", "---:", "---:", "---:", "---"],
        )
    )
    gpu = [g for g in summary.get("gpu_busy") or [] if isinstance(g, dict)]
    if gpu:
        lines.append("")
        lines.extend(
            table(
                ["GPU", "busy within steps", "busy / step time"],
                [[md(g.get("device")), fmt_ns(g.get("busy_ns")), fmt_pct(g.get("utilization"))] for g in gpu],
                ["---", "---:", "---:"],
            )
        )
    listed = [r for r in steps.get("steps") or [] if isinstance(r, dict)]
    if listed:
        keys = ordered_host((listed[0].get("host") or {}).keys())
        header = ["step", "start", "duration", *keys, "GPU busy"]

        def step_rows(chosen: list[StepRow]) -> list[list[str]]:
            return [
                [
                    md(r.get("step")),
                    fmt_ns(r.get("start_ns")),
                    fmt_ns(r.get("duration_ns")),
                    *[fmt_ns((r.get("host") or {}).get(k)) for k in keys],
                    fmt_ns(sum(g.get("busy_ns") or 0 for g in r.get("gpu_busy") or [])),
                ]
                for r in chosen
            ]

        align = ["---:"] * len(header)
        more = f" (first {len(listed):,} of {count:,})" if len(listed) < count else ""
        if len(listed) <= STEP_TABLE_ROWS:
            lines.extend(details(f"Per step{more}", table(header, step_rows(listed), align)))
        else:
            lines.extend(_step_digest(listed, more))
            slowest = step_digest(listed)["slowest"]
            lines.extend(
                details(f"The {len(slowest)} slowest steps", table(header, step_rows(slowest), align))
            )
    return lines


OUTLIERS_NAMED = 20  # outlier steps named in the per-step digest (more steps than STEP_TABLE_ROWS)


def _step_digest(listed: list[StepRow], more: str) -> Lines:
    digest = step_digest(listed)
    outliers = digest["outliers"]
    named = ", ".join(md(r.get("step")) for r in outliers[:OUTLIERS_NAMED])
    if len(outliers) > OUTLIERS_NAMED:
        named += f" and {len(outliers) - OUTLIERS_NAMED:,} more"
    return [
        "",
        f"Per step{more}: {len(listed):,} steps, too many to list here (the JSON output has each). "
        f"Duration p50 {fmt_ns(digest['p50_ns'])}, p90 {fmt_ns(digest['p90_ns'])}, "
        f"p99 {fmt_ns(digest['p99_ns'])}, max {fmt_ns(digest['max_ns'])}; "
        + (
            f"{plural(len(outliers), 'outlier')} longer than {fmt_ns(digest['fence_ns'])} "
            f"(Q3 + 1.5 × IQR): step{'s' if len(outliers) != 1 else ''} {named}."
            if outliers
            else f"no outliers (none longer than {fmt_ns(digest['fence_ns'])}, Q3 + 1.5 × IQR)."
        ),
    ]


def _attribution(doc: Document) -> Lines:
    attribution = doc.get("attribution")
    if not isinstance(attribution, dict) or not isinstance(attribution.get("devices"), list):
        return section_generic("attribution")(doc)
    devices = attribution["devices"]
    lines = ["", _heading("attribution"), ""]
    if not devices:
        return lines + ["No GPU activity, so no idle time to attribute."]
    causes = list(attribution.get("priority") or (devices[0].get("by_cause") or {}).keys())
    lines.append(
        "What the host threads feeding each GPU were doing during its idle gaps (overlapping activity "
        f"goes to the first of: {', '.join(md(c) for c in causes)})."
    )
    lines.append("")
    rows = []
    for d in devices:
        idle = d.get("idle_ns") or 0
        by_cause = d.get("by_cause") or {}
        cells = [
            f"{fmt_ns(by_cause.get(c))} ({fmt_pct(by_cause.get(c, 0) / idle) if idle else '-'})"
            for c in causes
        ]
        late = d.get("late_launch") or {}
        rows.append(
            [
                md(d.get("device")),
                fmt_ns(idle),
                *cells,
                f"{num(late.get('count'))} / {fmt_ns(late.get('idle_ns'))}",
            ]
        )
    lines.extend(
        table(
            ["GPU", "idle", *[md(c) for c in causes], "gaps ended by a late launch (n / idle)"],
            rows,
            ["---"] + ["---:"] * (len(causes) + 2),
        )
    )
    return lines


def _launch(doc: Document) -> Lines:
    launch = doc.get("launch")
    if not isinstance(launch, dict) or not isinstance(launch.get("latency"), dict):
        return section_generic("launch")(doc)
    lat = launch["latency"]
    lines = ["", _heading("launch"), ""]
    lines.append(
        f"{num(launch.get('matched_ops'))} of {num(launch.get('gpu_ops'))} GPU ops matched to their "
        "launch call. Launch latency = GPU start − launch call end (clipped at 0)"
        + (
            f", per call ({num(lat.get('count'))}): its first GPU op's (a graph launch's later ops wait behind "
            "its earlier ones):"
            if isinstance(launch.get("matched_ops"), int) and launch["matched_ops"] > (lat.get("count") or 0)
            else ":"
        )
    )
    lines.append("")
    lines.extend(
        table(
            ["launches", "mean", "p50", "p90", "p99", "max", "negative (clock skew)"],
            [
                [
                    num(lat.get("count")),
                    fmt_ns(lat.get("mean_ns")),
                    fmt_ns(lat.get("p50_ns")),
                    fmt_ns(lat.get("p90_ns")),
                    fmt_ns(lat.get("p99_ns")),
                    fmt_ns(lat.get("max_ns")),
                    num(lat.get("negative_count")),
                ]
            ],
            ["---:"] * 7,
        )
    )
    small = launch.get("small_kernels") or {}
    short = launch.get("short_kernels") or {}
    rates = launch.get("rates") or {}
    graphs = launch.get("cuda_graphs") or {}
    lines.append("")
    if small:
        lines.append(
            f"- Kernels under {fmt_ns(small.get('threshold_ns'))}: {num(small.get('count'))}, "
            f"{fmt_ns(small.get('kernel_ns'))} = {fmt_pct(small.get('share'))} of kernel time"
        )
    if short:
        lines.append(
            f"- Kernels shorter than their launch call: {num(short.get('count'))} of "
            f"{num(short.get('of_matched_kernels'))} matched"
        )
    if rates:
        issue, execution = rates.get("issue_per_s"), rates.get("execution_per_s")
        ratio = rates.get("issue_to_execution")
        # the ratio compares the GPU ops the calls enqueued: more than one per call where graph launches are
        gpus = rates.get("gpus") or 1.0  # (the ratio is against the GPUs' joint rate)
        issued = ratio * execution * gpus if ratio is not None and execution else None
        per_call = (
            f" (GPU ops enqueued {fmt_rate(issued)})"
            if issued is not None and issue and abs(issued - issue) > 0.01 * issue
            else ""
        )
        joint = f" per GPU x {gpus:.2f} GPUs" if abs(gpus - 1) > 0.005 else ""
        lines.append(
            f"- Launch rate {fmt_rate(issue)}{per_call} vs execution rate {fmt_rate(execution)}{joint} (ratio "
            f"{fmt_ratio(ratio)})"
        )
    if graphs:
        lines.append(
            f"- CUDA/HIP graphs: {'in use' if graphs.get('in_use') else 'not used'} "
            f"({num(graphs.get('graph_launch_calls'))} graph launches, {num(graphs.get('graph_ops'))} "
            "ops from graphs)"
        )
    queues = [q for q in launch.get("queue_depth") or [] if isinstance(q, dict)]
    if queues:
        lines.extend(
            details(
                f"Queue depth on {plural(len(queues), 'stream')}",
                table(
                    ["GPU", "stream", "max", "mean", "ops"],
                    [
                        [
                            md(q.get("device")),
                            md(q.get("stream")),
                            num(q.get("max")),
                            f"{q.get('mean') or 0:.2f}",
                            num(q.get("ops")),
                        ]
                        for q in queues
                    ],
                    ["---", "---", "---:", "---:", "---:"],
                ),
            )
        )
    return lines


def section_generic(key: str, title: str | None = None) -> Callable[[Document], Lines]:
    def render(doc: Document) -> Lines:
        value = cast(Mapping[str, Any], doc).get(key)  # any key: the generic form reads plain JSON
        if key not in doc or value in (None, {}, []):
            return []
        body = generic(value)
        heading = f"## {title}" if title is not None else _heading(key)
        return ["", heading, "", *body] if body else []

    return render


def _host(doc: Document) -> Lines:
    host = doc.get("host")
    if not isinstance(host, dict) or not host.get("top"):
        return []
    names = FullNames()
    rows = [
        [md(r.get("kind")), names.cell(r.get("name")), num(r.get("count")), fmt_ns(r.get("total_ns"))]
        for r in host["top"]
    ]
    body = table(["kind", "name", "count", "total"], rows, ["---", "---", "---:", "---:"]) + names.block()
    return details(
        f"Host side: span {fmt_ns(host.get('span_ns'))}, {plural(host.get('threads') or 0, 'thread')}, "
        "top names by time",
        body,
    )


def _heading(key: str) -> str:
    return f"## {BY_KEY[key].title}"


def _communication(doc: Document) -> Lines:
    comm = doc.get("communication")
    devices = objects(comm.get("devices")) if comm else []
    if not comm or not devices:
        return []
    lines = [
        "",
        "## Communication and the GPU time breakdown",
        "",
        f"{num(comm.get('collective_count'))} collective kernels or ops (NCCL/RCCL, XLA). Each GPU's span "
        f"split into parts that add up to it: {md(bar_legend())}.",
        "",
    ]
    rows = []
    for d in devices:
        b = d.get("breakdown") or {}
        rows.append(
            [
                md(d.get("device")),
                f"`{stacked_bar(b)}`",
                fmt_ns(b.get("span_ns")),
                fmt_ns(b.get("computation_only_ns")),
                fmt_ns(b.get("communication_overlapped_ns")),
                fmt_ns(b.get("communication_exposed_ns")),
                fmt_ns(b.get("memcpy_exposed_ns")),
                fmt_ns(b.get("idle_ns")),
                num(d.get("collective_count")),
                fmt_pct(d.get("overlap_share")),
            ]
        )
    lines.extend(
        table(
            [
                "GPU",
                "breakdown",
                "span",
                "computation only",
                "comm. overlapped",
                "comm. exposed",
                "copies not overlapped",
                "idle",
                "collectives",
                "overlapped share",
            ],
            rows,
            ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
        )
    )
    kinds = [
        [
            md(d.get("device")),
            md(t.get("type")),
            num(t.get("count")),
            fmt_ns(t.get("time_ns")),
            fmt_ns(t.get("exposed_ns")),
            fmt_bytes(t.get("bytes")) if t.get("bytes") is not None else "-",
            fmt_rate_bytes(t.get("algbw_bytes_per_s")),
            fmt_rate_bytes(t.get("busbw_bytes_per_s")),
        ]
        for d in devices
        for t in d.get("by_type") or []
    ]
    if kinds:
        lines.extend(
            [
                "",
                "Collectives by type (bandwidths as nccl-tests defines them, over the collectives with a "
                "recorded message size):",
                "",
            ]
        )
        lines.extend(
            table(
                ["GPU", "type", "count", "time", "exposed", "bytes", "algbw", "busbw"],
                kinds,
                ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"],
            )
        )
    return lines


def _whatif(doc: Document) -> Lines:
    remedies = remedy_lines(doc)
    others = [line for line in (critical_path_line(doc), replay_line(doc), step_basis_line(doc)) if line]
    if not remedies and not others:
        return []
    what = (
        "The run's ranks' dependency graphs, joined at their collectives, replayed with each cause's remedy applied"
        if is_run_replay(doc)
        else "The trace's dependency graph replayed with each cause's remedy applied"
    )
    lines = [
        "",
        _heading("whatif"),
        "",
        f"{what} (assumptions in the JSON output, `whatif.remedies[].assumptions`):",
        "",
    ]
    lines.extend(f"- {md(line)}" for line in remedies or ["no remedy gains time"])
    lines.extend(["", *(md(line) + "  " for line in others)])
    return lines


# Drawing functions by section key; the order, titles and GPU-only flags come from the section registry
# (tracelens.analyses.REGISTRY). A section without one here gets the generic renderer.
DRAW: dict[str, Callable[[Document], Lines]] = {
    "communication": _communication,
    "ops": _ops,
    "devices": _devices,
    "steps": _steps,
    "gaps": _gaps,
    "attribution": _attribution,
    "kernels": _kernels,
    "launch": _launch,
    "sync": _sync,
    "memcpy": _memcpy,
    "occupancy": _occupancy,
    "ranges": _ranges,
    "host": _host,
    "whatif": _whatif,
}
