"""Terminal summary, drawn with rich, readable in 100 columns.

Order: source, diagnosis (primary cause, lost time, fix), GPUs, steps, gap histogram, top kernels,
memcpy, occupancy, ranges, host; any other section of the document as a compact key/value list.
Sections absent from the document are skipped. Names from the traced program are shown as plain
``Text`` (never parsed as rich markup) with control characters removed.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..analyses import report_sections
from ..document import summary_of
from .compute import compute_sentence, fmt_flops, roofline_sentence
from .escape import terminal as clean
from .findings import sentence
from .units import fmt_auto, fmt_bytes, fmt_ns, fmt_pct
from .whatif_text import critical_path_line, remedy_lines, replay_line

WIDTH = 100
TOP_ROWS = 10
NAME_WIDTH = 44  # kernel / range names are shortened (head…tail) to this many characters

Draw = Callable[[dict[str, Any], Console], None]


def _t(value: Any, limit: int | None = None) -> Text:
    return Text(clean(value if value is not None else "-", limit))


def _n(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


class _Rows:
    """Rows collected first, so numeric columns can be given the width they need before rich lays out.

    When a table is wider than the console, only the text (name) columns give way, cut with an ellipsis.
    """

    def __init__(self, title: str, columns: list[str], right: set[str] | None = None) -> None:
        self.title = title
        self.columns = columns
        self.right = right or set()
        self.rows: list[tuple[Any, ...]] = []

    def add_row(self, *cells: Any) -> None:
        self.rows.append(cells)

    def rich(self) -> Table:
        table = Table(title=Text(self.title), title_justify="left", title_style="bold", pad_edge=False,
                      expand=False, box=box.SIMPLE_HEAD)
        for i, col in enumerate(self.columns):
            if col in self.right or col in ("GPU", "count"):
                width = max([len(col)] + [len(str(row[i])) for row in self.rows])
                table.add_column(col, justify="right", no_wrap=True, min_width=width)
            else:
                table.add_column(col, justify="left", overflow="ellipsis", no_wrap=True)
        for row in self.rows:
            table.add_row(*row)
        return table


def _table(title: str, columns: list[str], right: set[str] | None = None) -> _Rows:
    return _Rows(title, columns, right)


def _print(console: Console, text: str, style: str | None = None, indent: str | None = None) -> None:
    """Print plain text; with ``indent``, wrapped to WIDTH with that indent (two more on later lines)."""
    text = clean(text)
    if indent is not None:
        text = textwrap.fill(text, width=WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_on_hyphens=False)
    console.print(Text(text), style=style, highlight=False, overflow="ignore")


def _source(doc: dict[str, Any], console: Console) -> None:
    src = doc.get("source") or {}
    producer = " ".join(x for x in (src.get("producer"), src.get("producer_version")) if x)
    head = Text(clean(src.get("path") or "trace"), style="bold")
    events = src.get("event_count")
    head.append(clean(f"  ({src.get('format', '?')}{', ' + producer if producer else ''}"
                      f"{', ' + format(events, ',') + ' events' if isinstance(events, int) else ''})"))
    console.print(head, highlight=False)
    for warning in src.get("warnings") or []:
        _print(console, f"warning: {warning}", style="yellow")


def _primary(doc: dict[str, Any]) -> dict[str, Any] | None:
    diagnosis = doc.get("diagnosis")
    primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
    return primary if isinstance(primary, dict) else None


def _plain(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_plain(v) if isinstance(v, (list, dict)) else fmt_auto(k, v)}"
                         for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_plain(v) for v in value)
    return value if isinstance(value, str) else fmt_auto("", value)


def _diagnosis(doc: dict[str, Any], console: Console) -> None:
    primary = _primary(doc)
    if primary is None:
        return
    console.print()
    diagnosis = doc["diagnosis"]
    cause = primary.get("cause")
    if cause == "none":
        _print(console, f"Diagnosis: none. {sentence(primary, diagnosis)}", style="green", indent="")
    else:
        line = Text("Diagnosis: ", style="bold")
        line.append(clean(cause), style="bold red")
        line.append(clean(f"  lost {fmt_ns(primary.get('lost_ns'))} ({fmt_pct(primary.get('share'))} of span)"))
        console.print(line, highlight=False)
        _print(console, sentence(primary, diagnosis), indent="  ")
        if primary.get("fix"):
            _print(console, f"fix: {_plain(primary['fix'])}", style="cyan", indent="  ")
    others = [c for c in (diagnosis.get("causes") or [])[1:] if isinstance(c, dict)]
    for c in others[:4]:
        _print(console, f"also: {c.get('cause')} {fmt_ns(c.get('lost_ns'))} ({fmt_pct(c.get('share'))}): "
                        f"{sentence(c, diagnosis)}", indent="  ")


def _devices(doc: dict[str, Any], console: Console) -> None:
    devices = doc.get("devices")
    if devices is None:
        return
    console.print()
    if not devices:
        _print(console, "No GPU activity in this trace (no kernels, copies or memsets); host side below.",
               style="yellow")
        return
    table = _table(f"GPU utilization: {fmt_pct(summary_of(doc)['gpu_utilization'])} (busy-weighted over {len(devices)} GPUs)",
                   ["GPU", "util", "busy", "span", "kernels", "kernel time", "memcpy n/time", "memset n/time",
                    "name"], {"util", "busy", "span", "kernels", "kernel time", "memcpy n/time", "memset n/time"})
    for d in devices:
        label = f"{d['rank']}:{d.get('id')}" if d.get("rank") is not None else d.get("id")  # rank:GPU in a run
        table.add_row(_t(label), fmt_pct(d.get("utilization")),
                      fmt_ns(d.get("busy_ns")), fmt_ns(d.get("span_ns")), _n(d.get("kernel_count")),
                      fmt_ns(d.get("kernel_ns")), f"{_n(d.get('memcpy_count'))}/{fmt_ns(d.get('memcpy_ns'))}",
                      f"{_n(d.get('memset_count'))}/{fmt_ns(d.get('memset_ns'))}", _t(d.get("name") or "-", 24))
    console.print(table.rich())


def _steps(doc: dict[str, Any], console: Console) -> None:
    if "steps" not in doc:
        return
    stats = summary_of(doc)["steps"]
    console.print()
    if not stats:
        _print(console, "Steps: no step markers in this trace.")
        return
    _print(console, f"Steps: {stats['count']:,}, mean {fmt_ns(stats['mean_ns'])}, min {fmt_ns(stats['min_ns'])}, "
                    f"max {fmt_ns(stats['max_ns'])}")
    breakdown = _step_breakdown(doc)
    if breakdown:
        _print(console, "  per step (mean): " + ", ".join(f"{k} {fmt_ns(v)}" for k, v in breakdown))


def _step_breakdown(doc: dict[str, Any]) -> list[tuple[str, float]]:
    """Mean host time per category per step, from ``steps.summary.host_ns``."""
    steps = doc.get("steps")
    summary = steps.get("summary") if isinstance(steps, dict) else None
    count = steps.get("count") if isinstance(steps, dict) else None
    host = summary.get("host_ns") if isinstance(summary, dict) else None
    if not isinstance(host, dict) or not count:
        return []
    return [(k, v / count) for k, v in host.items() if isinstance(v, (int, float))]


def _attribution(doc: dict[str, Any], console: Console) -> None:
    attribution = doc.get("attribution")
    devices = attribution.get("devices") if isinstance(attribution, dict) else None
    if not devices:
        return
    causes = list(attribution.get("priority") or (devices[0].get("by_cause") or {}).keys())
    console.print()
    table = _table("GPU idle time by cause (what the feeding host threads did)", ["GPU", "idle", *causes],
                   {"idle", *causes})
    for d in devices:
        idle = d.get("idle_ns") or 0
        by_cause = d.get("by_cause") or {}
        table.add_row(_t(d.get("device")), fmt_ns(idle),
                      *[f"{fmt_ns(by_cause.get(c))} {fmt_pct(by_cause.get(c, 0) / idle) if idle else ''}".strip()
                        for c in causes])
    console.print(table.rich())


def _launch(doc: dict[str, Any], console: Console) -> None:
    launch = doc.get("launch")
    lat = launch.get("latency") if isinstance(launch, dict) else None
    if not isinstance(lat, dict) or not lat.get("count"):
        return
    console.print()
    _print(console, f"Launches: {_n(lat.get('count'))} matched, latency p50 {fmt_ns(lat.get('p50_ns'))}, "
                    f"p90 {fmt_ns(lat.get('p90_ns'))}, p99 {fmt_ns(lat.get('p99_ns'))}, max {fmt_ns(lat.get('max_ns'))}")
    small = launch.get("small_kernels") or {}
    short = launch.get("short_kernels") or {}
    graphs = launch.get("cuda_graphs") or {}
    _print(console, f"  kernels < {fmt_ns(small.get('threshold_ns'))}: {_n(small.get('count'))} "
                    f"({fmt_pct(small.get('share'))} of kernel time); shorter than their launch: "
                    f"{_n(short.get('count'))}; CUDA graphs: {'yes' if graphs.get('in_use') else 'no'}")


def _gaps(doc: dict[str, Any], console: Console) -> None:
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    if not devices:
        return
    console.print()
    for d in devices:
        idle = d.get("idle_ns") or 0
        table = _table(f"GPU {d.get('device')} idle gaps: {_n(d.get('gap_count'))} gaps, {fmt_ns(idle)} idle",
                       ["gap length", "count", "idle", "share", ""], {"count", "idle", "share"})
        for h in d.get("histogram") or []:
            share = (h.get("total_ns") or 0) / idle if idle else 0.0
            table.add_row(_t(h.get("bucket")), _n(h.get("count")), fmt_ns(h.get("total_ns")),
                          fmt_pct(share) if idle else "-", "█" * int(round(20 * share)))
        console.print(table.rich())


def _kernels(doc: dict[str, Any], console: Console) -> None:
    kernels = doc.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("by_name"):
        return
    console.print()
    table = _table(f"Top kernels ({_n(kernels.get('count'))} launches, {_n(kernels.get('distinct_names'))} names, "
                   f"{fmt_ns(kernels.get('total_ns'))})", ["kernel", "time%", "total", "count", "avg", "max"],
                   {"time%", "total", "count", "avg", "max"})
    for k in kernels["by_name"][:TOP_ROWS]:
        table.add_row(_t(k.get("name"), NAME_WIDTH), fmt_pct(k.get("time_fraction")), fmt_ns(k.get("total_ns")),
                      _n(k.get("count")), fmt_ns(k.get("avg_ns")), fmt_ns(k.get("max_ns")))
    console.print(table.rich())


def _memcpy(doc: dict[str, Any], console: Console) -> None:
    memcpy = doc.get("memcpy")
    if not isinstance(memcpy, dict):
        return
    by_kind = [k for k in memcpy.get("by_kind") or [] if isinstance(k, dict)]
    if not by_kind:
        return
    console.print()
    exposed = memcpy.get("exposed_ns")
    title = "Memory copies" + (f" ({fmt_ns(exposed)} not overlapped by compute)" if exposed is not None else "")
    table = _table(title, ["direction", "count", "bytes", "time", "bandwidth", "pageable"],
                   {"count", "bytes", "time", "bandwidth", "pageable"})
    for k in by_kind:
        nbytes, ns = k.get("bytes"), k.get("duration_ns")
        bandwidth = f"{fmt_bytes(nbytes / (ns / 1e9))}/s" if nbytes and ns else "-"
        table.add_row(_t(k.get("kind")), _n(k.get("count")), fmt_bytes(nbytes), fmt_ns(ns), bandwidth,
                      _n(k.get("pageable_count")))
    console.print(table.rich())


def _scalars(title: str, value: Any, console: Console) -> None:
    """A compact line-per-key listing of a section's scalar values (for sections with no dedicated table)."""
    if not isinstance(value, dict):
        return
    items = [(k, v) for k, v in value.items() if v is None or isinstance(v, (str, int, float, bool))]
    if not items:
        return
    console.print()
    _print(console, f"{title}:", style="bold")
    for k, v in items[:12]:
        _print(console, f"  {k}: {clean(fmt_auto(k, v), 80)}")


def _occupancy(doc: dict[str, Any], console: Console) -> None:
    occ = doc.get("occupancy")
    if not isinstance(occ, dict) or "per_device" not in occ:
        if occ is not None:
            _scalars("Occupancy", occ, console)
        return
    console.print()
    _print(console, f"Occupancy: {_n(occ.get('computed_count'))} of {_n(occ.get('kernel_count'))} kernels computed, "
                    f"lost {fmt_ns(occ.get('lost_ns'))} (low < {fmt_pct(occ.get('low_threshold'))})")
    for d in occ.get("per_device") or []:
        if not isinstance(d, dict):
            continue
        if d.get("not_computed_reason"):
            _print(console, f"  GPU {d.get('device')}: not computed: {d['not_computed_reason']}")
            continue
        limiter = d.get("limiter_ns") or {}
        top = max(limiter, key=lambda k: limiter[k]) if limiter and any(limiter.values()) else "-"
        _print(console, f"  GPU {d.get('device')} (cc {d.get('compute_capability') or '?'}): theoretical "
                        f"{fmt_pct(d.get('time_weighted_theoretical'))}, est. achieved "
                        f"{fmt_pct(d.get('time_weighted_estimated_achieved'))}, reported "
                        f"{fmt_pct(d.get('time_weighted_reported'))}; low {fmt_ns(d.get('low_ns'))}, "
                        f"under-filled {fmt_ns(d.get('under_filled_ns'))}; main limiter {top}")
    kernels = [k for k in occ.get("top_low_occupancy_kernels") or [] if isinstance(k, dict)]
    if kernels:
        table = _table("Most time lost to low occupancy", ["kernel", "lost", "total", "est.", "theor.", "limiter"],
                       {"lost", "total", "est.", "theor."})
        for k in kernels[:5]:
            table.add_row(_t(k.get("name"), NAME_WIDTH), fmt_ns(k.get("lost_ns")), fmt_ns(k.get("total_ns")),
                          fmt_pct(k.get("occupancy")), fmt_pct(k.get("theoretical")), _t(k.get("limiter")))
        console.print(table.rich())


def _sync(doc: dict[str, Any], console: Console) -> None:
    sync = doc.get("sync")
    blocking = sync.get("blocking") if isinstance(sync, dict) else None
    if not isinstance(blocking, dict):
        return
    console.print()
    item = sync.get("item_pattern") or {}
    top = [b for b in blocking.get("by_name") or [] if isinstance(b, dict)]
    _print(console, f"Sync: {_n(blocking.get('count'))} blocking calls, {fmt_ns(blocking.get('total_ns'))}"
                    + (f" (top {top[0].get('name')} x{_n(top[0].get('count'))})" if top else "")
                    + f"; .item()-style waits {_n(item.get('count'))}, {fmt_ns(item.get('wait_ns'))}")


def _ranges(doc: dict[str, Any], console: Console) -> None:
    ranges = doc.get("ranges")
    rows = ranges.get("ranges") if isinstance(ranges, dict) else None
    rows = [r for r in rows or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    table = _table(f"Ranges (NVTX / annotations): {_n(ranges.get('count'))} instances, {_n(ranges.get('names'))} names",
                   ["range", "count", "CPU", "GPU op time", "projected", "GPU idle in"],
                   {"count", "CPU", "GPU op time", "projected", "GPU idle in"})
    for r in rows[:TOP_ROWS]:
        table.add_row(_t(r.get("name"), NAME_WIDTH), _n(r.get("count")), fmt_ns(r.get("cpu_ns")),
                      fmt_ns(r.get("gpu_op_ns")), fmt_ns(r.get("projected_ns")), fmt_ns(r.get("gpu_idle_ns")))
    console.print(table.rich())


def _host(doc: dict[str, Any], console: Console) -> None:
    host = doc.get("host")
    if not isinstance(host, dict) or not host.get("top"):
        return
    console.print()
    table = _table(f"Host side (span {fmt_ns(host.get('span_ns'))}, {host.get('threads', 0)} threads): top by time",
                   ["kind", "name", "count", "total"], {"count", "total"})
    for row in host["top"][:TOP_ROWS]:
        table.add_row(_t(row.get("kind")), _t(row.get("name"), 60), _n(row.get("count")), fmt_ns(row.get("total_ns")))
    console.print(table.rich())


def _communication(doc: dict[str, Any], console: Console) -> None:
    from .charts import bar_legend, stacked_bar

    comm = doc.get("communication")
    devices = [d for d in (comm or {}).get("devices") or [] if isinstance(d, dict)]
    if not devices:
        return
    console.print()
    _print(console, f"GPU time breakdown ({bar_legend()}); {_n(comm.get('collective_count'))} collectives", indent="")
    for d in devices:
        b = d.get("breakdown") or {}
        line = f"GPU {d.get('device')} {stacked_bar(b)} span {fmt_ns(b.get('span_ns'))}"
        if d.get("collective_count"):
            line += (f"; collectives {fmt_ns(d.get('collective_ns'))}, exposed {fmt_ns(d.get('exposed_ns'))} "
                     f"({fmt_pct(d.get('overlap_share'))} overlapped)")
        _print(console, line, indent="  ")  # wrapped: the bar plus the collective figures pass WIDTH


def _ops(doc: dict[str, Any], console: Console) -> None:
    ops = doc.get("ops")
    rows = [r for r in (ops or {}).get("by_name") or [] if isinstance(r, dict)]
    if not rows:
        return
    console.print()
    with_flops = any(r.get("flops") is not None for r in rows)  # shapes recorded: a FLOPs column
    columns = ["op", "count", "kernel", "copy", "host", *(["FLOPs"] if with_flops else [])]
    table = _table(f"Top ops ({fmt_ns(ops.get('attributed_kernel_ns'))} of {fmt_ns(ops.get('kernel_ns'))} kernel "
                   "time attributed)", columns, {"count", "kernel", "copy", "host", "FLOPs"})
    for r in rows[:TOP_ROWS]:
        table.add_row(_t(r.get("name"), NAME_WIDTH), _n(r.get("count")), fmt_ns(r.get("gpu_ns")),
                      fmt_ns(r.get("copy_ns")), fmt_ns(r.get("cpu_ns")),
                      *([fmt_flops(r.get("flops"))] if with_flops else []))
    console.print(table.rich())
    for line in (compute_sentence(ops.get("compute"), str), roofline_sentence(ops.get("roofline"), str)):
        if line:  # _print cleans the whole line
            _print(console, line, indent="  ")
    modules = [m for m in ops.get("by_module") or [] if isinstance(m, dict)]
    if modules:  # the trace records nn.Module rows
        console.print()
        table = _table("Top modules (innermost nn.Module at the launch)", ["module", "kernels", "kernel", "FLOPs"],
                       {"kernels", "kernel", "FLOPs"})
        for m in modules[:TOP_ROWS]:
            # The innermost modules matter most: keep the end of the path.
            path = str(m.get("path"))
            table.add_row(_t(path if len(path) <= NAME_WIDTH else "…" + path[-(NAME_WIDTH - 1):], NAME_WIDTH),
                          _n(m.get("kernels")), fmt_ns(m.get("gpu_ns")), fmt_flops(m.get("flops")))
        console.print(table.rich())


def _whatif(doc: dict[str, Any], console: Console) -> None:
    lines = [line for line in (*remedy_lines(doc), critical_path_line(doc), replay_line(doc)) if line]
    if not lines:
        return
    console.print()
    _print(console, "What-if (replay):")
    for line in lines:
        _print(console, line, indent="  ")


# Drawing functions by section key; the order and GPU-only flags come from the section registry
# (tracelens.analyses.REGISTRY). Source and diagnosis come first; any other key gets a key/value list.
DRAW: dict[str, Draw] = {"communication": _communication, "ops": _ops, "devices": _devices, "steps": _steps, "gaps": _gaps, "attribution": _attribution,
                         "kernels": _kernels, "launch": _launch, "sync": _sync, "memcpy": _memcpy,
                         "occupancy": _occupancy, "ranges": _ranges, "host": _host, "whatif": _whatif}
HANDLED = {"schema_version", "source", "summary", "diagnosis", *DRAW}


def _others(doc: dict[str, Any], console: Console) -> None:
    for key, value in doc.items():
        if key not in HANDLED:
            _scalars(key, value, console)


def render(doc: dict[str, Any], *, width: int = WIDTH, color: bool = False, **_: Any) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="auto" if color else None,
                      emoji=False, highlight=False)
    no_gpu = doc.get("devices") == []
    _source(doc, console)
    _diagnosis(doc, console)
    for section in report_sections():
        if section.key in DRAW and not (no_gpu and section.gpu_only):
            DRAW[section.key](doc, console)
    _others(doc, console)
    # rich pads every line to the table width; trailing blanks only make diffs and golden files noisy
    return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))
