"""Terminal summary, drawn with rich at the terminal's width (at least 80 columns).

Order: source, diagnosis (primary cause, lost time, fix), the summary's headline figures, GPUs, steps, gap histogram, top kernels,
memcpy, occupancy, ranges, host; any other section of the document as a compact key/value list.
Sections absent from the document are skipped. Names from the traced program are shown as plain
``Text`` (never parsed as rich markup) with control characters removed.

Nothing is cut: text wraps at the width, and tables give way by wrapping their cells (a number stays
with its unit on one line); kernel and op names are shortened so that rows stay distinct
(:func:`tracelens.report.names.distinct_short_names`), or shown whole with ``full_names``. The layout (tables
that give way to the width, wrapped text) is :mod:`tracelens.report.terminal_layout`; the values both
renderers read from the document are :mod:`tracelens.report.sections`.

About 670 lines as `ruff format` lays them out (under 500 before): one module on purpose, one drawing function
per section beside the registry's order, as the markdown renderer has them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from typing import IO, Any, cast

from rich.console import Console
from rich.text import Text

from ..analyses import report_sections
from ..document import summary_of
from ..document.types import Document, RunDocument, Source
from .compute import compute_sentence, fmt_flops, op_flops_cell, roofline_sentence
from .escape import terminal as clean
from .ranks import RANK_COLUMNS, RUN_KEYS, rank_cells, summary_items
from .sections import (
    bandwidth,
    busy_sentence,
    caveats,
    copied_bytes,
    device_label,
    device_mean,
    gpu_count,
    gpu_equivalents_of,
    main_limiter,
    num,
    objects,
    occupancy_all_unmeasured,
    other_causes,
    primary_kind,
    primary_of,
    producer,
    sentence,
    step_host_means,
    summary_means,
    summary_parts,
)
from .sections import summary_value as summary_value  # tests/test_terminal_width.py reads it here
from .terminal_layout import (
    FULL_NAMES,
    MIN_WIDTH,
    NAME_WIDTH,
    WIDTH,
    draw_table,
    draw_text,
    finish,
    new_console,
    new_table,
    print_text,
)
from .units import fmt_auto, fmt_bytes, fmt_ns, fmt_pct, plural
from .whatif_text import critical_path_line, remedy_lines, replay_line, step_basis_line

__all__ = [
    "DRAW",
    "HANDLED",
    "MIN_WIDTH",
    "WIDTH",
    "draw_table",
    "draw_text",
    "finish",
    "new_console",
    "render",
    "summary_value",
    "terminal_width",
]

TOP_ROWS = 10

Draw = Callable[[Document, Console], None]


def terminal_width(stream: IO[str] | None) -> int:
    """The width to draw at: ``COLUMNS`` when set, else the terminal's width when ``stream`` (the output:
    stdout, or None for a file) is one, else :data:`WIDTH`; never below :data:`MIN_WIDTH`."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_WIDTH, int(columns))
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns)
    return WIDTH


def _t(value: Any, limit: int | None = None) -> Text:
    return Text(clean(value if value is not None else "-", limit))


def _names(values: list[Any]) -> list[Text]:
    """Name cells, cleaned; the table shortens them to its room (:meth:`Rows.shorten_names`)."""
    return [Text(clean(v if v is not None else "-")) for v in values]


def _source(doc: Document, console: Console) -> None:
    src: Source | dict[str, Any] = doc.get("source") or {}
    made_by = producer(src)
    head = Text(clean(src.get("path") or "trace"), style="bold")
    events = src.get("event_count")
    head.append(
        clean(
            f"  ({src.get('format', '?')}{', ' + made_by if made_by else ''}"
            f"{', ' + format(events, ',') + ' events' if isinstance(events, int) else ''})"
        )
    )
    console.print(head, highlight=False)
    for warning in src.get("warnings") or []:
        print_text(console, f"warning: {warning}", style="yellow")


def _headline(doc: Document, console: Console) -> None:
    """Every figure of the document's ``summary`` (the JSON output's headline) in one paragraph, each whole."""
    parts = summary_parts(doc)
    if not parts:
        return
    console.print()
    print_text(
        console,
        f"Summary{' (times per GPU, GPU-time weighted mean)' if summary_means(doc) else ''}: "
        + "; ".join(parts),
        indent="",
    )


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(
            f"{k}: {_plain(v) if isinstance(v, (list, dict)) else fmt_auto(k, v)}" for k, v in value.items()
        )
    if isinstance(value, list):
        return "; ".join(_plain(v) for v in value)
    return value if isinstance(value, str) else fmt_auto("", value)


def _diagnosis(doc: Document, console: Console) -> None:
    primary = primary_of(doc)
    if primary is None:
        return
    console.print()
    diagnosis = doc["diagnosis"]
    cause = primary.get("cause")
    kind = primary_kind(primary)
    if kind == "healthy":
        print_text(console, f"Diagnosis: {cause}. {sentence(primary, diagnosis)}", style="green", indent="")
    elif kind == "cannot_answer":
        print_text(
            console, f"Diagnosis: {cause}. {sentence(primary, diagnosis)}", style="bold yellow", indent=""
        )
        if primary.get("fix"):
            print_text(console, f"fix: {_plain(primary['fix'])}", style="cyan", indent="  ")
    else:
        line = Text("Diagnosis: ", style="bold")
        line.append(clean(cause), style="bold red")
        line.append(
            clean(f"  lost {fmt_ns(primary.get('lost_ns'))} ({fmt_pct(primary.get('share'))} of span)")
        )
        console.print(line, highlight=False)
        print_text(console, sentence(primary, diagnosis), indent="  ")
        if primary.get("fix"):
            print_text(console, f"fix: {_plain(primary['fix'])}", style="cyan", indent="  ")
    others = other_causes(diagnosis, primary)
    for c in others[:ALSO_LISTED] + [
        c for c in others[ALSO_LISTED:] if (c.get("share") or 0) >= ALSO_MIN_SHARE
    ]:
        print_text(
            console,
            f"also: {c.get('cause')} {fmt_ns(c.get('lost_ns'))} ({fmt_pct(c.get('share'))}): "
            f"{sentence(c, diagnosis)}",
            indent="  ",
        )
    for caveat in caveats(diagnosis):
        print_text(console, f"caveat: {caveat}", style="yellow", indent="  ")


# The causes after the primary the summary lists: the first ALSO_LISTED in rank order, and any later one that still
# lost ALSO_MIN_SHARE of the span (the replay can rank a cause low, e.g. exposed collectives on a trace whose
# critical path is on the host, but its idle time is still worth a line; the markdown report lists them all).
ALSO_LISTED = 4
ALSO_MIN_SHARE = 0.01


def _devices(doc: Document, console: Console) -> None:
    devices = doc.get("devices")
    if devices is None:
        return
    console.print()
    if not devices:
        print_text(
            console,
            "No GPU activity in this trace (no kernels, copies or memsets); host side below.",
            style="yellow",
        )
        return
    named = any(d.get("name") for d in devices)  # a name column only when the trace names some device
    busy = busy_sentence(doc)
    table = new_table(
        busy + (f" (over {plural(len(devices), 'GPU')}, GPU-time weighted)" if len(devices) > 1 else ""),
        [
            "GPU",
            "util",
            "busy",
            "span",
            "kernels",
            "kernel time",
            "memcpy n/time",
            "memset n/time",
            *(["name"] if named else []),
        ],
        {"util", "busy", "span", "kernels", "kernel time", "memcpy n/time", "memset n/time"},
    )
    for d in devices:
        table.add_row(
            _t(device_label(d)),
            fmt_pct(d.get("utilization")),
            fmt_ns(d.get("busy_ns")),
            fmt_ns(d.get("span_ns")),
            num(d.get("kernel_count")),
            fmt_ns(d.get("kernel_ns")),
            f"{num(d.get('memcpy_count'))}/{fmt_ns(d.get('memcpy_ns'))}",
            f"{num(d.get('memset_count'))}/{fmt_ns(d.get('memset_ns'))}",
            *([_t(d.get("name") or "-")] if named else []),
        )
    console.print(table.rich(console.width))


def _steps(doc: Document, console: Console) -> None:
    if "steps" not in doc:
        return
    stats = summary_of(doc)["steps"]
    console.print()
    if not stats:
        print_text(console, "Steps: no step markers in this trace.")
        return
    print_text(
        console,
        f"Steps: {stats['count']:,}, mean {fmt_ns(stats['mean_ns'])}, min {fmt_ns(stats['min_ns'])}, "
        f"max {fmt_ns(stats['max_ns'])}",
    )
    breakdown = step_host_means(doc)
    if breakdown:
        print_text(console, "  per step (mean): " + ", ".join(f"{k} {fmt_ns(v)}" for k, v in breakdown))


def _attribution(doc: Document, console: Console) -> None:
    attribution = doc.get("attribution")
    if not isinstance(attribution, dict) or not attribution.get("devices"):
        return
    devices = attribution["devices"]
    causes = list(attribution.get("priority") or (devices[0].get("by_cause") or {}).keys())
    console.print()
    table = new_table(
        "GPU idle time by cause (what the feeding host threads did)",
        ["GPU", "idle", *causes],
        {"idle", *causes},
    )
    for d in devices:
        idle = d.get("idle_ns") or 0
        by_cause = d.get("by_cause") or {}
        table.add_row(
            _t(d.get("device")),
            fmt_ns(idle),
            *[
                f"{fmt_ns(by_cause.get(c))} {fmt_pct(by_cause.get(c, 0) / idle) if idle else ''}".strip()
                for c in causes
            ],
        )
    console.print(table.rich(console.width))


def _matched(launch: Mapping[str, Any], lat: Mapping[str, Any]) -> str:
    """ "N matched"; "N GPU ops matched to M calls" where graph launches enqueue several ops per call (the latency
    is then per call: its first op's)."""
    ops, calls = launch.get("matched_ops"), lat.get("count")
    if isinstance(ops, int) and isinstance(calls, int) and ops > calls:
        return f"{num(ops)} GPU ops matched to {num(calls)} calls"
    return f"{num(calls)} matched"


def _launch(doc: Document, console: Console) -> None:
    launch = doc.get("launch")
    if not isinstance(launch, dict):
        return
    lat = launch.get("latency")
    if not isinstance(lat, dict) or not lat.get("count"):
        return
    console.print()
    print_text(
        console,
        f"Launches: {_matched(launch, lat)}, latency p50 {fmt_ns(lat.get('p50_ns'))}, "
        f"p90 {fmt_ns(lat.get('p90_ns'))}, p99 {fmt_ns(lat.get('p99_ns'))}, max {fmt_ns(lat.get('max_ns'))}",
    )
    small = launch.get("small_kernels") or {}
    short = launch.get("short_kernels") or {}
    graphs = launch.get("cuda_graphs") or {}
    print_text(
        console,
        f"  kernels < {fmt_ns(small.get('threshold_ns'))}: {num(small.get('count'))} "
        f"({fmt_pct(small.get('share'))} of kernel time); shorter than their launch: "
        f"{num(short.get('count'))}; CUDA graphs: {'yes' if graphs.get('in_use') else 'no'}",
    )


def _gaps(doc: Document, console: Console) -> None:
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    if not devices:
        return
    console.print()
    for d in devices:
        idle = d.get("idle_ns") or 0
        table = new_table(
            f"GPU {d.get('device')} idle gaps: {num(d.get('gap_count'))} gaps, {fmt_ns(idle)} idle",
            ["gap length", "count", "idle", "share", ""],
            {"count", "idle", "share"},
        )
        for h in d.get("histogram") or []:
            share = (h.get("total_ns") or 0) / idle if idle else 0.0
            table.add_row(
                _t(h.get("bucket")),
                num(h.get("count")),
                fmt_ns(h.get("total_ns")),
                fmt_pct(share) if idle else "-",
                "█" * int(round(20 * share)),
            )
        console.print(table.rich(console.width))


def _summed_over(doc: Document) -> str:
    """Beside a total that sums every GPU, where the summary shows per-GPU means: which it is."""
    gpus = gpu_count(doc)
    return f" summed over {gpus} GPUs" if gpus > 1 else ""


def _kernels(doc: Document, console: Console) -> None:
    kernels = doc.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("by_name"):
        return
    console.print()
    table = new_table(
        f"Top kernels ({plural(kernels.get('count') or 0, 'launch', 'launches')}, {plural(kernels.get('distinct_names') or 0, 'name')}, "
        f"{fmt_ns(kernels.get('total_ns'))}{_summed_over(doc)})",
        ["kernel", "time%", "total", "count", "avg", "max"],
        {"time%", "total", "count", "avg", "max"},
    )
    top = kernels["by_name"][:TOP_ROWS]
    for k, name in zip(top, _names([k.get("name") for k in top]), strict=True):
        table.add_row(
            name,
            fmt_pct(k.get("time_fraction")),
            fmt_ns(k.get("total_ns")),
            num(k.get("count")),
            fmt_ns(k.get("avg_ns")),
            fmt_ns(k.get("max_ns")),
        )
    table.shorten_names(0)
    console.print(table.rich(console.width))


def _memcpy(doc: Document, console: Console) -> None:
    memcpy = doc.get("memcpy")
    if not isinstance(memcpy, dict):
        return
    by_kind = [k for k in memcpy.get("by_kind") or [] if isinstance(k, dict)]
    if not by_kind:
        return
    console.print()
    exposed = memcpy.get("device_mean_exposed_ns")
    gpus = len(memcpy.get("per_device") or [])
    weighted = ", per GPU, GPU-time weighted mean" if len(doc.get("devices") or []) > 1 else ""
    per_gpu = weighted + (f"; rows summed over {gpus} GPUs" if gpus > 1 else "")
    title = "Memory copies" + (
        f" ({fmt_ns(exposed)} not overlapped by compute{per_gpu})" if exposed is not None else ""
    )
    table = new_table(
        title,
        ["direction", "count", "bytes", "time", "bandwidth", "pageable"],
        {"count", "bytes", "time", "bandwidth", "pageable"},
    )
    for k in by_kind:
        nbytes, ns = copied_bytes(k), k.get("duration_ns")
        table.add_row(
            _t(k.get("kind")),
            num(k.get("count")),
            fmt_bytes(nbytes),
            fmt_ns(ns),
            bandwidth(nbytes, ns),
            num(k.get("pageable_count")),
        )
    console.print(table.rich(console.width))


def _scalars(title: str, value: Any, console: Console) -> None:
    """A compact line-per-key listing of a section's scalar values (for sections with no dedicated table)."""
    if not isinstance(value, dict):
        return
    items = [(k, v) for k, v in value.items() if v is None or isinstance(v, (str, int, float, bool))]
    if not items:
        return
    console.print()
    print_text(console, f"{title}:", style="bold")
    for k, v in items[:12]:
        print_text(console, f"  {k}: {clean(fmt_auto(k, v), 80)}")


def _occupancy(doc: Document, console: Console) -> None:
    occ = doc.get("occupancy")
    if not isinstance(occ, dict) or "per_device" not in occ:
        if occ is not None:
            _scalars("Occupancy", occ, console)
        return
    console.print()
    # occupancy.lost_ns sums the GPUs: shown as the device-mean (the diagnosis' low_occupancy loss) with several.
    gpus = gpu_count(doc)
    lost = device_mean(occ.get("lost_ns"), gpu_equivalents_of(doc))
    head = f"Occupancy: {num(occ.get('computed_count'))} of {num(occ.get('kernel_count'))} kernels computed"
    if occupancy_all_unmeasured(occ):  # nothing known: a "lost 0 ns" would be no measurement
        print_text(console, f"{head}: no occupancy loss can be measured")
    else:
        print_text(
            console,
            f"{head}, lost {fmt_ns(lost)}{' per GPU (GPU-time weighted mean)' if gpus > 1 else ''} "
            f"(low < {fmt_pct(occ.get('low_threshold'))})",
        )
    for d in occ.get("per_device") or []:
        if not isinstance(d, dict):
            continue
        if d.get("not_computed_reason"):
            print_text(console, f"  GPU {d.get('device')}: not computed: {d['not_computed_reason']}")
            continue
        top = main_limiter(d.get("limiter_ns")) or "-"
        print_text(
            console,
            f"  GPU {d.get('device')} (cc {d.get('compute_capability') or '?'}): theoretical "
            f"{fmt_pct(d.get('time_weighted_theoretical'))}, est. achieved "
            f"{fmt_pct(d.get('time_weighted_estimated_achieved'))}, reported "
            f"{fmt_pct(d.get('time_weighted_reported'))}; low {fmt_ns(d.get('low_ns'))}, "
            f"under-filled {fmt_ns(d.get('under_filled_ns'))}; main limiter {top}",
        )
    kernels = [k for k in occ.get("top_low_occupancy_kernels") or [] if isinstance(k, dict)]
    if kernels:
        table = new_table(
            "Most time lost to low occupancy",
            ["kernel", "lost", "total", "est.", "theor.", "limiter"],
            {"lost", "total", "est.", "theor."},
        )
        for k, name in zip(kernels[:5], _names([k.get("name") for k in kernels[:5]]), strict=True):
            table.add_row(
                name,
                fmt_ns(k.get("lost_ns")),
                fmt_ns(k.get("total_ns")),
                fmt_pct(k.get("occupancy")),
                fmt_pct(k.get("theoretical")),
                _t(k.get("limiter")),
            )
        table.shorten_names(0)
        console.print(table.rich(console.width))


def _sync(doc: Document, console: Console) -> None:
    sync = doc.get("sync")
    if not isinstance(sync, dict) or not isinstance(sync.get("blocking"), dict):
        return
    blocking = sync["blocking"]
    console.print()
    item = sync.get("item_pattern") or {}
    top = [b for b in blocking.get("by_name") or [] if isinstance(b, dict)]
    print_text(
        console,
        f"Sync: {num(blocking.get('count'))} blocking calls, {fmt_ns(blocking.get('total_ns'))}"
        + (f" (top {top[0].get('name')} x{num(top[0].get('count'))})" if top else "")
        + f"; .item()-style waits {num(item.get('count'))}, {fmt_ns(item.get('wait_ns'))}",
    )


def _ranges(doc: Document, console: Console) -> None:
    ranges = doc.get("ranges")
    if not isinstance(ranges, dict):
        return
    rows = objects(ranges.get("ranges"))
    if not rows:
        return
    console.print()
    texts = ranges.get("texts")
    grouped = (
        f" ({num(texts)} distinct texts)" if isinstance(texts, int) and texts != ranges.get("names") else ""
    )
    table = new_table(
        f"Ranges (NVTX / annotations): {num(ranges.get('count'))} instances, {num(ranges.get('names'))} "
        f"names{grouped}",
        ["range", "count", "CPU", "GPU op time", "projected", "GPU idle in"],
        {"count", "CPU", "GPU op time", "projected", "GPU idle in"},
    )
    for r, name in zip(rows[:TOP_ROWS], _names([r.get("name") for r in rows[:TOP_ROWS]]), strict=True):
        table.add_row(
            name,
            num(r.get("count")),
            fmt_ns(r.get("cpu_ns")),
            fmt_ns(r.get("gpu_op_ns")),
            fmt_ns(r.get("projected_ns")),
            fmt_ns(r.get("gpu_idle_ns")),
        )
    table.shorten_names(0)
    console.print(table.rich(console.width))


def _host(doc: Document, console: Console) -> None:
    host = doc.get("host")
    if not isinstance(host, dict) or not host.get("top"):
        return
    console.print()
    folded = host.get("thread_bootstrap_rows")
    table = new_table(
        f"Host side (span {fmt_ns(host.get('span_ns'))}, {plural(host.get('threads') or 0, 'thread')}): top by time"
        + (f" (thread-start frames left out: {num(folded)} rows)" if folded else ""),
        ["kind", "name", "count", "total"],
        {"count", "total"},
    )
    top = host["top"][:TOP_ROWS]
    for row, name in zip(top, _names([row.get("name") for row in top]), strict=True):
        table.add_row(_t(row.get("kind")), name, num(row.get("count")), fmt_ns(row.get("total_ns")))
    table.shorten_names(1, 60)
    console.print(table.rich(console.width))


def _communication(doc: Document, console: Console) -> None:
    from .charts import bar_legend, stacked_bar

    comm = doc.get("communication")
    devices = objects(comm.get("devices")) if comm else []
    if not comm or not devices:
        return
    console.print()
    print_text(
        console,
        f"GPU time breakdown ({bar_legend()}); {num(comm.get('collective_count'))} collectives",
        indent="",
    )
    for d in devices:
        b: Mapping[str, Any] = d.get("breakdown") or {}
        line = f"GPU {d.get('device')} {stacked_bar(b)} span {fmt_ns(b.get('span_ns'))}"
        if d.get("collective_count"):
            line += (
                f"; collectives {fmt_ns(d.get('collective_ns'))}, exposed {fmt_ns(d.get('exposed_ns'))} "
                f"({fmt_pct(d.get('overlap_share'))} overlapped)"
            )
        print_text(console, line, indent="  ")  # wrapped: the bar plus the collective figures pass WIDTH


def _ops(doc: Document, console: Console) -> None:
    ops = doc.get("ops")
    rows = objects(ops.get("by_name")) if ops else []
    if not ops or not rows:
        return
    console.print()
    with_flops = any(r.get("flops") is not None for r in rows)  # shapes recorded: a FLOPs column
    columns = ["op", "count", "kernel", "copy", "host", *(["FLOPs"] if with_flops else [])]
    table = new_table(
        f"Top ops ({fmt_ns(ops.get('attributed_kernel_ns'))} of {fmt_ns(ops.get('kernel_ns'))} kernel "
        "time attributed)",
        columns,
        {"count", "kernel", "copy", "host", "FLOPs"},
    )
    for r, name in zip(rows[:TOP_ROWS], _names([r.get("name") for r in rows[:TOP_ROWS]]), strict=True):
        table.add_row(
            name,
            num(r.get("count")),
            fmt_ns(r.get("gpu_ns")),
            fmt_ns(r.get("copy_ns")),
            fmt_ns(r.get("cpu_ns")),
            *([op_flops_cell(r.get("flops"))] if with_flops else []),
        )
    table.shorten_names(0)
    console.print(table.rich(console.width))
    for line in (compute_sentence(ops.get("compute"), str), roofline_sentence(ops.get("roofline"), str)):
        if line:  # _print cleans the whole line
            print_text(console, line, indent="  ")
    modules = [m for m in ops.get("by_module") or [] if isinstance(m, dict)]
    if modules:  # the trace records nn.Module rows
        console.print()
        table = new_table(
            "Top modules (innermost nn.Module at the launch)",
            ["module", "kernels", "kernel", "FLOPs"],
            {"kernels", "kernel", "FLOPs"},
        )
        for m in modules[:TOP_ROWS]:
            # The innermost modules matter most: keep the end of the path.
            path = clean(m.get("path"))
            short = path if FULL_NAMES.get() or len(path) <= NAME_WIDTH else "…" + path[-(NAME_WIDTH - 1) :]
            table.add_row(
                Text(short), num(m.get("kernels")), fmt_ns(m.get("gpu_ns")), fmt_flops(m.get("flops"))
            )
        console.print(table.rich(console.width))


def _ranks(doc: RunDocument, console: Console) -> None:
    """A run document's ranks: the straggler, imbalance and collective verdicts, then one row per rank."""
    rows = [r for r in doc.get("ranks") or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    print_text(
        console,
        f"Ranks: {len(rows):,}"
        + (
            f"; diagnosis and host side of rank {doc['representative_rank']}"
            if doc.get("representative_rank") is not None
            else ""
        ),
        style="bold",
    )
    for label, text in summary_items(doc, clean):
        print_text(console, f"  {label}: {text}")
    right = {
        "rank",
        "GPUs",
        "utilization",
        "busy",
        "steps",
        "mean step",
        "step lateness",
        "NCCL transfer",
        "NCCL wait",
    }
    table = new_table("", RANK_COLUMNS, right)
    for r in rows:
        table.add_row(*(Text(c) for c in rank_cells(r, clean)))
    console.print(table.rich(console.width))


def _whatif(doc: Document, console: Console) -> None:
    lines = [
        line
        for line in (*remedy_lines(doc), critical_path_line(doc), replay_line(doc), step_basis_line(doc))
        if line
    ]
    if not lines:
        return
    console.print()
    print_text(console, "What-if (replay):")
    for line in lines:
        print_text(console, line, indent="  ")


# Drawing functions by section key; the order and GPU-only flags come from the section registry
# (tracelens.analyses.REGISTRY). Source and diagnosis come first; any other key gets a key/value list.
DRAW: dict[str, Draw] = {
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
HANDLED = {"schema_version", "source", "summary", "diagnosis", *DRAW, *RUN_KEYS}


def _others(doc: RunDocument, console: Console) -> None:
    for key, value in doc.items():
        if key not in HANDLED:
            _scalars(key, value, console)


def render(
    doc: Mapping[str, Any], *, width: int = WIDTH, color: bool = False, full_names: bool = False, **_: Any
) -> str:
    """The terminal summary at ``width`` columns (the CLI passes :func:`terminal_width`); ``full_names``:
    kernel, op and range names whole (wrapped) instead of shortened."""
    document = cast(RunDocument, doc)  # the shapes of document/types.py (a run document's keys included)
    console, buffer = new_console(width, color)
    no_gpu = document.get("devices") == []
    token = FULL_NAMES.set(full_names)
    try:
        _source(document, console)
        _diagnosis(document, console)
        _headline(document, console)
        _ranks(document, console)
        for section in report_sections():
            if section.key in DRAW and not (no_gpu and section.gpu_only):
                DRAW[section.key](document, console)
        _others(document, console)
    finally:
        FULL_NAMES.reset(token)
    return finish(buffer)
