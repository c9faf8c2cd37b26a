"""GitHub-flavoured markdown report for pull-request review (``tracelens report``, ``analyze -f markdown``).

Layout: headline (utilization per device, step time, primary cause), findings table, step-time breakdown,
gap histogram, top kernels, memcpy, occupancy, ranges, host, then any other section of the document in a
generic form. A section is rendered only when its key is in the document. Long tables are folded in
``<details>``.

Safety: every string that comes from the traced program goes through :func:`escape.md` (cells, list
items) or :func:`escape.html_text` (inside HTML tags), so a name can neither add a table column, close a
``<details>`` block nor inject a tag. Names longer than :data:`escape.DEFAULT_MAX` characters are
shortened to head…tail in tables and marked ``[n]``; a folded "Full names" list under the table gives
each in full (escaped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..analyses import BY_KEY, report_sections
from ..analyses import SECTIONS as SECTION_KEYS
from ..document import summary_of
from .budget import LEVELS, Block, fit, limits
from .charts import bar_legend, lost_time_chart, stacked_bar, utilization_chart
from .compute import compute_sentence, fmt_flops, op_flops_cell, roofline_sentence
from .escape import code, html_text, is_shortened, link, md, md_line_start, shorten
from .findings import caveats, finding_severity, memcpy_checks, sentence, utilization_sentence
from .ranks import RUN_KEYS
from .ranks import markdown_section as ranks_section
from .units import fmt_auto, fmt_bytes, fmt_ns, fmt_pct, plural
from .whatif_text import critical_path_line, remedy_lines, replay_line

# Rows shown before folding into <details>, and rows of any one table (the JSON output has them all), at the
# generous level; the renderers read the level in effect from budget.limits() (report/budget.py).
TOP_ROWS = LEVELS[0].top_rows
MAX_ROWS = LEVELS[0].max_rows
GENERIC_LIST_ROWS = 50  # rows of a list-of-objects table in the generic renderer
GENERIC_COLUMNS = 10

# Severity of a finding from its share of the span (docs/json.md, "Markdown and terminal output").
SEVERITY_LABELS = {"high": "🔴 high", "medium": "🟠 medium", "low": "🟡 low"}  # diagnosis.severity

Lines = list[str]


@dataclass(frozen=True)
class Figure:
    """A PNG that goes beside a markdown report: ``role`` "utilization" or "ranks", where, and its bytes."""

    role: str
    path: Path
    data: bytes


class FullNames:
    """Collects names shortened in a table so their full form can be listed under it."""

    def __init__(self) -> None:
        self.full: list[str] = []

    def cell(self, name: Any) -> str:
        text = "" if name is None else str(name)
        if is_shortened(text):
            self.full.append(text)
            return f"{md(shorten(text))} \\[{len(self.full)}\\]"
        return md(text)

    def block(self) -> Lines:
        if not self.full:
            return []
        lines = ["", "<details><summary>Full names</summary>", ""]
        lines.extend(f"{i}. {_full_name(name)}" for i, name in enumerate(self.full, start=1))
        lines.extend(["", "</details>"])
        return lines


def _full_name(name: str) -> str:
    """A name as a list item, whole unless longer than the level's limit (then head…tail and its length)."""
    most = limits().full_name_chars
    if len(name) <= most:
        return md_line_start(name)
    return f"{md_line_start(shorten(name, most))} ({len(name):,} characters; whole in the JSON output)"


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> Lines:
    """A GitHub table; callers pass cells already escaped."""
    align = align or ["---"] * len(header)
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    out.extend("| " + " | ".join(cells) + " |" for cells in rows)
    return out


def details(summary: str, body: Lines) -> Lines:
    """Fold ``body`` under a ``<details>`` whose plain-text ``summary`` is HTML-escaped here."""
    return ["", f"<details><summary>{html_text(summary)}</summary>", "", *body, "", "</details>"]


def _folded_table(header: list[str], rows: list[list[str]], align: list[str], what: str,
                  total: int | None = None) -> Lines:
    """The first TOP_ROWS rows, the rest (up to MAX_ROWS) folded; ``total`` counts rows not even passed in."""
    total = max(total or 0, len(rows))
    top, most = limits().top_rows, limits().max_rows
    lines = table(header, rows[:top], align)
    if total > top:
        body = table(header, rows[top:most], align) if most > top else []
        if total > most:
            body.extend(["", f"{total - most:,} more {what} in the JSON output (`--format json`)."])
        lines.extend(details(f"{total - top:,} more {what}", body))
    return lines


def _count(value: Any, noun: str, plural_form: str | None = None) -> str:
    """A count and its noun in agreement ("1 gap", "3 gaps"), "- gaps" for a missing count."""
    if isinstance(value, int) and not isinstance(value, bool):
        return plural(value, noun, plural_form)
    return f"{_num(value)} {plural_form or noun + 's'}"


def _num(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


# ---------------------------------------------------------------------------------------------- generic


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _generic_cell(key: str, value: Any) -> str:
    if isinstance(value, str):
        return md(shorten(value))
    if _scalar(value):
        return md(fmt_auto(key, value))
    if isinstance(value, list) and all(_scalar(v) for v in value):
        return md(shorten(", ".join(fmt_auto(key, v) for v in value), 80))
    return f"({len(value)} entries)" if isinstance(value, (list, dict)) else md(shorten(str(value)))


def generic(value: Any, depth: int = 0) -> Lines:
    """Render any JSON value: scalars of a dict as a key/value table, lists of objects as tables."""
    if isinstance(value, dict):
        scalars = [(k, v) for k, v in value.items() if _scalar(v) or (isinstance(v, list) and all(map(_scalar, v)))]
        scalar_keys = {k for k, _ in scalars}
        nested = [(k, v) for k, v in value.items() if k not in scalar_keys]
        lines: Lines = []
        if scalars:
            lines.extend(table(["key", "value"], [[md(k), _generic_cell(k, v)] for k, v in scalars]))
        for key, sub in nested:
            if isinstance(sub, (list, dict)) and not sub:
                continue
            body = generic(sub, depth + 1)
            if body:
                lines.extend(details(str(key), body) if depth >= 1 else ["", f"**{md(key)}**", "", *body])
        return lines
    if isinstance(value, list):
        objects = [v for v in value if isinstance(v, dict)]
        if not objects:
            return [md(shorten(", ".join(fmt_auto("", v) for v in value), 200))] if value else []
        columns: list[str] = []
        for obj in objects[:GENERIC_LIST_ROWS]:
            for k, v in obj.items():
                if k not in columns and (_scalar(v) or isinstance(v, list)):
                    columns.append(k)
        columns = columns[:GENERIC_COLUMNS]
        if not columns:  # objects holding only nested values: nothing fits a table row
            return [f"({len(objects)} entries in the JSON output)"]
        names = FullNames()
        rows = [[names.cell(obj.get(c)) if isinstance(obj.get(c), str) else _generic_cell(c, obj.get(c))
                 for c in columns] for obj in objects[:GENERIC_LIST_ROWS]]
        lines = table([md(c) for c in columns], rows)
        if len(objects) > GENERIC_LIST_ROWS:
            lines.append(f"\n… {len(objects) - GENERIC_LIST_ROWS} more rows in the JSON output.")
        return lines + names.block()
    return [md(fmt_auto("", value))]


# ---------------------------------------------------------------------------------------------- sections


def _primary(doc: dict[str, Any]) -> dict[str, Any] | None:
    diagnosis = doc.get("diagnosis")
    primary = diagnosis.get("primary") if isinstance(diagnosis, dict) else None
    return primary if isinstance(primary, dict) else None


def _headline(doc: dict[str, Any]) -> Lines:
    src = doc.get("source") or {}
    name = Path(str(src.get("path") or "trace")).name or "trace"
    lines = [f"# tracelens report: {md(name)}", ""]
    facts = [src.get("format"), " ".join(x for x in (src.get("producer"), src.get("producer_version")) if x),
             f"framework {src['framework']}" if src.get("framework") else None,
             plural(src['event_count'], 'event') if isinstance(src.get("event_count"), int) else None]
    if src.get("rank") is not None:
        facts.append(f"rank {src['rank']} of {src.get('world_size') or '?'}")
    lines.append(" · ".join(md(f) for f in facts if f))
    for warning in src.get("warnings") or []:
        lines.extend(["", f"> ⚠️ {md(warning)}"])
    lines.append("")
    devices = doc.get("devices")
    if isinstance(devices, list) and devices:
        busy = utilization_sentence(cast(dict[str, Any], summary_of(doc))) or "GPU busy -"
        per_device = ", ".join(f"{_gpu_label(d)} {fmt_pct(d.get('utilization'))}" for d in devices[:16])
        if len(devices) > 16:
            per_device += f", … {len(devices) - 16} more"
        head, _, split = busy.partition(": ")  # "GPU busy 99.3%" in bold, then its split by kind
        lines.append(f"- **{md(head)}:** {md(split)}".rstrip()
                     + (f" (mean over {plural(len(devices), 'device')}: {per_device})" if len(devices) > 1 else ""))
    elif "devices" in doc:
        lines.append("- **GPU utilization:** no GPU activity in this trace (no kernels, copies or memsets)")
    stats = summary_of(doc)["steps"]
    if stats:
        lines.append(f"- **Step time:** mean {fmt_ns(stats['mean_ns'])} over {plural(stats['count'], 'step')} "
                     f"(min {fmt_ns(stats['min_ns'])}, max {fmt_ns(stats['max_ns'])})")
    elif "steps" in doc:
        lines.append("- **Step time:** no step markers in this trace")
    primary = _primary(doc)
    if primary:
        cause = primary.get("cause")
        finding = md(sentence(primary, doc.get("diagnosis") or {}))
        if cause == "none":
            lines.append(f"- **Primary cause:** none. {finding}")
        elif cause == "incomplete_trace":
            lines.append(f"- **Primary cause:** `incomplete_trace`: this trace cannot answer. {finding}")
            if primary.get("fix"):
                lines.append(f"- **How to record it:** {_text(primary.get('fix'))}")
        else:
            lines.append(f"- **Primary cause:** {code(cause)}: {fmt_ns(primary.get('lost_ns'))} lost "
                         f"({fmt_pct(primary.get('share'))} of the span). {finding}")
            if primary.get("fix"):
                lines.append(f"- **Fix:** {_text(primary.get('fix'))}")
        lines.extend(f"- **Trace caveat:** {md(c)}" for c in caveats(doc.get("diagnosis") or {}))
    return lines


def _gpu_label(device: dict[str, Any]) -> str:
    """"GPU 3", or "rank 1 GPU 3" in a multi-rank run document (device ids repeat across ranks)."""
    gpu = f"GPU {md(device.get('id'))}"
    return f"rank {md(device['rank'])} {gpu}" if device.get("rank") is not None else gpu


def _text(value: Any) -> str:
    """Free text from an analysis (which may quote traced names): escaped, list items joined."""
    if isinstance(value, list):
        return "; ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{md(k)}: {_text(v)}" for k, v in value.items())
    return md(fmt_auto("", value) if not isinstance(value, str) else value)


def _evidence(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{md(k)}: {md(shorten(fmt_auto(k, v) if _scalar(v) else _plain(v, str(k)), 120))}"
                         for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(md(shorten(v if isinstance(v, str) else _plain(v), 120)) for v in value)
    return md(shorten(fmt_auto("", value) if not isinstance(value, str) else value, 400))


def _plain(value: Any, key: str = "") -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_plain(v, str(k))}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_plain(v, key) for v in value)
    return fmt_auto(key, value)


def severity(share: float | None) -> str:
    """Severity label of a finding from its share of the span (the policy: ``diagnosis.severity``)."""
    return SEVERITY_LABELS[finding_severity(share)]


def _findings(doc: dict[str, Any]) -> Lines:
    diagnosis = doc.get("diagnosis")
    if not isinstance(diagnosis, dict):
        return []
    causes = [c for c in diagnosis.get("causes") or [] if isinstance(c, dict)]
    lines = ["", "## Findings", ""]
    if not causes:
        return lines + ["No cause of lost GPU time found."]
    rows = [[str(i), severity(c.get("rank_share", c.get("share"))), code(c.get('cause'), in_table=True), fmt_ns(c.get("lost_ns")),
             fmt_pct(c.get("share")), md(sentence(c, diagnosis)), _text(c.get("fix")) if c.get("fix") else "-"]
            for i, c in enumerate(causes, start=1)]
    lines.extend(table(["#", "severity", "cause", "lost time", "share of span", "finding", "fix"], rows,
                       ["---:", "---", "---", "---:", "---:", "---", "---"]))
    lines.extend(["", "Lost time is the GPU time each cause would give back if removed (an upper bound where it "
                      "cannot be measured exactly); causes are ranked by it, or by the replay's predicted gain of "
                      "the fix where smaller; the structured evidence is in the JSON output."])
    return lines


def _charts(doc: dict[str, Any]) -> Lines:
    lines: Lines = []
    for chart in (lost_time_chart(doc), utilization_chart(doc)):
        if chart:
            lines.extend(["", *chart])
    return lines


def _devices(doc: dict[str, Any]) -> Lines:
    devices = doc.get("devices")
    if not isinstance(devices, list) or not devices:
        return []
    rows = [[_gpu_label(d), md(d.get("name") or "-"), fmt_pct(d.get("utilization")), fmt_ns(d.get("busy_ns")),
             fmt_ns(d.get("span_ns")), _num(d.get("kernel_count")), fmt_ns(d.get("kernel_ns")),
             f"{_num(d.get('memcpy_count'))} / {fmt_ns(d.get('memcpy_ns'))}",
             f"{_num(d.get('memset_count'))} / {fmt_ns(d.get('memset_ns'))}"] for d in devices]
    return ["", _heading("devices"), "", *table(
        ["GPU", "name", "utilization", "busy", "span", "kernels", "kernel time", "memcpy (n / time)",
         "memset (n / time)"], rows, ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"])]


def _kernels(doc: dict[str, Any]) -> Lines:
    kernels = doc.get("kernels")
    if not isinstance(kernels, dict) or not kernels.get("by_name"):
        return []
    names = FullNames()
    rows = [[str(i), names.cell(k["name"]), fmt_pct(k.get("time_fraction")), fmt_ns(k.get("total_ns")),
             _num(k.get("count")), fmt_ns(k.get("avg_ns")), fmt_ns(k.get("median_ns")), fmt_ns(k.get("min_ns")),
             fmt_ns(k.get("max_ns")), fmt_ns(k.get("stdev_ns"))]
            for i, k in enumerate(kernels["by_name"][:limits().max_rows], start=1)]
    lines = ["", _heading("kernels"), "",
             f"{plural(kernels.get('count', 0), 'launch', 'launches')} of {plural(kernels.get('distinct_names', len(rows)), 'distinct kernel')}, "
             f"{fmt_ns(kernels.get('total_ns'))} summed; Time% is the share of summed kernel time.", ""]
    lines.extend(_folded_table(["#", "kernel", "Time%", "total", "count", "avg", "median", "min", "max", "stdev"],
                               rows, ["---:", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"],
                               "kernels", total=len(kernels["by_name"])))
    return lines + names.block()


def _ops(doc: dict[str, Any]) -> Lines:
    ops = doc.get("ops")
    if not isinstance(ops, dict) or not ops.get("by_name"):
        return []
    names = FullNames()
    rows = [[str(i), names.cell(r["name"]), _num(r.get("count")), fmt_ns(r.get("gpu_ns")), fmt_ns(r.get("copy_ns")),
             fmt_ns(r.get("cpu_ns"))] for i, r in enumerate(ops["by_name"][:limits().max_rows], start=1)]
    lines = ["", _heading("ops"), "",
             f"Kernel and copy time by the outermost framework op that launched it: "
             f"{fmt_ns(ops.get('attributed_kernel_ns'))} of {fmt_ns(ops.get('kernel_ns'))} kernel time attributed "
             f"over {_num(ops.get('names'))} op names; {_num(ops.get('unattributed_count'))} GPU ops launched outside "
             "any op.", ""]
    for line in (compute_sentence(ops.get("compute"), md), roofline_sentence(ops.get("roofline"), md)):
        if line:
            lines.extend([line, ""])
    headers, align = ["#", "op", "count", "kernel time", "copy time", "host time"], ["---:", "---", "---:", "---:",
                                                                                      "---:", "---:"]
    if any(r.get("flops") is not None for r in ops["by_name"]):  # shapes recorded: a FLOPs column
        headers, align = [*headers, "FLOPs"], [*align, "---:"]
        rows = [[*row, op_flops_cell(r.get("flops"))] for row, r in zip(rows, ops["by_name"], strict=False)]
    lines.extend(_folded_table(headers, rows, align, "ops", total=len(ops["by_name"])))
    modules = [m for m in ops.get("by_module") or [] if isinstance(m, dict)]
    if modules:  # the trace records nn.Module rows
        lines.extend(["", "By innermost `nn.Module` at the launch (self time; outer modules first in the path):", ""])
        module_rows = [[str(i), names.cell(m["path"]), _num(m.get("kernels")), fmt_ns(m.get("gpu_ns")),
                        fmt_ns(m.get("copy_ns")), fmt_flops(m.get("flops"))]
                       for i, m in enumerate(modules[:limits().max_rows], start=1)]
        lines.extend(_folded_table(["#", "module", "kernels", "kernel time", "copy time", "FLOPs"], module_rows,
                                   ["---:", "---", "---:", "---:", "---:", "---:"], "modules", total=len(modules)))
    return lines + names.block()


def _memcpy(doc: dict[str, Any]) -> Lines:
    memcpy = doc.get("memcpy")
    if not isinstance(memcpy, dict):
        return []
    lines = ["", _heading("memcpy"), ""]
    by_kind = [k for k in memcpy.get("by_kind") or [] if isinstance(k, dict)]
    if not by_kind:
        return lines + ["No memory copies."]
    lines.append(f"{_count(memcpy.get('count'), 'copy', 'copies')}, {fmt_bytes(memcpy.get('bytes'))}, "
                 f"{fmt_ns(memcpy.get('duration_ns'))} summed; "
                 f"{fmt_ns(memcpy.get('device_mean_exposed_ns'))} of copy time not overlapped by compute"
                 + (" (mean per GPU)." if len(memcpy.get("per_device") or []) > 1 else "."))
    lines.append("")
    rows = [[md(k.get("kind")), _num(k.get("count")), fmt_bytes(k.get("bytes")), fmt_ns(k.get("duration_ns")),
             fmt_ns(k.get("device_mean_exposed_ns")),
             _rate_bytes(k.get("achieved_bytes_per_s", _ratio_or_none(k.get("bytes"), k.get("duration_ns")))),
             _rate_bytes(k.get("p50_bytes_per_s")), _num(k.get("pageable_count")),
             f"{_num(k.get('sync_count'))} / {_num(k.get('async_count'))}", _num(k.get("small_count"))]
            for k in by_kind]
    lines.extend(table(["direction", "count", "bytes", "time", "exposed (GPU mean)", "bandwidth", "median copy bandwidth",
                        "pageable", "sync / async", "small (< 64 KiB)"], rows,
                       ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    links = []
    for dev in memcpy.get("per_device") or []:
        for k in (dev.get("by_kind") or []) if isinstance(dev, dict) else []:
            if isinstance(k, dict) and k.get("expected_bytes_per_s"):
                links.append([md(dev.get("device")), md(k.get("kind")), _rate_bytes(k.get("achieved_bytes_per_s")),
                              _rate_bytes(k.get("large_achieved_bytes_per_s")),
                              _rate_bytes(k.get("expected_bytes_per_s")), fmt_pct(k.get("achieved_fraction")),
                              md(k.get("expected_link") or "-"), md(k.get("expected_source") or "-")])
    if links:
        lines.extend(["", "Achieved vs expected link bandwidth (large copies: ≥ 1 MiB):", ""])
        lines.extend(table(["GPU", "direction", "achieved", "achieved (large copies)", "expected", "fraction",
                            "link", "expected from"], links,
                           ["---", "---", "---:", "---:", "---:", "---:", "---", "---"]))
    host = memcpy.get("host_memory")
    if isinstance(host, dict):
        lines.extend(["", f"Host memory of copies: {_num(host.get('pageable_count'))} pageable, "
                          f"{_num(host.get('pinned_count'))} pinned, {_num(host.get('managed_count'))} managed, "
                          f"{_num(host.get('unknown_count'))} unknown (basis: {md(host.get('basis') or '-')})."])
    small = memcpy.get("small_copies")
    if isinstance(small, dict) and small.get("count"):
        lines.extend(["", f"Small copies (< {fmt_bytes(small.get('threshold_bytes'))}): {_num(small.get('count'))}, "
                          f"{fmt_ns(small.get('duration_ns'))}; {_count(small.get('burst_count'), 'burst')} holding "
                          f"{_count(small.get('burst_copy_count'), 'copy', 'copies')}."])
    checks = memcpy_checks(memcpy, (doc.get("source") or {}).get("framework"))
    if checks:
        lines.append("")
        lines.extend(f"- {md_line_start(text)}" + (f" Fix: {_text(fix)}" if fix else "") for text, fix in checks)
    return lines


def _ratio_or_none(num: Any, den: Any) -> float | None:
    return (num / (den / 1e9)) if num and den else None


def _rate_bytes(value: Any) -> str:
    return "-" if value is None else f"{fmt_bytes(value)}/s"


def _sync(doc: dict[str, Any]) -> Lines:
    sync = doc.get("sync")
    if not isinstance(sync, dict) or not isinstance(sync.get("blocking"), dict):
        return _section_generic("sync")(doc)
    blocking = sync["blocking"]
    lines = ["", _heading("sync"), ""]
    per_step = sync.get("per_step_mean") or {}
    lines.append(f"- Blocking host syncs: {_count(blocking.get('count'), 'call')}, {fmt_ns(blocking.get('total_ns'))}"
                 + (f"; per step {_count(per_step.get('count'), 'call')}, {fmt_ns(per_step.get('total_ns'))}"
                    if per_step else ""))
    item = sync.get("item_pattern") or {}
    if item:
        lines.append(f"- `.item()` / `.cpu()` pattern (small device-to-host copy, ≤ {fmt_bytes(item.get('max_bytes'))},"
                     f" with a blocking wait): {_count(item.get('count'), 'time')}, {fmt_ns(item.get('wait_ns'))} waited")
    if sync.get("stream_wait_event_calls") is not None:
        lines.append(f"- Stream-wait-event calls: {_num(sync.get('stream_wait_event_calls'))}")
    names = FullNames()
    by_name = [b for b in blocking.get("by_name") or [] if isinstance(b, dict)]
    if by_name:
        lines.append("")
        lines.extend(table(["blocking call", "count", "total"],
                           [[names.cell(b.get("name")), _num(b.get("count")), fmt_ns(b.get("total_ns"))]
                            for b in by_name], ["---", "---:", "---:"]))
    ops = [o for o in item.get("top_ops") or [] if isinstance(o, dict)]
    if ops:
        lines.extend(["", "Ops ending in a `.item()`-style sync:", ""])
        lines.extend(table(["op", "count"], [[names.cell(o.get("name")), _num(o.get("count"))] for o in ops],
                           ["---", "---:"]))
    waits = [w for w in sync.get("gpu_waits") or [] if isinstance(w, dict)]
    if waits:
        lines.extend(["", "GPU-side sync records:", ""])
        lines.extend(table(["kind", "count", "total"], [[md(w.get("sync_kind")), _num(w.get("count")),
                                                         fmt_ns(w.get("total_ns"))] for w in waits],
                           ["---", "---:", "---:"]))
    return lines + names.block()


def _occupancy(doc: dict[str, Any]) -> Lines:
    occ = doc.get("occupancy")
    if not isinstance(occ, dict) or "per_device" not in occ:
        return _section_generic("occupancy")(doc)
    lines = ["", _heading("occupancy"), ""]
    # The section's totals sum the GPUs: shown as device-means (the diagnosis' low_occupancy loss) with several.
    gpus = len(doc.get("devices") or []) or 1

    def mean(key: str) -> str:
        value = occ.get(key)
        return fmt_ns(value / gpus if isinstance(value, (int, float)) else None)

    lines.append(f"{_num(occ.get('computed_count'))} of {_count(occ.get('kernel_count'), 'kernel')} with a computed "
                 f"occupancy; low means below {fmt_pct(occ.get('low_threshold'))}. Lost time is GPU time with SMs "
                 f"left empty by grids smaller than the SM count or by block shapes that cap occupancy: "
                 f"{mean('lost_ns')}{' per GPU (mean)' if gpus > 1 else ''} ({mean('under_filled_lost_ns')} "
                 f"under-filled, {mean('block_shape_lost_ns')} block shape). Occupancy limited by registers or shared "
                 "memory is shown but not counted: tuned GEMM and convolution kernels run there on purpose.")
    devices = [d for d in occ.get("per_device") or [] if isinstance(d, dict)]
    if devices:
        lines.append("")
        rows = []
        for d in devices:
            limiter = d.get("limiter_ns") or {}
            top = max(limiter, key=lambda k: limiter[k]) if limiter and any(limiter.values()) else None
            rows.append([md(d.get("device")), md(d.get("name") or "-"), md(d.get("compute_capability") or "-"),
                         _num(d.get("sm_count")), fmt_pct(d.get("time_weighted_theoretical")),
                         fmt_pct(d.get("time_weighted_estimated_achieved")), fmt_pct(d.get("time_weighted_reported")),
                         fmt_ns(d.get("low_ns")), fmt_ns(d.get("register_or_shared_limited_ns")),
                         fmt_ns(d.get("under_filled_ns")), fmt_ns(d.get("block_shape_limited_ns")),
                         fmt_ns(d.get("lost_ns")), md(top or "-"), md(d.get("not_computed_reason") or "")])
        lines.extend(table(["GPU", "name", "cc", "SMs", "theoretical", "est. achieved", "reported", "low-occupancy time",
                            "register/shared-limited time", "under-filled time", "block-shape-limited time", "lost",
                            "main limiter", "not computed because"], rows,
                           ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:",
                            "---", "---"]))
    kernels = [k for k in occ.get("top_low_occupancy_kernels") or [] if isinstance(k, dict)]
    if kernels:
        names = FullNames()
        rows = [[names.cell(k.get("name")), md(k.get("device")), _num(k.get("count")), fmt_ns(k.get("total_ns")),
                 fmt_ns(k.get("lost_ns")), fmt_pct(k.get("sm_fill")), _ratio(k.get("grid_blocks")),
                 fmt_pct(k.get("occupancy")), fmt_pct(k.get("shape_occupancy")), md(k.get("limiter") or "-"),
                 _num(k.get("threads_per_block")), _num(k.get("registers_per_thread")),
                 fmt_bytes(k.get("shared_bytes_per_block"))]
                for k in kernels[:limits().max_rows]]
        lines.extend(["", "Kernels leaving the most SM time empty (each launch as if it ran alone):", ""])
        lines.extend(_folded_table(["kernel", "GPU", "count", "total", "lost", "SM fill", "grid blocks",
                                    "est. achieved", "shape allows", "limiter", "threads/block", "regs/thread",
                                    "shared/block"], rows,
                                   ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---", "---:",
                                    "---:", "---:"], "kernels", total=len(kernels)))
        lines.extend(names.block())
    missing = [n for n in occ.get("not_computed") or [] if isinstance(n, dict)]
    if missing:
        lines.append("")
        lines.extend(f"- Not computed for {_count(n.get('kernel_count'), 'kernel')} on GPU {md(n.get('device'))}: "
                     f"{md(n.get('reason'))}" for n in missing)
    return lines


def _ranges(doc: dict[str, Any]) -> Lines:
    ranges = doc.get("ranges")
    if not isinstance(ranges, dict) or not isinstance(ranges.get("ranges"), list):
        return _section_generic("ranges")(doc)
    lines = ["", _heading("ranges"), ""]
    rows_in = [r for r in ranges["ranges"] if isinstance(r, dict)]
    if not rows_in:
        return lines + ["No annotation ranges in this trace."]
    lines.append(f"{_count(ranges.get('count'), 'range instance')} of {_count(ranges.get('names'), 'name')}. GPU work belongs "
                 "to a range when its launch call lies inside it on the same thread; projected = first op start to "
                 "last op end.")
    lines.append("")
    names = FullNames()
    rows = [[names.cell(r.get("name")), _num(r.get("count")), fmt_ns(r.get("cpu_ns")), _num(r.get("gpu_ops")),
             fmt_ns(r.get("gpu_op_ns")), fmt_ns(r.get("projected_ns")), fmt_ns(r.get("gpu_idle_ns"))]
            for r in rows_in[:limits().max_rows]]
    lines.extend(_folded_table(["range", "count", "CPU time", "GPU ops", "GPU op time", "projected GPU span",
                                "GPU idle inside"], rows, ["---", "---:", "---:", "---:", "---:", "---:", "---:"],
                               "ranges", total=len(rows_in)))
    return lines + names.block()


def _gaps(doc: dict[str, Any]) -> Lines:
    gaps = doc.get("gaps")
    devices = gaps.get("devices") if isinstance(gaps, dict) else None
    if not isinstance(devices, list):
        return _section_generic("gaps")(doc)
    lines = ["", _heading("gaps"), ""]
    if not devices:
        return lines + ["No GPU activity, so no GPU gaps."]
    for d in devices:
        idle = d.get("idle_ns") or 0
        lines.append(f"**GPU {md(d.get('device'))}:** {_count(d.get('gap_count'), 'gap')}, {fmt_ns(idle)} idle of "
                     f"{fmt_ns(d.get('span_ns'))} span.")
        lines.append("")
        histogram = [h for h in d.get("histogram") or [] if isinstance(h, dict)]
        if histogram:
            rows = [[md(h.get("bucket")), _num(h.get("count")), fmt_ns(h.get("total_ns")),
                     fmt_pct((h.get("total_ns") or 0) / idle) if idle else "-",
                     _bar((h.get("total_ns") or 0) / idle if idle else 0.0)] for h in histogram]
            lines.extend(table(["gap length", "count", "idle time", "share of idle", ""], rows,
                               ["---", "---:", "---:", "---:", "---"]))
        largest = [g for g in d.get("largest") or [] if isinstance(g, dict)]
        if largest:
            lines.extend(details(f"GPU {d.get('device')}: {len(largest)} longest gaps", table(
                ["starts at", "duration"], [[fmt_ns(g.get("start_ns")), fmt_ns(g.get("duration_ns"))]
                                            for g in largest], ["---:", "---:"])))
        lines.append("")
    return lines


HOST_ORDER = ("startup", "sync", "input", "launch", "cpu", "other")


def _ordered(keys: Any) -> list[str]:
    keys = list(keys)
    return [k for k in HOST_ORDER if k in keys] + [k for k in keys if k not in HOST_ORDER]


def _steps(doc: dict[str, Any]) -> Lines:
    steps = doc.get("steps")
    if not isinstance(steps, dict) or "summary" not in steps:
        return _section_generic("steps")(doc)
    lines = ["", _heading("steps"), ""]
    summary = steps.get("summary")
    if not steps.get("count") or not isinstance(summary, dict):
        return lines + ["No step markers in this trace (ProfilerStep#N, TF steps or `tracelens/step#N`)."]
    count = steps["count"]
    lines.append(f"{plural(count, 'step')}: mean {fmt_ns(summary.get('mean_ns'))}, median {fmt_ns(summary.get('median_ns'))}, "
                 f"min {fmt_ns(summary.get('min_ns'))}, max {fmt_ns(summary.get('max_ns'))}. Host time of the "
                 "step threads by category (overlaps go to the first category listed):")
    lines.append("")
    host_ns = summary.get("host_ns") or {}
    share = summary.get("host_share") or {}
    rows = [[md(k), fmt_ns(host_ns[k]), fmt_ns(host_ns[k] / count), fmt_pct(share.get(k)), _bar(share.get(k) or 0.0)]
            for k in _ordered(host_ns)]
    lines.extend(table(["category", "total", "mean per step", "share of step time", ""], rows,
                       ["---", "---:", "---:", "---:", "---"]))
    gpu = [g for g in summary.get("gpu_busy") or [] if isinstance(g, dict)]
    if gpu:
        lines.append("")
        lines.extend(table(["GPU", "busy within steps", "busy / step time"],
                           [[md(g.get("device")), fmt_ns(g.get("busy_ns")), fmt_pct(g.get("utilization"))]
                            for g in gpu], ["---", "---:", "---:"]))
    listed = [r for r in steps.get("steps") or [] if isinstance(r, dict)]
    if listed:
        keys = _ordered((listed[0].get("host") or {}).keys())
        header = ["step", "start", "duration", *keys, "GPU busy"]

        def step_rows(chosen: list[dict[str, Any]]) -> list[list[str]]:
            return [[md(r.get("step")), fmt_ns(r.get("start_ns")), fmt_ns(r.get("duration_ns")),
                     *[fmt_ns((r.get("host") or {}).get(k)) for k in keys],
                     fmt_ns(sum(g.get("busy_ns") or 0 for g in r.get("gpu_busy") or []))] for r in chosen]

        align = ["---:"] * len(header)
        more = f" (first {len(listed):,} of {count:,})" if len(listed) < count else ""
        if len(listed) <= STEP_TABLE_ROWS:
            lines.extend(details(f"Per step{more}", table(header, step_rows(listed), align)))
        else:
            lines.extend(_step_digest(listed, more))
            slowest = step_digest(listed)["slowest"]
            lines.extend(details(f"The {len(slowest)} slowest steps", table(header, step_rows(slowest), align)))
    return lines


STEP_TABLE_ROWS = 50  # more steps than this are summarized (percentiles, outliers, slowest), not listed
SLOWEST_STEPS = 10
OUTLIERS_NAMED = 20


def step_digest(listed: list[dict[str, Any]]) -> dict[str, Any]:
    """Duration percentiles (linear interpolation), Tukey outliers (longer than Q3 + 1.5 × IQR) and the
    slowest steps of the listed steps (docs/json.md, "Markdown and terminal output")."""
    import numpy as np

    durations = np.array([r.get("duration_ns") or 0 for r in listed], dtype=np.float64)
    q1, p50, q3, p90, p99 = np.percentile(durations, [25, 50, 75, 90, 99])
    fence = q3 + 1.5 * (q3 - q1)
    by_length = sorted(range(len(listed)), key=lambda i: (-durations[i], i))
    return {"p50_ns": float(p50), "p90_ns": float(p90), "p99_ns": float(p99), "max_ns": float(durations.max()),
            "fence_ns": float(fence), "outliers": [listed[i] for i in range(len(listed)) if durations[i] > fence],
            "slowest": [listed[i] for i in by_length[:SLOWEST_STEPS]]}


def _step_digest(listed: list[dict[str, Any]], more: str) -> Lines:
    digest = step_digest(listed)
    outliers = digest["outliers"]
    named = ", ".join(md(r.get("step")) for r in outliers[:OUTLIERS_NAMED])
    if len(outliers) > OUTLIERS_NAMED:
        named += f" and {len(outliers) - OUTLIERS_NAMED:,} more"
    return ["", f"Per step{more}: {len(listed):,} steps, too many to list here (the JSON output has each). "
                f"Duration p50 {fmt_ns(digest['p50_ns'])}, p90 {fmt_ns(digest['p90_ns'])}, "
                f"p99 {fmt_ns(digest['p99_ns'])}, max {fmt_ns(digest['max_ns'])}; "
                + (f"{plural(len(outliers), 'outlier')} longer than {fmt_ns(digest['fence_ns'])} "
                   f"(Q3 + 1.5 × IQR): step{'s' if len(outliers) != 1 else ''} {named}."
                   if outliers else f"no outliers (none longer than {fmt_ns(digest['fence_ns'])}, Q3 + 1.5 × IQR).")]


def _attribution(doc: dict[str, Any]) -> Lines:
    attribution = doc.get("attribution")
    devices = attribution.get("devices") if isinstance(attribution, dict) else None
    if not isinstance(devices, list):
        return _section_generic("attribution")(doc)
    lines = ["", _heading("attribution"), ""]
    if not devices:
        return lines + ["No GPU activity, so no idle time to attribute."]
    causes = list(attribution.get("priority") or (devices[0].get("by_cause") or {}).keys())
    lines.append("What the host threads feeding each GPU were doing during its idle gaps (overlapping activity "
                 f"goes to the first of: {', '.join(md(c) for c in causes)}).")
    lines.append("")
    rows = []
    for d in devices:
        idle = d.get("idle_ns") or 0
        by_cause = d.get("by_cause") or {}
        cells = [f"{fmt_ns(by_cause.get(c))} ({fmt_pct(by_cause.get(c, 0) / idle) if idle else '-'})" for c in causes]
        late = d.get("late_launch") or {}
        rows.append([md(d.get("device")), fmt_ns(idle), *cells,
                     f"{_num(late.get('count'))} / {fmt_ns(late.get('idle_ns'))}"])
    lines.extend(table(["GPU", "idle", *[md(c) for c in causes], "gaps ended by a late launch (n / idle)"], rows,
                       ["---"] + ["---:"] * (len(causes) + 2)))
    return lines


def _launch(doc: dict[str, Any]) -> Lines:
    launch = doc.get("launch")
    if not isinstance(launch, dict) or not isinstance(launch.get("latency"), dict):
        return _section_generic("launch")(doc)
    lat = launch["latency"]
    lines = ["", _heading("launch"), ""]
    lines.append(f"{_num(launch.get('matched_ops'))} of {_num(launch.get('gpu_ops'))} GPU ops matched to their "
                 "launch call. Launch latency = GPU start − launch call end (clipped at 0):")
    lines.append("")
    lines.extend(table(["launches", "mean", "p50", "p90", "p99", "max", "negative (clock skew)"],
                       [[_num(lat.get("count")), fmt_ns(lat.get("mean_ns")), fmt_ns(lat.get("p50_ns")),
                         fmt_ns(lat.get("p90_ns")), fmt_ns(lat.get("p99_ns")), fmt_ns(lat.get("max_ns")),
                         _num(lat.get("negative_count"))]], ["---:"] * 7))
    small = launch.get("small_kernels") or {}
    short = launch.get("short_kernels") or {}
    rates = launch.get("rates") or {}
    graphs = launch.get("cuda_graphs") or {}
    lines.append("")
    if small:
        lines.append(f"- Kernels under {fmt_ns(small.get('threshold_ns'))}: {_num(small.get('count'))}, "
                     f"{fmt_ns(small.get('kernel_ns'))} = {fmt_pct(small.get('share'))} of kernel time")
    if short:
        lines.append(f"- Kernels shorter than their launch call: {_num(short.get('count'))} of "
                     f"{_num(short.get('of_matched_kernels'))} matched")
    if rates:
        issue, execution = rates.get("issue_per_s"), rates.get("execution_per_s")
        lines.append(f"- Launch rate {_rate(issue)} vs execution rate {_rate(execution)} (ratio "
                     f"{_ratio(rates.get('issue_to_execution'))})")
    if graphs:
        lines.append(f"- CUDA/HIP graphs: {'in use' if graphs.get('in_use') else 'not used'} "
                     f"({_num(graphs.get('graph_launch_calls'))} graph launches, {_num(graphs.get('graph_ops'))} "
                     "ops from graphs)")
    queues = [q for q in launch.get("queue_depth") or [] if isinstance(q, dict)]
    if queues:
        lines.extend(details(f"Queue depth on {plural(len(queues), 'stream')}", table(
            ["GPU", "stream", "max", "mean", "ops"],
            [[md(q.get("device")), md(q.get("stream")), _num(q.get("max")), f"{q.get('mean') or 0:.2f}",
              _num(q.get("ops"))] for q in queues], ["---", "---", "---:", "---:", "---:"])))
    return lines


def _rate(value: Any) -> str:
    return "-" if value is None else f"{value:,.0f}/s"


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def _bar(fraction: float, width: int = 20) -> str:
    """A text bar for a fraction 0-1 (drawn with block characters, safe in any cell)."""
    filled = int(round(max(0.0, min(1.0, fraction)) * width))
    return "█" * filled if filled else ""


def _bandwidth(nbytes: Any, ns: Any) -> str:
    if not nbytes or not ns:
        return "-"
    return f"{fmt_bytes(nbytes / (ns / 1e9))}/s"


def _section_generic(key: str, title: str | None = None) -> Callable[[dict[str, Any]], Lines]:
    def render(doc: dict[str, Any]) -> Lines:
        if key not in doc or doc[key] in (None, {}, []):
            return []
        body = generic(doc[key])
        heading = f"## {title}" if title is not None else _heading(key)
        return ["", heading, "", *body] if body else []
    return render


def _host(doc: dict[str, Any]) -> Lines:
    host = doc.get("host")
    if not isinstance(host, dict) or not host.get("top"):
        return []
    names = FullNames()
    rows = [[md(r.get("kind")), names.cell(r.get("name")), _num(r.get("count")), fmt_ns(r.get("total_ns"))]
            for r in host["top"]]
    body = table(["kind", "name", "count", "total"], rows, ["---", "---", "---:", "---:"]) + names.block()
    return details(f"Host side: span {fmt_ns(host.get('span_ns'))}, {plural(host.get('threads') or 0, 'thread')}, "
                   "top names by time", body)


def _plot_link(plot_name: str | None) -> Lines:
    if not plot_name:
        return []
    return ["", link("GPU utilization over time", plot_name, image=True)]


def _heading(key: str) -> str:
    return f"## {BY_KEY[key].title}"


# Drawing functions by section key; the order, titles and GPU-only flags come from the section registry
# (tracelens.analyses.REGISTRY). A section without one here gets the generic renderer.
def _communication(doc: dict[str, Any]) -> Lines:
    comm = doc.get("communication")
    devices = [d for d in (comm or {}).get("devices") or [] if isinstance(d, dict)]
    if not devices:
        return []
    lines = ["", "## Communication and the GPU time breakdown", "",
             f"{_num(comm.get('collective_count'))} collective kernels or ops (NCCL/RCCL, XLA). Each GPU's span "
             f"split into parts that add up to it: {md(bar_legend())}.", ""]
    rows = []
    for d in devices:
        b = d.get("breakdown") or {}
        rows.append([md(d.get("device")), f"`{stacked_bar(b)}`", fmt_ns(b.get("span_ns")),
                     fmt_ns(b.get("computation_only_ns")), fmt_ns(b.get("communication_overlapped_ns")),
                     fmt_ns(b.get("communication_exposed_ns")), fmt_ns(b.get("memcpy_exposed_ns")),
                     fmt_ns(b.get("idle_ns")), _num(d.get("collective_count")), fmt_pct(d.get("overlap_share"))])
    lines.extend(table(["GPU", "breakdown", "span", "computation only", "comm. overlapped", "comm. exposed",
                        "copies not overlapped", "idle", "collectives", "overlapped share"], rows,
                       ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    kinds = [[md(d.get("device")), md(t.get("type")), _num(t.get("count")), fmt_ns(t.get("time_ns")),
              fmt_ns(t.get("exposed_ns")), fmt_bytes(t.get("bytes")) if t.get("bytes") is not None else "-",
              _rate_bytes(t.get("algbw_bytes_per_s")), _rate_bytes(t.get("busbw_bytes_per_s"))]
             for d in devices for t in d.get("by_type") or []]
    if kinds:
        lines.extend(["", "Collectives by type (bandwidths as nccl-tests defines them, over the collectives with a "
                      "recorded message size):", ""])
        lines.extend(table(["GPU", "type", "count", "time", "exposed", "bytes", "algbw", "busbw"], kinds,
                           ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"]))
    return lines


def _whatif(doc: dict[str, Any]) -> Lines:
    remedies = remedy_lines(doc)
    others = [line for line in (critical_path_line(doc), replay_line(doc)) if line]
    if not remedies and not others:
        return []
    lines = ["", _heading("whatif"), "", "The trace's dependency graph replayed with each cause's remedy applied "
             "(assumptions in the JSON output, `whatif.remedies[].assumptions`):", ""]
    lines.extend(f"- {md(line)}" for line in remedies or ["no remedy gains time"])
    lines.extend(["", *(md(line) + "  " for line in others)])
    return lines


DRAW: dict[str, Callable[[dict[str, Any]], Lines]] = {
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
NOT_SECTIONS = {"schema_version", "source", "summary", *SECTION_KEYS, *RUN_KEYS}


def render_markdown(doc: dict[str, Any], plot_name: str | None = None, charts: bool = True,
                    ranks_plot_name: str | None = None) -> str:
    """The report, kept under budget.MAX_CHARS (GitHub's comment limit) by budget.fit."""
    return fit(lambda: _blocks(doc, plot_name, charts, ranks_plot_name), keep=2)


def _blocks(doc: dict[str, Any], plot_name: str | None, charts: bool, ranks_plot_name: str | None) -> list[Block]:
    """The report as blocks: the headline, the findings, then one per section (budget.fit may drop those)."""
    blocks: list[Block] = [("Headline", _headline(doc)), ("Findings", _findings(doc))]
    if charts:
        blocks.append(("Charts", _charts(doc)))
    blocks.append(("Plot", _plot_link(plot_name)))
    blocks.append(("Ranks", ranks_section(doc, ranks_plot_name)))
    no_gpu = doc.get("devices") == []
    shown = report_sections()
    for section in shown:
        if not (no_gpu and section.gpu_only):
            blocks.append((section.title, DRAW.get(section.key, _section_generic(section.key))(doc)))
    if no_gpu:
        skipped = [s.key for s in shown if s.gpu_only and s.key in doc]
        if skipped:
            blocks.append(("Note", ["", f"GPU sections omitted ({', '.join(skipped)}): no GPU activity in this trace."]))
    for key in doc:
        if key not in NOT_SECTIONS:
            blocks.append((str(key), _section_generic(key, key)(doc)))
    blocks.append(("Footer", ["", "---", f"Generated by tracelens (analysis schema {md(doc.get('schema_version', '?'))})."]))
    return [b for b in blocks if b[1]]


def plot_path_for(output: str | Path) -> Path:
    """Where the utilization plot goes for report ``output``: ``review.md`` -> ``review.utilization.png``."""
    return _beside(output, "utilization")


def ranks_plot_path_for(output: str | Path) -> Path:
    """Where the per-rank plot goes for report ``output``: ``run.md`` -> ``run.ranks.png``."""
    return _beside(output, "ranks")


def _beside(output: str | Path, what: str) -> Path:
    out = Path(output)
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    return out.with_name(f"{stem}.{what}.png")


def figures(doc: dict[str, Any], output: str | Path) -> list[Figure]:
    """The PNG figures of a markdown report written to ``output``: the utilization plot (when the document
    has a utilization timeline) and, for a run document, the per-rank plot. Rendered, not written: the
    caller writes each ``data`` to its ``path`` and passes the list to :func:`render` to link them."""
    from .plots import ranks_png, utilization_png

    out: list[Figure] = []
    for role, path, draw in (("utilization", plot_path_for(output), utilization_png),
                             ("ranks", ranks_plot_path_for(output), ranks_png)):
        data = draw(doc)
        if data is not None:
            out.append(Figure(role, path, data))
    return out


def render(doc: dict[str, Any], *, plots: bool = True, figures: Sequence[Figure] = (), **_: Any) -> str:
    """The markdown report (text only: it writes no file). ``plots``: inline mermaid charts (GitHub draws
    them, nothing to upload) and links to ``figures`` (PNG files the caller wrote beside the report)."""
    names = {f.role: f.path.name for f in figures} if plots else {}
    return render_markdown(doc, names.get("utilization"), charts=plots, ranks_plot_name=names.get("ranks"))
